// The people of the dashboard, through the real routes and commands: scrypt's cost and the rehash of older hashes
// on sign-in, removing a person and ending sessions (on every instance), invitations listed and cancelled, the idle
// timeout, and sign-in limits that slow a guesser without letting anyone lock a person out.
import { scryptSync } from 'node:crypto'
import t from 'tap'
import { allRefused, oneLineFailure, pombo } from '../helpers/cli'
import { DashClient, makeApp, makeOrg, makePerson, peopleOf } from '../helpers/dashboard'
import { FakeClock, startService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

// A few CLI processes, each a few seconds on a busy machine; and scrypt at N=2^17 for each sign-in.
t.setTimeout(600_000)

/** A hash as the previous release stored it: scrypt N=2^14, r=8, p=1. */
function legacyHash(password: string): string {
  const salt = Buffer.from('fedcba9876543210')
  const key = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 })
  return `scrypt$16384$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`
}

t.test('scrypt at N=2^17; a hash of N=2^14 still signs in and is replaced on that sign-in', async (t) => {
  // The default cost (the tests' services otherwise hash at PM_DASHBOARD_SCRYPT_N=16384).
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_DASHBOARD_SCRYPT_N: undefined } })
  const org = await makeOrg(s, 'Org')
  const id = await makePerson(s, 'ana@example.com', SENHA, org)
  const [fresh] = await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id])
  t.match(fresh?.password_hash, /^scrypt\$131072\$8\$1\$/, 'new hashes: N=2^17')

  const old = legacyHash(SENHA)
  await s.sql('UPDATE dashboard_users SET password_hash = $2 WHERE id = $1', [id, old])
  const wrong = await new DashClient(s.dashboardUrl).signIn('ana@example.com', 'outra-senha-longa')
  t.equal(wrong.status, 401)
  t.equal(
    (await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id]))[0]?.password_hash,
    old,
    'a failure changes nothing',
  )
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303, 'the old hash verifies')
  const [after] = await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id])
  t.match(after?.password_hash, /^scrypt\$131072\$8\$1\$/, 'upgraded on the successful sign-in')
  t.equal((await new DashClient(s.dashboardUrl).signIn('ana@example.com', SENHA)).status, 303, 'and the new one verifies')
})

t.test('PM_DASHBOARD_SCRYPT_N sets the cost of new hashes; a hash of another cost is replaced at sign-in', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_DASHBOARD_SCRYPT_N: '32768' } })
  t.equal(s.cfg.dashboard.scryptN, 32768)
  const org = await makeOrg(s, 'Org')
  // `pombo user create` hashes at the deployment's cost too.
  const made = await pombo(s, ['user', 'create', '--email', 'bia@example.com', '--org', org, '--senha-stdin'], {}, SENHA)
  t.equal(made.code, 0, made.stderr)
  const [bia] = await s.sql("SELECT password_hash FROM dashboard_users WHERE email = 'bia@example.com'")
  t.match(bia?.password_hash, /^scrypt\$32768\$8\$1\$/, 'pombo user create: N=2^15')
  const old = legacyHash(SENHA)
  await s.sql("UPDATE dashboard_users SET password_hash = $1 WHERE email = 'bia@example.com'", [old])
  t.equal((await new DashClient(s.dashboardUrl).signIn('bia@example.com', SENHA)).status, 303, 'the N=2^14 hash verifies')
  const [after] = await s.sql("SELECT password_hash FROM dashboard_users WHERE email = 'bia@example.com'")
  t.match(after?.password_hash, /^scrypt\$32768\$8\$1\$/, 'and is replaced with N=2^15')
  t.equal((await new DashClient(s.dashboardUrl).signIn('bia@example.com', SENHA)).status, 303, 'which verifies')
  const bad = ['100000', '8192', '2097152', 'x', '-16384']
  const refused = await Promise.all(bad.map((n) => pombo(s, ['user', 'invites'], { PM_DASHBOARD_SCRYPT_N: n })))
  for (const [i, r] of refused.entries()) {
    t.equal(r.code, 2, `PM_DASHBOARD_SCRYPT_N=${bad[i]}: refused`)
    t.match(r.stderr, /PM_DASHBOARD_SCRYPT_N: expected a power of two from 16384 to 1048576/)
  }
})

t.test('a session ends after PM_DASHBOARD_IDLE_MIN without use; use keeps it; background polling does not', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { roles: ['api', 'dashboard'], clock, env: { PM_DASHBOARD_IDLE_MIN: '30' } })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const app = await makeApp(s, 'App', org)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  clock.advance(29 * 60_000)
  t.equal((await c.get('/apps')).status, 200, '29 minutes idle: still open')
  clock.advance(29 * 60_000)
  t.equal((await c.get('/apps')).status, 200, 'each use starts the idle time again (58 minutes since sign-in)')
  clock.advance(31 * 60_000)
  const idle = await c.get('/apps')
  t.equal(idle.status, 303, '31 minutes without use: ended')
  t.equal(idle.headers.get('location'), '/entrar')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM dashboard_sessions'))[0]?.n, 0, 'and its row is gone')

  // What a page's script polls (the live counters) reads the session without counting as use.
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  clock.advance(20 * 60_000)
  const poll = await c.get(`/apps/${app.id}/envios.json?ids=${app.id}`)
  t.equal(poll.status, 200, 'the poll is answered')
  t.same(JSON.parse(poll.text), { envios: {} })
  clock.advance(15 * 60_000)
  t.equal((await c.get('/apps')).status, 303, '35 minutes since the last use, polled meanwhile: ended')
})

t.test('the idle timeout defaults to 30 minutes', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { roles: ['api', 'dashboard'], clock })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  clock.advance(31 * 60_000)
  t.equal((await c.get('/apps')).status, 303)
})

t.test('pombo user remove: the person and every session of theirs end at once, on every instance', async (t) => {
  const a = await startService(t, { roles: ['api', 'dashboard'] })
  const b = await startService(t, { roles: ['dashboard'], shareWith: a })
  const org = await makeOrg(a, 'Org')
  // An invitation sent before her account was made directly: it must not bring her back.
  const early = await peopleOf(a).invite('ana@example.com', org)
  const ana = await makePerson(a, 'ana@example.com', SENHA, org)
  await makePerson(a, 'bia@example.com', SENHA, org)
  const onA = new DashClient(a.dashboardUrl)
  const onB = new DashClient(b.dashboardUrl)
  t.equal((await onA.signIn('ana@example.com', SENHA)).status, 303)
  t.equal((await onB.signIn('Ana@Example.com', SENHA)).status, 303)
  const bia = new DashClient(b.dashboardUrl)
  t.equal((await bia.signIn('bia@example.com', SENHA)).status, 303)
  // Each instance reads the other's session: they share the database.
  const copy = new DashClient(b.dashboardUrl)
  copy.jar.set('pm_sessao', onA.jar.get('pm_sessao') as string)
  t.equal((await copy.get('/apps')).status, 200)

  const r = await pombo(a, ['user', 'remove', '--email', 'ANA@example.com'])
  t.equal(r.code, 0, r.stderr)
  t.same(JSON.parse(r.stdout), { id: ana, email: 'ana@example.com', sessoes_encerradas: 2 })
  for (const [name, c] of [
    ['instance A', onA],
    ['instance B', onB],
    ['the cookie of A on B', copy],
  ] as const) {
    const out = await c.get('/apps')
    t.equal(out.status, 303, `${name}: signed out`)
    t.equal(out.headers.get('location'), '/entrar')
  }
  t.equal((await new DashClient(a.dashboardUrl).signIn('ana@example.com', SENHA)).status, 401, 'cannot sign in again')
  t.equal((await new DashClient(a.dashboardUrl).get(`/convite/${early.token}`)).status, 404, 'nor come back by an old invitation')
  t.equal((await bia.get('/apps')).status, 200, "someone else's session is untouched")
  t.same(await a.sql('SELECT email FROM dashboard_users ORDER BY email'), [{ email: 'bia@example.com' }])

  await allRefused(t, [
    [pombo(a, ['user', 'remove', '--email', 'ana@example.com']), /ana@example\.com/],
    [pombo(a, ['user', 'remove']), /--email/],
    [pombo(a, ['user', 'remove', '--email', 'x']), /E-mail inválido/],
    [pombo(a, ['user', 'remove', '--email', 'bia@example.com', '--org', org]), /--org/],
  ])
  t.equal((await a.sql('SELECT count(*)::int AS n FROM dashboard_users'))[0]?.n, 1, 'the refusals removed nobody')
})

t.test('pombo user signout: every session of the person ends, and the person stays', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  const ana = await makePerson(s, 'ana@example.com', SENHA, org)
  const one = new DashClient(s.dashboardUrl)
  const two = new DashClient(s.dashboardUrl)
  t.equal((await one.signIn('ana@example.com', SENHA)).status, 303)
  t.equal((await two.signIn('ana@example.com', SENHA)).status, 303)
  const r = await pombo(s, ['user', 'signout', '--email', 'ana@example.com'])
  t.equal(r.code, 0, r.stderr)
  t.same(JSON.parse(r.stdout), { id: ana, email: 'ana@example.com', sessoes_encerradas: 2 })
  t.equal((await one.get('/apps')).status, 303)
  t.equal((await two.get('/apps')).status, 303)
  t.equal((await one.signIn('ana@example.com', SENHA)).status, 303, 'the person signs in again')
  t.equal((await one.get('/apps')).status, 200)
  oneLineFailure(t, await pombo(s, ['user', 'signout', '--email', 'ninguem@example.com']), /ninguem@example\.com/)
})

t.test('pombo user invites lists pending invitations; pombo user invite cancel ends their links', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  const other = await makeOrg(s, 'Outra')
  const people = peopleOf(s)
  const one = await people.invite('um@example.com', org)
  const two = await people.invite('dois@example.com', org)
  await people.invite('tres@example.com', other)
  await people.invite('um@example.com', other)
  const used = await people.invite('usado@example.com', org)
  t.ok(await people.acceptInvite(used.token, SENHA))

  const all = await pombo(s, ['user', 'invites'])
  t.equal(all.code, 0, all.stderr)
  const rows = all.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  t.same(
    rows.map((x) => x.email),
    ['um@example.com', 'tres@example.com', 'dois@example.com', 'um@example.com'],
    'newest first; the used one is not listed',
  )
  t.same(Object.keys(rows[0]).sort(), ['criado_em', 'email', 'expira_em', 'id', 'org_id'])
  const mine = await pombo(s, ['user', 'invites', '--org', org])
  const listed = mine.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  t.same(
    listed.map((x) => [x.email, x.org_id]),
    [
      ['dois@example.com', org],
      ['um@example.com', org],
    ],
  )
  t.equal(Date.parse(listed[0].expira_em) - Date.parse(listed[0].criado_em), 72 * 3_600_000)

  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.get(`/convite/${two.token}`)).status, 200)
  const byId = await pombo(s, ['user', 'invite', 'cancel', '--id', listed[0].id])
  t.equal(byId.code, 0, byId.stderr)
  t.same(JSON.parse(byId.stdout), { cancelados: [{ id: listed[0].id, email: 'dois@example.com' }] })
  t.equal((await c.get(`/convite/${two.token}`)).status, 404, 'the link stops working')
  const byEmail = await pombo(s, ['user', 'invite', 'cancel', '--email', 'um@example.com', '--org', org])
  t.equal(byEmail.code, 0, byEmail.stderr)
  t.equal(JSON.parse(byEmail.stdout).cancelados.length, 1, 'only the one of that organisation')
  t.equal((await c.get(`/convite/${one.token}`)).status, 404)
  const form = await c.get('/entrar')
  t.equal(
    (await c.post(`/convite/${one.token}`, { _csrf: DashClient.token(form), senha: SENHA })).status,
    404,
    'nor can it be used',
  )
  t.equal((await s.sql("SELECT count(*)::int AS n FROM dashboard_users WHERE email = 'um@example.com'"))[0]?.n, 0)
  t.same(
    (await pombo(s, ['user', 'invites'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).email),
    ['um@example.com', 'tres@example.com'],
    "the other organisation's invitations stay",
  )

  await allRefused(t, [
    [pombo(s, ['user', 'invite', 'cancel', '--id', listed[0].id]), /no pending invitation/],
    [pombo(s, ['user', 'invite', 'cancel']), /--id/],
    [pombo(s, ['user', 'invite', 'cancel', '--id', 'nope']), /--id/],
    [pombo(s, ['user', 'invites', '--org', 'nope']), /--org/],
  ])
})

t.test('operators manage people and invitations on the dashboard; other people cannot', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Loja <Azul>')
  const opId = await makePerson(s, 'op@example.com', SENHA, null)
  const anaId = await makePerson(s, 'ana@example.com', SENHA, org)
  const biaId = await makePerson(s, 'bia@example.com', SENHA, org)
  const people = peopleOf(s)
  const inv = await people.invite('novo@example.com', org)

  const ana = new DashClient(s.dashboardUrl)
  t.equal((await ana.signIn('ana@example.com', SENHA)).status, 303)
  const bia = new DashClient(s.dashboardUrl)
  t.equal((await bia.signIn('bia@example.com', SENHA)).status, 303)
  // A person of an organisation: no people or invitations pages, no actions.
  const apps = await ana.get('/apps')
  t.notMatch(apps.text, /href="\/pessoas"/)
  t.match(apps.text, /href="\/conta"/)
  t.equal((await ana.get('/pessoas')).status, 403)
  t.equal((await ana.get('/convites')).status, 403)
  const token = DashClient.token(apps)
  t.equal((await ana.post(`/pessoas/${biaId}/remover`, { _csrf: token, confirmar: '1' })).status, 403)
  t.equal((await ana.post(`/pessoas/${biaId}/sessoes`, { _csrf: token })).status, 403)
  const [invId] = (await s.sql('SELECT id FROM dashboard_invites')).map((x) => x.id)
  t.equal((await ana.post(`/convites/${invId}/cancelar`, { _csrf: token })).status, 403)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM dashboard_users'))[0]?.n, 3, 'nothing changed')
  t.equal((await bia.get('/apps')).status, 200)

  const op = new DashClient(s.dashboardUrl)
  t.equal((await op.signIn('op@example.com', SENHA)).status, 303)
  const list = await op.get('/pessoas')
  t.equal(list.status, 200)
  t.match(list.text, /<h1>Pessoas<\/h1>/)
  t.match(list.text, /Loja &lt;Azul&gt;/, 'escaped')
  t.match(list.text, /ana@example\.com/)
  t.notMatch(list.text, new RegExp(`/pessoas/${opId}/remover`), 'no button to remove oneself')
  // End Bia's sessions: she is signed out, and stays.
  const ended = await op.post(`/pessoas/${biaId}/sessoes`, { _csrf: DashClient.token(list) })
  t.equal(ended.status, 303)
  t.match((await op.get('/pessoas')).text, /Sessões de bia@example\.com encerradas: 1/)
  t.equal((await bia.get('/apps')).status, 303)
  t.equal((await bia.signIn('bia@example.com', SENHA)).status, 303, 'she signs in again')
  // Remove Ana: without the confirmation the question is a page; with it she is gone and signed out.
  const ask = await op.post(`/pessoas/${anaId}/remover`, { _csrf: DashClient.token(list) })
  t.equal(ask.status, 200)
  t.match(ask.text, /Confirmar remoção/)
  t.equal((await ana.get('/apps')).status, 200, 'not yet')
  const gone = await op.post(`/pessoas/${anaId}/remover`, { _csrf: DashClient.token(list), confirmar: '1' })
  t.equal(gone.status, 303)
  t.match((await op.get('/pessoas')).text, /ana@example\.com removida; sessões encerradas: 1/)
  t.equal((await ana.get('/apps')).status, 303, 'her session ended')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM dashboard_users WHERE id = $1', [anaId]))[0]?.n, 0)
  const self = await op.post(`/pessoas/${opId}/remover`, { _csrf: DashClient.token(list), confirmar: '1' })
  t.equal(self.status, 400, 'an operator does not remove themselves here')
  t.equal((await op.post(`/pessoas/${anaId}/remover`, { _csrf: DashClient.token(list), confirmar: '1' })).status, 404)
  t.equal((await op.post('/pessoas/nao-e-uuid/sessoes', { _csrf: DashClient.token(list) })).status, 404)
  t.equal((await op.post(`/pessoas/${biaId}/remover`, { confirmar: '1' })).status, 403, 'no token: refused')

  // Invitations: listed, cancelled (the link stops working).
  const invites = await op.get('/convites')
  t.equal(invites.status, 200)
  t.match(invites.text, /novo@example\.com/)
  t.equal((await op.get(`/convite/${inv.token}`)).status, 200)
  const cancel = await op.post(`/convites/${invId}/cancelar`, { _csrf: DashClient.token(invites) })
  t.equal(cancel.status, 303)
  const after = await op.get('/convites')
  t.match(after.text, /Convite de novo@example\.com cancelado/)
  t.match(after.text, /Nenhum convite pendente/)
  t.equal((await op.get(`/convite/${inv.token}`)).status, 404)
  t.equal((await op.post(`/convites/${invId}/cancelar`, { _csrf: DashClient.token(after) })).status, 404)
})

t.test('/conta: sign out everywhere ends every session of the person, this one included', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  await makePerson(s, 'bia@example.com', SENHA, org)
  const here = new DashClient(s.dashboardUrl)
  const there = new DashClient(s.dashboardUrl)
  const bia = new DashClient(s.dashboardUrl)
  for (const [c, who] of [
    [here, 'ana'],
    [there, 'ana'],
    [bia, 'bia'],
  ] as const)
    t.equal((await c.signIn(`${who}@example.com`, SENHA)).status, 303)
  const page = await here.get('/conta')
  t.equal(page.status, 200)
  t.match(page.text, /Sair de todos os dispositivos/)
  const out = await here.post('/conta/sair-de-todos', { _csrf: DashClient.token(page) })
  t.equal(out.status, 303)
  t.equal(out.headers.get('location'), '/entrar')
  t.notOk(here.jar.has('pm_sessao'), 'the cookie is cleared')
  t.equal((await there.get('/apps')).status, 303, 'the other session ended too')
  t.equal((await bia.get('/apps')).status, 200, "someone else's did not")
  t.equal((await here.signIn('ana@example.com', SENHA)).status, 303, 'the person stays')
})
