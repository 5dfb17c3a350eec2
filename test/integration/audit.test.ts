import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ACTIONS, PLATFORM_ORG } from '../../src/audit/record'
import { pruneAudit } from '../../src/audit/retention'
import { DAY_MS } from '../../src/core/time'
import { allRefused, pombo, type Run } from '../helpers/cli'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { startDelivery } from '../helpers/delivery'
import { CARD } from '../helpers/inapp'
import { basic, PLATFORM_KEY, startService, type TestService, VAULT_KEY } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'
const SENHA_OP = 'operadora-senha-longa'

interface Rec {
  em: Date
  quem: string
  acao: string
  org_id: string
  app_id: string | null
  detalhes: Record<string, unknown>
}

async function records(s: TestService): Promise<Rec[]> {
  return s.sql<Rec>('SELECT em, quem, acao, org_id::text, app_id::text, detalhes FROM audit_log ORDER BY em, id')
}

/** The base64 body of a PEM (what would betray a key), without its armour lines. */
const pemBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----'))[0] as string

t.test('every action, through its real surface, is recorded with who, what and where, and never a secret', async (t) => {
  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] } })
  const { s } = w
  const secrets: string[] = [PLATFORM_KEY, VAULT_KEY, SENHA, SENHA_OP]
  const ok = (r: Run, what: string) => {
    if (r.code !== 0) throw new Error(`${what}: ${r.code} ${r.stderr}`)
    return r.stdout
  }
  const expect = async (action: string, want: Partial<Rec>, msg = action) => {
    const all = (await records(s)).filter((r) => r.acao === action)
    const hit = all.find((r) =>
      Object.entries(want).every(([k, v]) =>
        k === 'detalhes'
          ? Object.entries(v as Record<string, unknown>).every(
              ([dk, dv]) => JSON.stringify(r.detalhes[dk]) === JSON.stringify(dv),
            )
          : (r as unknown as Record<string, unknown>)[k] === v,
      ),
    )
    t.ok(hit, `${msg}: ${JSON.stringify(want)} among ${JSON.stringify(all)}`)
    return hit as Rec
  }

  // The operator routes, with the platform key: the app and its new organisation, a rotation.
  const app = await s.createApp({ nome: 'Loja' })
  secrets.push(app.api_key, app.receipt_key)
  const orgId = (await s.sql<{ org_id: string }>('SELECT org_id::text FROM apps WHERE id = $1', [app.id]))[0]?.org_id as string
  await expect('org.criada', { quem: 'chave:plataforma', org_id: orgId, app_id: null, detalhes: { name: 'Loja' } })
  await expect('app.criado', {
    quem: 'chave:plataforma',
    org_id: orgId,
    app_id: app.id,
    detalhes: { name: 'Loja', kid: app.kid, sandbox: false },
  })
  await expect('chave.criada', { quem: 'chave:plataforma', app_id: app.id, detalhes: { kid: app.kid, first: true } })
  const rot = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: { authorization: `Bearer ${PLATFORM_KEY}` } })
  t.equal(rot.status, 200, rot.text)
  secrets.push(rot.json.api_key)
  const key = rot.json.api_key as string
  const kid = rot.json.kid as string
  await expect('chave.girada', { quem: 'chave:plataforma', app_id: app.id, org_id: orgId, detalhes: { kid } })

  // Server routes, with the app's key: the webhook destination (its secret, and a credential in its URL, stay out),
  // in-app transitions, a device export (its file address is a credential too).
  const put = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: 'https://hooks.example.com/pombo?token=segredo-na-url-123', modo: 'webhook' },
    headers: basic(key),
  })
  t.equal(put.status, 200, put.text)
  secrets.push(put.json.segredo, 'segredo-na-url-123')
  await expect('webhook.configurado', {
    quem: `chave:${kid}`,
    app_id: app.id,
    org_id: orgId,
    detalhes: { mode: 'webhook', origin: 'https://hooks.example.com' },
  })
  const exp = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(key) })
  t.equal(exp.status, 200, exp.text)
  secrets.push(/exports\/([0-9a-f]{64})\./.exec(exp.json.csv_file_url)?.[1] as string)
  await expect('exportacao.pedida', { quem: `chave:${kid}`, app_id: app.id, detalhes: { devices: 0 } })

  // The dashboard, as a person of the organisation: a refused sign-in (a password typed as the address is not
  // written), then the app page's actions.
  await makePerson(s, 'ana@example.com', SENHA, orgId)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', 'senha-errada-123')).status, 401)
  secrets.push('senha-errada-123', 'senha-digitada-no-lugar-do-email')
  t.equal((await c.signIn('senha-digitada-no-lugar-do-email', 'x')).status, 401)
  await expect('sessao.recusada', {
    quem: 'pessoa:ana@example.com',
    org_id: orgId,
    detalhes: { reason: 'wrong_email_or_password' },
  })
  await expect('sessao.recusada', { quem: 'pessoa:desconhecida', org_id: PLATFORM_ORG, detalhes: { reason: 'not_an_email' } })
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  await expect('sessao.entrou', { quem: 'pessoa:ana@example.com', org_id: orgId, app_id: null })
  const appPath = `/apps/${app.id}`
  const act = async (action: string, fields: Record<string, string> = {}, multipart?: FormData) => {
    const r = await c.submit(appPath, `${appPath}/${action}`, fields, { multipart })
    if (r.status !== 303 && r.status !== 200) throw new Error(`${action}: ${r.status} ${r.text.slice(0, 300)}`)
    return r
  }
  const ana = 'pessoa:ana@example.com'
  await act('pausar')
  await expect('app.pausado', { quem: ana, app_id: app.id, org_id: orgId, detalhes: { was_paused: false } })
  await act('retomar')
  await expect('app.retomado', { quem: ana, app_id: app.id, detalhes: { was_paused: true } })
  await act('rate', { rate_por_min: '1200' })
  await expect('limite.alterado', { quem: ana, app_id: app.id, detalhes: { rate_per_min: 1200 } })
  const girar = await act('girar')
  const dashKey = /<textarea id="chave"[^>]*>([^<]+)<\/textarea>/.exec(girar.text)?.[1] as string
  secrets.push(dashKey)
  await expect('chave.girada', { quem: ana, app_id: app.id })
  await act('revogar', { kid: app.kid })
  await expect('chave.revogada', { quem: ana, app_id: app.id, detalhes: { kid: app.kid, revoked: 1 } })

  const account = w.fcm.serviceAccount('pombo-painel')
  secrets.push(pemBody(account.private_key as string))
  const fd = new FormData()
  fd.set('conta', new File([JSON.stringify(account)], 'conta.json'))
  await act('credenciais/fcm', {}, fd)
  await expect('credencial.salva', {
    quem: ana,
    app_id: app.id,
    detalhes: { platform: 'fcm', project_id: 'pombo-painel', client_email: account.client_email },
  })
  await act('credenciais/fcm/testar')
  await expect('credencial.testada', { quem: ana, app_id: app.id, detalhes: { platform: 'fcm', ok: true } })
  const p8 = w.apns.key({ environment: 'production' })
  secrets.push(pemBody(p8.p8))
  const up = new FormData()
  up.set('p8', new File([p8.p8], 'AuthKey.p8'))
  await act('credenciais/apns', { key_id: p8.keyId, team_id: p8.teamId, bundle_id: 'com.pombo.demo', ambiente: 'production' }, up)
  await expect('credencial.salva', { quem: ana, app_id: app.id, detalhes: { platform: 'apns', key_id: p8.keyId } })
  await act('credenciais/apns/excluir', { confirmar: '1' })
  await expect('credencial.excluida', { quem: ana, app_id: app.id, detalhes: { platform: 'apns' } })

  const device = await w.device(app, 'token-do-cliente-aaaaaaaa', { external_user_id: 'cliente-42' })
  await act(`dispositivos/${device}/excluir`, { confirmar: '1' })
  await expect('dispositivo.excluido', { quem: ana, app_id: app.id, detalhes: { device_type: 1 } })

  const [dest] = await s.sql('SELECT id FROM webhook_destinations WHERE app_id = $1 AND active', [app.id])
  await s.sql('UPDATE webhook_destinations SET disabled_at = now(), consecutive_failures = 20 WHERE id = $1', [dest?.id])
  await s.sql(
    `INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, last_reason, abandoned_at)
     VALUES ($1, 41, $2, 'delivery.received', $3, 8, 'HTTP 500', now())`,
    [dest?.id, app.id, JSON.stringify({ evento: 'delivery.received', player_id: 'corpo-do-evento' })],
  )
  await act('webhook/reativar')
  await expect('webhook.reativado', { quem: ana, app_id: app.id, detalhes: { destination_id: dest?.id, was_disabled: true } })
  await act('webhook/reenviar', { seq: '41' })
  await expect('evento.reenviado', { quem: ana, app_id: app.id, detalhes: { event_seq: '41', event: 'delivery.received' } })

  await act('inapp/config', { ativo: '1', cap_horas: '12' })
  await expect('inapp.configurado', { quem: ana, app_id: app.id, detalhes: { active: true, cap_hours: 12 } })
  const camp = await s.call('POST', '/api/v1/in_app_messages', {
    body: { app_id: app.id, nome: 'Boas-vindas', conteudo: CARD },
    headers: basic(key),
  })
  t.equal(camp.status, 201, camp.text)
  const cid = camp.json.id as string
  const pub = await s.call('POST', `/api/v1/in_app_messages/${cid}/publicar?app_id=${app.id}`, { headers: basic(key) })
  t.equal(pub.status, 200, pub.text)
  await expect('inapp.publicada', { quem: `chave:${kid}`, app_id: app.id, detalhes: { campaign_id: cid, name: 'Boas-vindas' } })
  await act(`inapp/${cid}/pausar`)
  await expect('inapp.pausada', { quem: ana, app_id: app.id, detalhes: { campaign_id: cid } })
  const end = await s.call('POST', `/api/v1/in_app_messages/${cid}/encerrar?app_id=${app.id}`, { headers: basic(key) })
  t.equal(end.status, 200, end.text)
  await expect('inapp.encerrada', { quem: `chave:${kid}`, app_id: app.id, detalhes: { campaign_id: cid } })

  await c.submit(appPath, `${appPath}/exportar`)
  await expect('exportacao.pedida', { quem: ana, app_id: app.id })
  const made = await c.submit('/apps', '/apps', { nome: 'Loja 2' })
  t.equal(made.status, 201)
  for (const m of made.text.matchAll(/pm_live_[a-z0-9]{8}_[A-Za-z0-9]+|\b[0-9a-f]{64}\b/g)) secrets.push(m[0])
  await expect('app.criado', { quem: ana, org_id: orgId, detalhes: { name: 'Loja 2' } })

  // The operator: created by the command, signs in, changes the plan, removes a person.
  ok(await pombo(s, ['user', 'create', '--email', 'op@example.com', '--operador', '--senha-stdin'], {}, SENHA_OP), 'user create')
  await expect('pessoa.criada', {
    quem: 'operador:pombo user create',
    org_id: PLATFORM_ORG,
    detalhes: { email: 'op@example.com', operator: true },
  })
  const op = new DashClient(s.dashboardUrl)
  t.equal((await op.signIn('op@example.com', SENHA_OP)).status, 303)
  await expect('sessao.entrou', { quem: 'pessoa:op@example.com', org_id: PLATFORM_ORG })
  t.equal((await op.submit(appPath, `${appPath}/plano`, { plano: 'pro' })).status, 303)
  await expect('plano.alterado', { quem: 'pessoa:op@example.com', org_id: orgId, app_id: app.id, detalhes: { plan: 'pro' } })
  const bia = await makePerson(s, 'bia@example.com', SENHA, orgId)
  t.equal((await op.submit('/pessoas', `/pessoas/${bia}/remover`, { confirmar: '1' })).status, 303)
  await expect('pessoa.removida', { quem: 'pessoa:op@example.com', org_id: orgId, detalhes: { email: 'bia@example.com' } })

  // The dashboard's erasure, by an operator: recorded as them once the background job has finished.
  const doomed = await s.createApp({ nome: 'Descartável' })
  secrets.push(doomed.api_key, doomed.receipt_key)
  const erase = await op.submit(`/apps/${doomed.id}`, `/apps/${doomed.id}/excluir`, { nome_confirmacao: 'Descartável' })
  t.equal(erase.status, 303, erase.text.slice(0, 200))
  for (let i = 0; i < 200; i++) {
    if ((await records(s)).some((r) => r.acao === 'app.excluido' && r.app_id === doomed.id)) break
    await new Promise((r) => setTimeout(r, 50))
  }
  await expect('app.excluido', { quem: 'pessoa:op@example.com', app_id: doomed.id, detalhes: { name: 'Descartável' } })

  // The commands: an organisation with an app, its changes, people, and its erasure.
  const org2 = JSON.parse(ok(await pombo(s, ['org', 'create', '--nome', 'Filial']), 'org create')).id as string
  await expect('org.criada', { quem: 'operador:pombo org create', org_id: org2, detalhes: { name: 'Filial' } })
  const app2 = JSON.parse(ok(await pombo(s, ['app', 'create', '--nome', 'Filial App', '--org', org2]), 'app create'))
  secrets.push(app2.api_key, app2.receipt_key)
  await expect('app.criado', { quem: 'operador:pombo app create', org_id: org2, app_id: app2.id })
  ok(await pombo(s, ['app', 'pause', app2.id]), 'pause')
  await expect('app.pausado', { quem: 'operador:pombo app pause', app_id: app2.id, org_id: org2 })
  ok(await pombo(s, ['app', 'resume', app2.id]), 'resume')
  await expect('app.retomado', { quem: 'operador:pombo app resume', app_id: app2.id })
  ok(await pombo(s, ['app', 'plan', app2.id, 'pro']), 'plan')
  await expect('plano.alterado', {
    quem: 'operador:pombo app plan',
    app_id: app2.id,
    detalhes: { plan: 'pro', previous: 'free' },
  })
  const rot2 = JSON.parse(ok(await pombo(s, ['app', 'rotate-key', app2.id]), 'rotate-key'))
  secrets.push(rot2.api_key)
  await expect('chave.girada', { quem: 'operador:pombo app rotate-key', app_id: app2.id, detalhes: { kid: rot2.kid } })
  ok(await pombo(s, ['key', 'revoke', app2.id, '--kid', app2.kid]), 'key revoke')
  await expect('chave.revogada', { quem: 'operador:pombo key revoke', app_id: app2.id, detalhes: { kid: app2.kid } })
  const dir = mkdtempSync(join(tmpdir(), 'pombo-audit-'))
  const sa = w.fcm.serviceAccount('pombo-filial')
  secrets.push(pemBody(sa.private_key as string))
  writeFileSync(join(dir, 'sa.json'), JSON.stringify(sa))
  ok(
    await pombo(s, ['credentials', 'fcm', app2.id, join(dir, 'sa.json')], { PM_FCM_BASE_URL: s.cfg.fcmBaseUrl }),
    'credentials fcm',
  )
  await expect('credencial.salva', {
    quem: 'operador:pombo credentials fcm',
    app_id: app2.id,
    detalhes: { platform: 'fcm', project_id: 'pombo-filial' },
  })
  ok(await pombo(s, ['credentials', 'delete', app2.id, 'fcm']), 'credentials delete')
  await expect('credencial.excluida', { quem: 'operador:pombo credentials delete', app_id: app2.id })
  ok(await pombo(s, ['webhook', 'enable', app.id]), 'webhook enable')
  await expect('webhook.reativado', { quem: 'operador:pombo webhook enable', app_id: app.id, detalhes: { was_disabled: false } })
  const link = ok(await pombo(s, ['user', 'invite', '--email', 'caio@example.com', '--org', org2]), 'invite').trim()
  const token = link.split('/convite/')[1] as string
  secrets.push(token)
  await expect('pessoa.convidada', { quem: 'operador:pombo user invite', org_id: org2, detalhes: { email: 'caio@example.com' } })
  const caio = new DashClient(s.dashboardUrl)
  const form = await caio.get(`/convite/${token}`)
  t.equal(form.status, 200)
  t.equal((await caio.post(`/convite/${token}`, { _csrf: DashClient.token(form), senha: SENHA, senha2: SENHA })).status, 303)
  await expect('pessoa.criada', { quem: 'pessoa:caio@example.com', org_id: org2, detalhes: { invited: true } })
  const dora = ok(await pombo(s, ['user', 'invite', '--email', 'dora@example.com', '--org', org2]), 'invite').trim()
  secrets.push(dora.split('/convite/')[1] as string)
  ok(await pombo(s, ['user', 'invite', 'cancel', '--email', 'dora@example.com']), 'invite cancel')
  await expect('convite.cancelado', {
    quem: 'operador:pombo user invite cancel',
    org_id: org2,
    detalhes: { email: 'dora@example.com' },
  })
  ok(await pombo(s, ['user', 'signout', '--email', 'ana@example.com']), 'user signout')
  await expect('sessao.encerrada', {
    quem: 'operador:pombo user signout',
    org_id: orgId,
    detalhes: { email: 'ana@example.com', sessions_ended: 1 },
  })
  ok(await pombo(s, ['user', 'remove', '--email', 'caio@example.com']), 'user remove')
  await expect('pessoa.removida', { quem: 'operador:pombo user remove', org_id: org2, detalhes: { email: 'caio@example.com' } })

  // The erasure: the app's records stay (the audit log is not the tenant's), its deletion is recorded last, with
  // counts and no end-user data.
  const dev2 = await w.device(app2, 'token-da-filial-bbbbbbbb', { external_user_id: 'cliente-da-filial' })
  ok(await pombo(s, ['app', 'delete', app2.id, '--yes']), 'app delete')
  const gone = await expect('app.excluido', {
    quem: 'operador:pombo app delete',
    app_id: app2.id,
    org_id: org2,
    detalhes: { name: 'Filial App' },
  })
  t.equal((gone.detalhes.rows as Record<string, number>)?.devices, 1, 'with what it removed')
  t.ok(
    (await records(s)).some((r) => r.acao === 'app.criado' && r.app_id === app2.id),
    'its earlier records are kept',
  )
  ok(await pombo(s, ['org', 'delete', org2, '--yes']), 'org delete')
  await expect('org.excluida', { quem: 'operador:pombo org delete', org_id: org2, detalhes: { name: 'Filial', apps: 0 } })

  // Every action the issue names was met, each record's organisation is a real one or the platform's, and no
  // record holds a secret, an end user's id, token or external id, or anything shaped like an API key.
  const all = await records(s)
  t.same(
    ACTIONS.filter((a) => !all.some((r) => r.acao === a)),
    [],
    'every action of the issue has been recorded through a surface',
  )
  t.same(
    all.filter((r) => r.quem === 'sistema' && r.acao !== 'pessoa.criada'),
    [],
    'no surface left its actor out (only the test set-up calls a service directly)',
  )
  const text = JSON.stringify(all)
  for (const x of secrets) t.notOk(x && text.includes(x), `no record holds the secret ${x.slice(0, 12)}…`)
  for (const x of [device, dev2, 'token-do-cliente', 'cliente-42', 'token-da-filial', 'cliente-da-filial', 'corpo-do-evento'])
    t.notOk(text.includes(x), `no record names the end user's ${x}`)
  t.notMatch(text, /pm_(live|test)_[a-z0-9]{8}_/, 'nothing shaped like an API key')
  t.notMatch(text, /BEGIN [A-Z ]*PRIVATE KEY/, 'nothing shaped like a private key')
})

t.test('pombo audit: one JSON object a line, oldest first; --app, --org, --desde; bad flags refused', async (t) => {
  const s = await startService(t)
  const a = await s.createApp({ nome: 'A' })
  const b = await s.createApp({ nome: 'B' })
  const orgA = (await s.sql<{ o: string }>('SELECT org_id::text AS o FROM apps WHERE id = $1', [a.id]))[0]?.o as string
  const mid = new Date()
  await new Promise((r) => setTimeout(r, 20))
  const pause = await pombo(s, ['app', 'pause', a.id])
  t.equal(pause.code, 0, pause.stderr)

  const lines = (r: Run) => {
    t.equal(r.code, 0, r.stderr)
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
  }
  const everything = lines(await pombo(s, ['audit']))
  t.equal(everything.length, 7, 'two organisations, two apps and their keys, one pause')
  for (const x of everything) t.same(Object.keys(x).sort(), ['acao', 'app_id', 'detalhes', 'em', 'org_id', 'quem'])
  t.same(
    everything.map((x) => x.em),
    everything.map((x) => x.em).sort(),
    'oldest first',
  )
  t.match(everything.at(-1), { acao: 'app.pausado', quem: 'operador:pombo app pause', app_id: a.id, org_id: orgA })
  t.match(everything.at(-1).em, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const ofA = lines(await pombo(s, ['audit', '--app', a.id.toUpperCase()]))
  t.same(
    ofA.map((x) => x.acao),
    ['app.criado', 'chave.criada', 'app.pausado'],
  )
  const ofOrg = lines(await pombo(s, ['audit', '--org', orgA]))
  t.same(
    ofOrg.map((x) => [x.acao, x.app_id]),
    [
      ['org.criada', null],
      ['app.criado', a.id],
      ['chave.criada', a.id],
      ['app.pausado', a.id],
    ],
  )
  t.same(
    lines(await pombo(s, ['audit', '--desde', mid.toISOString()])).map((x) => x.acao),
    ['app.pausado'],
  )
  const offset = new Date(mid.getTime() - 3 * 3600_000).toISOString().replace('Z', '-03:00')
  t.same(
    lines(await pombo(s, ['audit', '--desde', offset])).map((x) => x.acao),
    ['app.pausado'],
    'the same moment written with an offset',
  )
  t.same(lines(await pombo(s, ['audit', '--desde', '2999-01-01T00:00:00Z'])), [], 'nothing yet')

  // Many records stream out in pages, each once.
  await s.sql(
    `INSERT INTO audit_log (org_id, app_id, em, quem, acao, detalhes)
     SELECT $1, $2, now() + i * interval '1 millisecond', 'operador:teste', 'app.pausado', jsonb_build_object('i', i)
       FROM generate_series(1, 2100) i`,
    [orgA, b.id],
  )
  const many = lines(await pombo(s, ['audit', '--app', b.id]))
  t.equal(many.length, 2102)
  t.same(
    many.slice(2).map((x) => x.detalhes.i),
    Array.from({ length: 2100 }, (_, i) => i + 1),
    'in order, none twice',
  )

  await allRefused(t, [
    [pombo(s, ['audit', '--app', 'nope']), /--app: expected a UUID/],
    [pombo(s, ['audit', '--org', '123']), /--org: expected a UUID/],
    [pombo(s, ['audit', '--app', a.id, '--org', orgA]), /--app and --org: choose one/],
    [pombo(s, ['audit', '--desde', 'ontem']), /--desde: expected an RFC 3339 date-time/],
    [pombo(s, ['audit', '--desde', '2026-02-30T00:00:00Z']), /--desde/],
    [pombo(s, ['audit', '--desde']), /desde/],
    [pombo(s, ['audit', '--quem', 'x']), /quem/],
    [pombo(s, ['audit', a.id]), /unexpected argument/],
  ])
  t.match((await pombo(s, ['help'])).stdout, /pombo audit \[--app APP_ID \| --org ORG_ID\] \[--desde RFC3339\]/)
})

t.test("the dashboard: Auditoria on the app's and the organisation's pages, paged newest first; others see 404", async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Loja')
  const other = await makeOrg(s, 'Outra')
  await makePerson(s, 'ana@example.com', SENHA, org)
  await makePerson(s, 'rui@example.com', SENHA, other)
  const app = await s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  await c.submit(`/apps/${app.id}`, `/apps/${app.id}/pausar`)

  const appPage = await c.get(`/apps/${app.id}`)
  t.match(appPage.text, /<h2 id="sec-auditoria">Auditoria<\/h2>/)
  t.match(appPage.text, /app\.pausado[\s\S]*app\.criado/, 'newest first')
  t.match(appPage.text, /pessoa:ana@example\.com/)
  t.match(appPage.text, new RegExp(`href="/apps/${app.id}/auditoria"`))
  const orgPage = await c.get(`/organizacoes/${org}`)
  t.match(orgPage.text, /<h2 id="sec-auditoria">Auditoria<\/h2>/)
  t.match(orgPage.text, /sessao\.entrou/)
  t.match(orgPage.text, new RegExp(`href="/organizacoes/${org}/auditoria"`))

  // 120 more records of the app: pages of 50, newest first, each record once.
  await s.sql(
    `INSERT INTO audit_log (org_id, app_id, em, quem, acao, detalhes)
     SELECT $1, $2, now() + i * interval '1 second', 'operador:teste', 'limite.alterado', jsonb_build_object('n', i)
       FROM generate_series(1, 120) i`,
    [org, app.id],
  )
  const seen: number[] = []
  let path: string | undefined = `/apps/${app.id}/auditoria`
  let pages = 0
  while (path) {
    const p = await c.get(path)
    t.equal(p.status, 200)
    t.match(p.text, /<h1>Auditoria<\/h1>/)
    for (const m of p.text.matchAll(/\{&quot;n&quot;:(\d+)\}/g)) seen.push(Number(m[1]))
    pages++
    path = /href="([^"]+)">Registros mais antigos/.exec(p.text)?.[1]?.replace(/&amp;/g, '&')
  }
  t.equal(pages, 3, '123 records: 50, 50, 23')
  t.same(
    seen,
    Array.from({ length: 120 }, (_, i) => 120 - i),
    'newest first, none twice',
  )
  const orgAudit = await c.get(`/organizacoes/${org}/auditoria`)
  t.equal(orgAudit.status, 200)
  t.match(orgAudit.text, /<h1>Auditoria<\/h1>/)
  t.match(orgAudit.text, /Registros mais antigos/)

  const rui = new DashClient(s.dashboardUrl)
  t.equal((await rui.signIn('rui@example.com', SENHA)).status, 303)
  t.equal((await rui.get(`/apps/${app.id}/auditoria`)).status, 404, "another organisation's app")
  t.equal((await rui.get(`/organizacoes/${org}/auditoria`)).status, 404, 'another organisation')
  t.equal((await rui.get('/organizacoes/nope/auditoria')).status, 404)
  t.equal((await c.get(`/apps/${app.id}/auditoria?antes=lixo`)).status, 200, 'a mangled cursor is the first page')
})

t.test('retention deletes records older than PM_AUDIT_RETENTION_DAYS, in batches, and nothing newer', async (t) => {
  const s = await startService(t)
  const org = await makeOrg(s, 'Loja')
  const now = Date.now()
  await s.sql(
    `INSERT INTO audit_log (org_id, em, quem, acao)
     SELECT $1, $2::timestamptz - i * interval '1 minute', 'operador:teste', 'app.pausado' FROM generate_series(1, 7) i`,
    [org, new Date(now - 400 * DAY_MS)],
  )
  await s.sql(`INSERT INTO audit_log (org_id, em, quem, acao) VALUES ($1, $2, 'operador:teste', 'app.retomado')`, [
    org,
    new Date(now - 364 * DAY_MS),
  ])
  t.equal(await pruneAudit(s.svc.deps.db, 0, now, 2), 0, '0 keeps everything')
  t.equal(await pruneAudit(s.svc.deps.db, 365, now, 2), 7, 'the 7 old ones, two at a time')
  const left = await s.sql<{ acao: string }>('SELECT acao FROM audit_log WHERE org_id = $1', [org])
  t.same(
    left.map((r) => r.acao),
    ['app.retomado'],
  )
  t.equal(s.cfg.jobs.auditRetentionDays, 365, 'the default')

  // The job of a worker process runs at start with the configured horizon.
  const w = await startService(t, { roles: ['worker'], jobs: true, shareWith: s, env: { PM_AUDIT_RETENTION_DAYS: '30' } })
  t.equal(w.cfg.jobs.auditRetentionDays, 30)
  for (let i = 0; i < 100; i++) {
    if ((await s.sql('SELECT 1 FROM audit_log WHERE org_id = $1', [org])).length === 0) break
    await new Promise((r) => setTimeout(r, 50))
  }
  t.same(await s.sql('SELECT 1 FROM audit_log WHERE org_id = $1', [org]), [], 'the worker deleted the 364-day-old one')
})

t.test('append-only: the table refuses UPDATE, DELETE and TRUNCATE; no statement in src/ but retention tries', async (t) => {
  const s = await startService(t)
  await s.createApp({ nome: 'A' })
  await t.rejects(s.sql("UPDATE audit_log SET quem = 'outro'"), /append-only: UPDATE refused/)
  await t.rejects(s.sql('DELETE FROM audit_log'), /append-only: DELETE refused/)
  await t.rejects(s.sql('TRUNCATE audit_log'), /append-only: TRUNCATE refused/)
  t.equal((await s.sql("SELECT count(*)::int AS n FROM audit_log WHERE quem = 'chave:plataforma'"))[0]?.n, 3, 'all still there')

  const root = join(__dirname, '..', '..', 'src')
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]))
  const writers = files(root)
    .filter((f) => /\.(ts|sql)$/.test(f))
    .filter((f) => /(UPDATE|DELETE\s+FROM|TRUNCATE)\s+(TABLE\s+)?audit_log\b/i.test(readFileSync(f, 'utf8')))
    .map((f) => f.slice(root.length + 1))
  t.same(writers, ['audit/retention.ts'], 'only the retention job deletes audit records')
})
