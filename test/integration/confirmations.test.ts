// GET and PUT /api/v1/confirmacoes (the spec, Service and channel configuration, Confirmation mode, Reads and
// confirmation configuration errors): every PUT rule and every mode transition, through the real routes.
import t from 'tap'
import { Vault } from '../../src/core/vault'
import { secretAad } from '../../src/confirmations/store'
import { basic, startService, type TestService, VAULT_KEY } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const put = (s: TestService, app: App, body: Record<string, unknown>) =>
  s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: app.id, ...body }, headers: basic(app.api_key) })
const get = (s: TestService, app: App) => s.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`, { headers: basic(app.api_key) })
const destinations = (s: TestService) =>
  s.sql<{ id: string; url: string; active: boolean; sealed_secret: Buffer; app_id: string }>(
    'SELECT id, url, active, sealed_secret, app_id FROM webhook_destinations ORDER BY created_at, active',
  )
const SECRET = /^pm_whsec_[0-9a-f]{64}$/

async function readStatuses(s: TestService, app: App): Promise<number[]> {
  const desde = new Date(Date.now() - 3600_000).toISOString()
  const ate = new Date(Date.now() + 3600_000).toISOString()
  const paths = [
    `/api/v1/notifications?app_id=${app.id}`,
    `/api/v1/notifications/00000000-0000-4000-8000-000000000000?app_id=${app.id}`,
    `/api/v1/notifications/stats?app_id=${app.id}&desde=${desde}&ate=${ate}`,
  ]
  const out: number[] = []
  for (const p of paths) out.push((await s.call('GET', p, { headers: basic(app.api_key) })).status)
  return out
}

t.test('GET: consulta by default, nothing pending, no streams; 200 means the key works', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const r = await get(s, app)
  t.equal(r.status, 200)
  t.same(r.json, { modo: 'consulta', fila_pendente: 0, streams_ativos: 0, pm_problema: null })
  t.equal((await s.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`)).status, 401, 'no key')
  const other = await s.createApp()
  t.equal(
    (await s.call('GET', `/api/v1/confirmacoes?app_id=${other.id}`, { headers: basic(app.api_key) })).status,
    401,
    'foreign app',
  )
  t.equal((await s.call('GET', '/api/v1/confirmacoes', { headers: basic(app.api_key) })).status, 400, 'app_id missing')
  await s.sql('UPDATE apps SET paused = true WHERE id = $1', [app.id])
  await s.svc.deps.dir.invalidate(app.id)
  t.equal((await get(s, app)).status, 403, 'paused')
  t.equal((await put(s, app, { modo: 'consulta' })).status, 403, 'paused (PUT)')
})

t.test('PUT url: https only; a new secret shown once and kept sealed; the mode is unchanged', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  for (const url of [
    'http://example.com/hook',
    'ftp://example.com',
    'example.com/hook',
    '',
    42,
    `https://example.com/${'a'.repeat(2100)}`,
    'https://user:pw@example.com/',
  ]) {
    const r = await put(s, app, { url })
    t.equal(r.status, 400, `refused: ${String(url).slice(0, 40)}`)
    t.equal(r.json.explain.campo, 'url')
  }
  t.same(await destinations(s), [], 'nothing written')
  const r = await put(s, app, { url: 'https://example.com/hook' })
  t.equal(r.status, 200, r.text)
  t.same(Object.keys(r.json).sort(), ['modo', 'ok', 'segredo'])
  t.equal(r.json.ok, true)
  t.equal(r.json.modo, 'consulta', 'url only: mode unchanged')
  t.match(r.json.segredo, SECRET)
  const [d] = await destinations(s)
  t.ok(d?.active)
  t.notOk(d?.sealed_secret.includes(Buffer.from(r.json.segredo)), 'not stored in clear')
  const opened = new Vault(Buffer.from(VAULT_KEY, 'hex')).open(d?.sealed_secret as Buffer, secretAad(app.id, d?.id as string))
  t.equal(opened.toString(), r.json.segredo, 'sealed with AAD webhook:<app>:<destination>')
  t.same((await get(s, app)).json, { modo: 'consulta', fila_pendente: 0, streams_ativos: 0, pm_problema: null })
})

t.test('PUT modo: unknown 400; webhook without a destination 400; url is processed before modo', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  for (const modo of ['polling', 'WEBHOOK', 1, true]) {
    const r = await put(s, app, { modo })
    t.equal(r.status, 400, `unknown mode ${String(modo)}`)
    t.equal(r.json.explain.campo, 'modo')
  }
  const none = await put(s, app, { modo: 'webhook' })
  t.equal(none.status, 400)
  t.equal(none.json.errors[0], 'modo webhook sem destino registrado.')
  t.equal((await get(s, app)).json.modo, 'consulta')
  // Both wrong: the URL is looked at first.
  const both = await put(s, app, { url: 'http://example.com', modo: 'nope' })
  t.equal(both.json.explain.campo, 'url')
  // A valid URL with an unknown mode writes nothing (the whole call is refused).
  t.equal((await put(s, app, { url: 'https://example.com/a', modo: 'nope' })).status, 400)
  t.same(await destinations(s), [])
  // url and modo webhook in one call: the destination registered by the call satisfies the mode.
  const ok = await put(s, app, { modo: 'webhook', url: 'https://example.com/a' })
  t.equal(ok.status, 200, ok.text)
  t.equal(ok.json.modo, 'webhook')
  t.match(ok.json.segredo, SECRET)
})

t.test('transitions: consulta → webhook → consulta → webhook (no new secret) → url change → grpc → consulta', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  t.same(await readStatuses(s, app), [200, 404, 200], 'consulta: reads answer')

  const first = await put(s, app, { url: 'https://example.com/one' })
  const on = await put(s, app, { modo: 'webhook' })
  t.equal(on.status, 200)
  t.same(on.json, { ok: true, modo: 'webhook', segredo: null }, 'a secret is shown only by the call that minted it')
  t.same(await readStatuses(s, app), [403, 403, 200], 'webhook: the two send-read routes 403, stats answer')
  const forbidden = await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(forbidden.json.explain.modo, 'webhook')
  t.equal((await get(s, app)).json.modo, 'webhook')

  const off = await put(s, app, { modo: 'consulta' })
  t.same(off.json, { ok: true, modo: 'consulta', segredo: null })
  t.same(await readStatuses(s, app), [200, 404, 200], 'back to consulta: polling answers again at once')
  t.equal((await destinations(s)).filter((d) => d.active).length, 1, 'the destination stays registered')

  const again = await put(s, app, { modo: 'webhook' })
  t.same(again.json, { ok: true, modo: 'webhook', segredo: null }, 're-enabling webhook mints no new secret')
  const ds = await destinations(s)
  t.equal(ds.length, 1, 'still the one destination')

  const changed = await put(s, app, { url: 'https://example.com/two' })
  t.equal(changed.json.modo, 'webhook', 'url only: mode unchanged')
  t.match(changed.json.segredo, SECRET)
  t.not(changed.json.segredo, first.json.segredo, 'a new secret')
  const after = await destinations(s)
  t.same(
    after.map((d) => [d.url, d.active]),
    [
      ['https://example.com/one', false],
      ['https://example.com/two', true],
    ],
    'previous deactivated',
  )

  const grpc = await put(s, app, { modo: 'grpc' })
  t.same(grpc.json, { ok: true, modo: 'grpc', segredo: null })
  t.same((await get(s, app)).json, { modo: 'grpc', fila_pendente: 0, streams_ativos: 0, pm_problema: null })
  t.same(await readStatuses(s, app), [403, 403, 200], 'grpc: send reads 403 too')
  t.equal((await put(s, app, { modo: 'consulta' })).json.modo, 'consulta')
  t.same(await readStatuses(s, app), [200, 404, 200])
})

t.test('fila_pendente counts the events after the active destination cursor; a new URL takes the queue over', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const ev = (a: App, n: number) =>
    s.sql(
      `INSERT INTO events (app_id, evento, body, created_at)
       SELECT $1::uuid, 'notification.completed', jsonb_build_object('evento', 'notification.completed', 'app_id', $1::uuid), now()
         FROM generate_series(1, $2)`,
      [a.id, n],
    )
  await ev(app, 2) // before any destination: not this destination's
  await put(s, app, { url: 'https://example.com/a', modo: 'webhook' })
  t.equal((await get(s, app)).json.fila_pendente, 0, 'a first destination starts after the newest event')
  await ev(app, 3)
  await ev(other, 4)
  t.equal((await get(s, app)).json.fila_pendente, 3)
  await put(s, app, { url: 'https://example.com/b' })
  t.equal((await get(s, app)).json.fila_pendente, 3, 'the new destination inherits the pending events')
})
