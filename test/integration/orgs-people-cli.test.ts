import t from 'tap'
import { allRefused, oneLineFailure, pombo, type Run } from '../helpers/cli'
import { startService, type TestService } from '../helpers/service'

// About twenty CLI processes, each a few seconds on a busy machine.
t.setTimeout(600_000)

/** pombo with `input` on standard input. */
const pomboStdin = (s: TestService, args: string[], input: string): Promise<Run> => pombo(s, args, {}, input)

t.test('org create, app create --org: apps of one organisation share its plan', async (t) => {
  const s = await startService(t)
  const r = await pombo(s, ['org', 'create', '--nome', 'Loja Ltda', '--plan', 'pro'])
  t.equal(r.code, 0, r.stderr)
  const org = JSON.parse(r.stdout)
  t.same(Object.keys(org).sort(), ['id', 'nome', 'plano'])
  t.equal(org.nome, 'Loja Ltda')
  t.equal(org.plano, 'pro')
  const a = JSON.parse((await pombo(s, ['app', 'create', '--nome', 'A', '--org', org.id])).stdout)
  const b = JSON.parse((await pombo(s, ['app', 'create', '--nome', 'B', '--org', org.id])).stdout)
  t.same(
    Object.keys(a).sort(),
    ['api_key', 'criado_em', 'id', 'kid', 'nome', 'rate_por_min', 'receipt_key'],
    'same answer as the route',
  )
  const rows = await s.sql('SELECT a.id, a.org_id, o.plan FROM apps a JOIN orgs o ON o.id = a.org_id ORDER BY a.nome')
  t.same(
    rows.map((x) => [x.id, x.org_id, x.plan]),
    [
      [a.id, org.id, 'pro'],
      [b.id, org.id, 'pro'],
    ],
  )
  // `app plan` changes the organisation's plan: both apps follow.
  t.equal((await pombo(s, ['app', 'plan', a.id, 'free'])).code, 0)
  t.same(
    (await s.sql('SELECT DISTINCT o.plan FROM apps a JOIN orgs o ON o.id = a.org_id')).map((x) => x.plan),
    ['free'],
  )
  // Without --org: an organisation of its own, named after the app.
  const c = JSON.parse((await pombo(s, ['app', 'create', '--nome', 'Sozinho'])).stdout)
  const [own] = await s.sql('SELECT o.nome, o.id <> $2 AS other FROM apps a JOIN orgs o ON o.id = a.org_id WHERE a.id = $1', [
    c.id,
    org.id,
  ])
  t.same(own, { nome: 'Sozinho', other: true })
})

t.test('the MAU allowance is measured per organisation: two apps add up', async (t) => {
  const s = await startService(t, { limits: { freeMau: 3 } })
  const org = JSON.parse((await pombo(s, ['org', 'create', '--nome', 'Duas'])).stdout)
  const apps = [] as Array<{ id: string; api_key: string }>
  for (const nome of ['A', 'B'])
    apps.push(JSON.parse((await pombo(s, ['app', 'create', '--nome', nome, '--org', org.id])).stdout))
  // Two devices each: 4 active devices in one organisation, above the allowance of 3; each app alone is below it.
  for (const app of apps) {
    for (let i = 0; i < 2; i++) {
      const r = await s.call('POST', '/api/v1/players', {
        body: { app_id: app.id, device_type: 1, identifier: `tok-${app.id}-${i}-${'x'.repeat(20)}` },
      })
      t.equal(r.status, 200, r.text)
    }
  }
  // Only devices shown to be real count (mau-proof.test.ts): marked as a provider's first acceptance would mark them.
  await s.sql('UPDATE devices SET push_accepted_at = last_active')
  await s.svc.deps.sends.mau.measureNow()
  const [m] = await s.sql('SELECT mau FROM org_mau WHERE org_id = $1', [org.id])
  t.equal(m?.mau, 4, 'one measurement for the organisation')
  const r = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: apps[0]?.id, included_segments: ['Total Subscriptions'], contents: { en: 'oi' } },
    headers: { authorization: `Bearer ${apps[0]?.api_key}` },
  })
  t.equal(r.status, 422, 'the shared allowance refuses the send')
})

t.test('user create and user invite', async (t) => {
  const s = await startService(t)
  const org = JSON.parse((await pombo(s, ['org', 'create', '--nome', 'Org'])).stdout)
  const ok = await pomboStdin(
    s,
    ['user', 'create', '--email', 'Ana@Example.com', '--org', org.id, '--senha-stdin'],
    'senha-bem-longa-1\n',
  )
  t.equal(ok.code, 0, ok.stderr)
  const u = JSON.parse(ok.stdout)
  t.same(Object.keys(u).sort(), ['email', 'id'])
  t.equal(u.email, 'ana@example.com')
  const [row] = await s.sql('SELECT password_hash, org_id, operator FROM dashboard_users WHERE id = $1', [u.id])
  t.match(row?.password_hash, /^scrypt\$/, 'only a scrypt hash is stored')
  t.notMatch(row?.password_hash, /senha-bem-longa/)
  t.equal(row?.org_id, org.id)
  const op = await pomboStdin(
    s,
    ['user', 'create', '--email', 'op@example.com', '--operador', '--senha-stdin'],
    'operadora-123456',
  )
  t.equal(op.code, 0, op.stderr)
  t.same((await s.sql('SELECT operator, org_id FROM dashboard_users WHERE email = $1', ['op@example.com']))[0], {
    operator: true,
    org_id: null,
  })

  oneLineFailure(
    t,
    await pomboStdin(s, ['user', 'create', '--email', 'b@example.com', '--org', org.id, '--senha-stdin'], 'curta-11chr'),
    /12/,
  )
  oneLineFailure(
    t,
    await pomboStdin(s, ['user', 'create', '--email', 'ana@example.com', '--org', org.id, '--senha-stdin'], 'outra-senha-longa'),
    /E-mail já cadastrado/,
  )
  oneLineFailure(
    t,
    await pomboStdin(s, ['user', 'create', '--email', 'x', '--org', org.id, '--senha-stdin'], 'outra-senha-longa'),
    /E-mail inválido/,
  )
  oneLineFailure(
    t,
    await pomboStdin(s, ['user', 'create', '--email', 'c@example.com', '--senha-stdin'], 'outra-senha-longa'),
    /--org/,
  )
  oneLineFailure(
    t,
    await pomboStdin(
      s,
      ['user', 'create', '--email', 'c@example.com', '--org', '00000000-0000-4000-8000-000000000000', '--senha-stdin'],
      'outra-senha-longa',
    ),
    /Organização não encontrada/,
  )
  t.equal((await s.sql('SELECT count(*)::int AS n FROM dashboard_users'))[0]?.n, 2, 'nothing written by the refusals')

  const inv = await pombo(s, ['user', 'invite', '--email', 'novo@example.com', '--org', org.id], {
    PM_DASHBOARD_URL: 'https://painel.example.com/',
  })
  t.equal(inv.code, 0, inv.stderr)
  t.match(inv.stdout.trim(), /^https:\/\/painel\.example\.com\/convite\/[A-Za-z0-9_-]{43}$/)
  const [i] = await s.sql(
    "SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM dashboard_invites WHERE email = 'novo@example.com'",
  )
  t.equal(i?.ttl, 72 * 3600, 'valid 72 h')
  const short = await pombo(s, ['user', 'invite', '--email', 'breve@example.com', '--org', org.id], {
    PM_DASHBOARD_INVITE_H: '2',
  })
  t.equal(short.code, 0, short.stderr)
  const [j] = await s.sql(
    "SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM dashboard_invites WHERE email = 'breve@example.com'",
  )
  t.equal(j?.ttl, 2 * 3600, 'PM_DASHBOARD_INVITE_H moves it')
  await allRefused(t, [
    [pombo(s, ['user', 'invite', '--email', 'ana@example.com', '--org', org.id]), /E-mail já cadastrado/],
    [pombo(s, ['org', 'create']), /--nome/],
    [pombo(s, ['org', 'create', '--nome', 'x', '--plan', 'gold']), /--plan/],
    [pombo(s, ['app', 'create', '--nome', 'x', '--org', 'nope']), /--org/],
  ])
})
