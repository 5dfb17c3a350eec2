// The dashboard's pages and actions without a browser: credentials uploaded with the CLI's validators and really
// tested against the fake providers, credential deletion, device deletion with its delivery history, live send
// counters, webhook re-enable and replay, in-app campaigns.
import t from 'tap'
import { PLACEHOLDER_APNS_TOKEN } from '../../src/credentials/connection-test'
import { CARD } from '../helpers/inapp'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { BUNDLE_ID, startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

async function world(t: Parameters<typeof startDelivery>[0]) {
  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] } })
  const org = await makeOrg(w.s, 'Loja', 'pro')
  await makePerson(w.s, 'ana@example.com', SENHA, org)
  const app = await w.s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const c = new DashClient(w.s.dashboardUrl)
  if ((await c.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
  const appPath = `/apps/${app.id}`
  /** Posts a form of the app page and answers the app page it redirects to (with the flash). */
  const act = async (action: string, fields: Record<string, string> = {}, multipart?: FormData) => {
    const r = await c.submit(appPath, `${appPath}/${action}`, fields, { multipart })
    if (r.status !== 303) return r
    return c.get(appPath)
  }
  return { ...w, app: { ...app, nome: 'Loja' }, c, appPath, act }
}

const file = (text: string, name: string) => new File([text], name)

t.test('credentials: uploaded with the validators, shown only by their public part, tested for real, deleted', async (t) => {
  const w = await world(t)
  const page = await w.c.get(w.appPath)
  for (const h of ['Chaves', 'Credenciais', 'Dispositivos', 'Envios', 'Webhook', 'In-app'])
    t.match(page.text, new RegExp(`<h2 id="[^"]+">${h}</h2>`), h)

  // A bad file: the validator's reason, nothing stored.
  const bad = new FormData()
  bad.set('conta', file('{"type":"service_account"}', 'conta.json'))
  const refused = await w.act('credenciais/fcm', {}, bad)
  t.equal(refused.status, 400)
  t.match(refused.text, /project_id/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM credentials')).at(0)?.n, 0)

  const account = w.fcm.serviceAccount('pombo-painel')
  const fd = new FormData()
  fd.set('conta', file(JSON.stringify(account), 'conta.json'))
  const saved = await w.act('credenciais/fcm', {}, fd)
  t.match(saved.text, /Credencial FCM salva/)
  t.match(saved.text, /pombo-painel/)
  t.notMatch(saved.text, /BEGIN PRIVATE KEY/, 'the secret is never shown back')
  const [row] = await w.s.sql("SELECT sealed FROM credentials WHERE platform = 'fcm'")
  t.notOk(row?.sealed.toString('latin1').includes('BEGIN PRIVATE KEY'), 'sealed at rest')

  const ok = await w.act('credenciais/fcm/testar')
  t.match(ok.text, /Conexão OK/)
  const probe = w.fcm.requests.at(-1)
  t.equal(probe?.validateOnly, true, 'FCM was asked with validate_only: true')
  t.equal(w.fcm.delivered.filter((x) => !x.validateOnly).length, 0, 'nothing delivered')
  w.fcm.revoke(account.client_email as string)
  const failed = await w.act('credenciais/fcm/testar')
  t.match(failed.text, /Falhou: oauth invalid_grant/)
  t.match(failed.text, /o Google recusou a conta de serviço/)

  // APNs: Apple answers BadDeviceToken for the placeholder token (key accepted); a sandbox key against production
  // answers BadEnvironmentKeyIdInToken.
  w.apns.script(PLACEHOLDER_APNS_TOKEN, 'bad-device-token')
  const key = w.apns.key({ environment: 'production' })
  const up = new FormData()
  up.set('p8', file(key.p8, 'AuthKey.p8'))
  const savedApns = await w.act(
    'credenciais/apns',
    { key_id: key.keyId, team_id: key.teamId, bundle_id: BUNDLE_ID, ambiente: 'production' },
    up,
  )
  t.match(savedApns.text, /Credencial APNs salva/)
  t.match((await w.act('credenciais/apns/testar')).text, /APNs: Conexão OK/)
  const sandboxKey = w.apns.key({ environment: 'sandbox' })
  const up2 = new FormData()
  up2.set('p8', file(sandboxKey.p8, 'AuthKey.p8'))
  await w.act(
    'credenciais/apns',
    { key_id: sandboxKey.keyId, team_id: sandboxKey.teamId, bundle_id: BUNDLE_ID, ambiente: 'production' },
    up2,
  )
  const envFail = await w.act('credenciais/apns/testar')
  t.match(envFail.text, /Falhou: BadEnvironmentKeyIdInToken/)
  t.match(envFail.text, /ambiente/)
  // The labels of the dashboard in the validators' refusals.
  const up3 = new FormData()
  up3.set('p8', file(key.p8, 'AuthKey.p8'))
  const badKey = await w.act(
    'credenciais/apns',
    { key_id: 'curto', team_id: key.teamId, bundle_id: BUNDLE_ID, ambiente: 'production' },
    up3,
  )
  t.equal(badKey.status, 400)
  t.match(badKey.text, /Key ID: expected exactly 10/)

  const gone = await w.act('credenciais/fcm/excluir', { confirmar: '1' })
  t.match(gone.text, /Credencial FCM excluída/)
  t.equal((await w.s.sql("SELECT count(*)::int AS n FROM credentials WHERE platform = 'fcm'")).at(0)?.n, 0)
  t.match(gone.text, /Nenhuma credencial FCM/)
})

t.test('devices: search, details, delete with the delivery history; sends: live counters and pm_problema', async (t) => {
  const w = await world(t)
  await w.fcmFor(w.app)
  const a = await w.device(w.app, 'token-aaaaaaaaaaaaaaaaaaaa', { external_user_id: 'cliente-7' })
  const b = await w.device(w.app, 'token-bbbbbbbbbbbbbbbbbbbb')
  const sendId = await w.send(w.app, { include_player_ids: [a, b], name: 'Promo <b>' })
  await w.closed(sendId)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE device_id = $1', [a])).at(0)?.n, 1)

  const found = await w.c.get(`${w.appPath}?busca=cliente-7`)
  t.match(found.text, new RegExp(a))
  t.notMatch(found.text, new RegExp(b))
  t.match((await w.c.get(`${w.appPath}?busca=${b}`)).text, new RegExp(`/dispositivos/${b}`))
  const details = await w.c.get(`${w.appPath}/dispositivos/${a}`)
  t.equal(details.status, 200)
  t.match(details.text, /cliente-7/)

  // Live counters of the send, as the page polls them; names escaped on the page.
  const page = await w.c.get(w.appPath)
  t.match(page.text, /Promo &lt;b&gt;/)
  for (const h of ['recipients', 'successful', 'recebidos']) t.match(page.text, new RegExp(`<th scope="col">${h}</th>`))
  const live = JSON.parse((await w.c.get(`${w.appPath}/envios.json?ids=${sendId}`)).text)
  t.match(live.envios[sendId], { recipients: 2, successful: 2, failed: 0, errored: 0, remaining: 0, recebidos: 0, clicks: 0 })

  // Without confirmation the server asks; with it, the device and its history go.
  const ask = await w.c.submit(w.appPath, `${w.appPath}/dispositivos/${a}/excluir`)
  t.equal(ask.status, 200)
  t.match(ask.text, /Confirmar exclusão/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = $1', [a])).at(0)?.n, 1, 'not yet')
  const del = await w.act(`dispositivos/${a}/excluir`, { confirmar: '1' })
  t.match(del.text, /excluído com o histórico/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = $1', [a])).at(0)?.n, 0)
  t.equal(
    (await w.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE device_id = $1', [a])).at(0)?.n,
    0,
    'its deliveries too',
  )
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE device_id = $1', [b])).at(0)?.n, 1, 'not the others')

  // A send without a credential for its platform: pm_problema shown prominently.
  await w.creds.delete(w.app.id, 'fcm')
  const s2 = await w.send(w.app, { include_player_ids: [b] })
  await w.closed(s2)
  const withProblem = await w.c.get(w.appPath)
  t.match(withProblem.text, /<div role="alert" class="aviso erro problema"><b>Problema nas entregas<\/b>/)

  // The export, with its progress.
  const exp = await w.c.submit(w.appPath, `${w.appPath}/exportar`)
  t.equal(exp.status, 200)
  const progress = /data-estado="([^"]+)"/.exec(exp.text)?.[1] as string
  let state: { estado: string; linhas: number | null } = { estado: 'building', linhas: null }
  for (let i = 0; i < 100 && state.estado !== 'ready'; i++) {
    state = JSON.parse((await w.c.get(progress)).text)
    if (state.estado !== 'ready') await new Promise((r) => setTimeout(r, 100))
  }
  t.same(state, { estado: 'ready', linhas: 1 })
})

t.test('keys: rotate shows the new key once and the previous expiry; revoke, pause, rate', async (t) => {
  const w = await world(t)
  const rot = await w.c.submit(w.appPath, `${w.appPath}/girar`)
  t.equal(rot.status, 200)
  const key = /<textarea id="chave"[^>]*>([^<]+)<\/textarea>/.exec(rot.text)?.[1] as string
  t.match(key, /^pm_live_/)
  t.match(rot.text, /A chave anterior vale até/)
  const probe = await w.s.call('GET', `/api/v1/confirmacoes?app_id=${w.app.id}`, { headers: basic(key) })
  t.equal(probe.status, 200, 'the new key works')
  t.equal(
    (await w.s.call('GET', `/api/v1/confirmacoes?app_id=${w.app.id}`, { headers: basic(w.app.api_key) })).status,
    200,
    'the old one still does',
  )
  await w.act('revogar', { kid: w.app.kid })
  t.equal(
    (await w.s.call('GET', `/api/v1/confirmacoes?app_id=${w.app.id}`, { headers: basic(w.app.api_key) })).status,
    401,
    'revoked at once',
  )
  const rate = await w.act('rate', { rate_por_min: '1200' })
  t.match(rate.text, /rate_por_min agora é 1200/)
  t.equal((await w.act('rate', { rate_por_min: '0' })).status, 400)
  await w.act('pausar', { confirmar: '1' })
  t.equal((await w.s.call('GET', `/api/v1/confirmacoes?app_id=${w.app.id}`, { headers: basic(key) })).status, 403, 'paused')
  await w.act('retomar')
  t.equal((await w.s.call('GET', `/api/v1/confirmacoes?app_id=${w.app.id}`, { headers: basic(key) })).status, 200)
})

t.test('webhook: re-enable, and replay of an abandoned event; in-app: switch, publish, pause, end', async (t) => {
  const w = await world(t)
  const put = await w.s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: w.app.id, url: 'https://hooks.example.com/pombo', modo: 'webhook' },
    headers: basic(w.app.api_key),
  })
  t.equal(put.status, 200, put.text)
  const [dest] = await w.s.sql('SELECT id FROM webhook_destinations WHERE app_id = $1 AND active', [w.app.id])
  await w.s.sql('UPDATE webhook_destinations SET disabled_at = now(), consecutive_failures = 20 WHERE id = $1', [dest?.id])
  const body = { evento: 'delivery.received', canal: 'webhook', notification_id: 'x' }
  await w.s.sql(
    `INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, last_reason, abandoned_at)
     VALUES ($1, 41, $2, 'delivery.received', $3, 8, 'HTTP 500', now())`,
    [dest?.id, w.app.id, JSON.stringify(body)],
  )
  const page = await w.c.get(w.appPath)
  t.match(page.text, /desativado/)
  t.match(page.text, /HTTP 500/)
  t.match(page.text, /fila_pendente/)
  const on = await w.act('webhook/reativar')
  t.match(on.text, /Webhook reativado/)
  t.same((await w.s.sql('SELECT disabled_at, consecutive_failures FROM webhook_destinations WHERE id = $1', [dest?.id]))[0], {
    disabled_at: null,
    consecutive_failures: 0,
  })
  const replay = await w.act('webhook/reenviar', { seq: '41' })
  t.match(replay.text, /Evento 41 de volta à fila/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM webhook_abandoned')).at(0)?.n, 0)
  const ev = await w.s.sql("SELECT evento, body FROM events WHERE app_id = $1 AND canal = 'webhook'", [w.app.id])
  t.same(ev, [{ evento: 'delivery.received', body }])
  t.equal((await w.act('webhook/reenviar', { seq: '41' })).status, 404, 'a replay is not doubled')

  const cfg = await w.act('inapp/config', { ativo: '1', cap_horas: '12' })
  t.match(cfg.text, /In-app ativo, inapp_cap_horas 12/)
  t.equal((await w.act('inapp/config', { cap_horas: '200' })).status, 422)
  const created = await w.s.call('POST', '/api/v1/in_app_messages', {
    body: { app_id: w.app.id, nome: 'Boas-vindas', conteudo: CARD },
    headers: basic(w.app.api_key),
  })
  t.equal(created.status, 201, created.text)
  const cid = created.json.id
  t.match((await w.act(`inapp/${cid}/publicar`)).text, /Boas-vindas: ativa/)
  t.match((await w.act(`inapp/${cid}/pausar`)).text, /Boas-vindas: pausada/)
  t.equal((await w.act(`inapp/${cid}/pausar`)).status, 409, 'not from pausada')
  t.match((await w.act(`inapp/${cid}/encerrar`, { confirmar: '1' })).text, /Boas-vindas: encerrada/)
  const reach = await w.c.get(`${w.appPath}?alcance=${cid}`)
  t.match(reach.text, /<b>0<\/b> dispositivos/)
})

t.test('lists paginate by keyset: devices, sends, apps', async (t) => {
  const w = await world(t)
  // 30 devices and 23 sends, written directly (the pages only read them).
  await w.s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'tok-' || i, 1, false, 'fcm', now(), now(), now() FROM generate_series(1, 30) i`,
    [w.app.id],
  )
  await w.s.sql(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining, ttl_s, queued_at, expansion_done, name)
     SELECT $1, gen_random_uuid(), 0, 'segments', '[]', '{}', '{}', 0, true, 0, 60, now() - (i || ' minutes')::interval, true, 'envio-' || i
       FROM generate_series(1, 23) i`,
    [w.app.id],
  )
  const first = await w.c.get(w.appPath)
  const devLinks = (p: string) => [...p.matchAll(/\/dispositivos\/([0-9a-f-]{36})"/g)].map((m) => m[1])
  const sendNames = (p: string) => [...p.matchAll(/<td>(?:<a [^>]*>)?(envio-\d+)/g)].map((m) => m[1])
  t.equal(devLinks(first.text).length, 25)
  t.same(sendNames(first.text).slice(0, 3), ['envio-1', 'envio-2', 'envio-3'], 'newest first')
  t.equal(sendNames(first.text).length, 20)
  const nextDev = /href="([^"]+disp_apos=[^"#]+)#dispositivos"/.exec(first.text)?.[1] as string
  const nextSends = /href="([^"]+envios_antes=[^"#]+)#envios"/.exec(first.text)?.[1] as string
  const dev2 = await w.c.get(nextDev.replaceAll('&amp;', '&'))
  t.equal(devLinks(dev2.text).length, 5)
  t.same(new Set([...devLinks(first.text), ...devLinks(dev2.text)]).size, 30, 'every device once')
  t.notMatch(dev2.text, /disp_apos=/, 'no further page')
  const s2 = await w.c.get(nextSends.replaceAll('&amp;', '&'))
  t.same(sendNames(s2.text), ['envio-21', 'envio-22', 'envio-23'])
  // Garbage cursors are the first page, not an error.
  t.equal((await w.c.get(`${w.appPath}?disp_apos=x&envios_antes=1_2&inapp_apos=%%&abandonados_antes=-1`)).status, 200)
  t.equal((await w.c.get('/apps?apos=nada')).status, 200)
})
