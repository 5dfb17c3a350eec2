// PUT /api/v1/players/{id} and GET /api/v1/players/{id} (the spec, Devices, Authentication 1-2).
import t from 'tap'
import { basic, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const reg = async (s: TestService, body: Record<string, unknown>): Promise<string> => {
  const r = await s.call('POST', '/api/v1/players', { body })
  if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
  return r.json.id
}
const put = (s: TestService, id: string, body: Record<string, unknown>) => s.call('PUT', `/api/v1/players/${id}`, { body })
const read = async (s: TestService, app: App, id: string) => {
  const r = await s.call('GET', `/api/v1/players/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (r.status !== 200) throw new Error(`read: ${r.status} ${r.text}`)
  return r.json
}
const transporte = async (s: TestService, id: string) =>
  (await s.sql('SELECT transporte FROM devices WHERE id = $1', [id]))[0]?.transporte

t.test('PUT answers {success: true}; omitted app_version, tags, transporte keep their values', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const id = await reg(s, {
    app_id: app.id,
    device_type: 1,
    identifier: 'p1',
    app_version: '1.0',
    tags: { a: '1' },
    transporte: 'apns',
    external_user_id: 'u1',
    language: 'pt',
    timezone: 3600,
  })
  const r = await put(s, id, { app_id: app.id })
  t.equal(r.status, 200)
  t.same(r.json, { success: true })
  let d = await read(s, app, id)
  t.equal(d.app_version, '1.0')
  t.same(d.tags, { a: '1' })
  t.equal(d.external_user_id, 'u1', 'absent external_user_id keeps the binding')
  t.equal(d.language, 'pt')
  t.equal(d.timezone, 3600)
  t.equal(await transporte(s, id), 'apns')
  await put(s, id, { app_id: app.id, app_version: '2.0' })
  d = await read(s, app, id)
  t.equal(d.app_version, '2.0')
  t.same(d.tags, { a: '1' })
  await put(s, id, { app_id: app.id, tags: { b: 2 } })
  d = await read(s, app, id)
  t.same(d.tags, { b: 2 }, 'tags replaced')
  t.equal(d.app_version, '2.0')
  await put(s, id, { app_id: app.id, transporte: 'fcm' })
  t.equal(await transporte(s, id), 'fcm')
  await put(s, id, { app_id: app.id, game_version: '3.0' })
  t.equal((await read(s, app, id)).app_version, '3.0', 'game_version alias on PUT')
  await put(s, id, { app_id: app.id, game_version: '9', app_version: '4.0' })
  t.equal((await read(s, app, id)).app_version, '4.0', 'app_version wins')
})

t.test('external_user_id tri-state: absent keeps, string logs in, explicit null logs out', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const id = await reg(s, { app_id: app.id, device_type: 1, identifier: 'tri' })
  t.equal((await read(s, app, id)).external_user_id, null)
  await put(s, id, { app_id: app.id, external_user_id: 'maria' })
  t.equal((await read(s, app, id)).external_user_id, 'maria', 'login')
  await put(s, id, { app_id: app.id, tags: { x: 1 } })
  t.equal((await read(s, app, id)).external_user_id, 'maria', 'omitting never logs out')
  await put(s, id, { app_id: app.id, external_user_id: 'joao' })
  t.equal((await read(s, app, id)).external_user_id, 'joao', 'login as another user')
  await put(s, id, { app_id: app.id, external_user_id: null })
  t.equal((await read(s, app, id)).external_user_id, null, 'explicit null logs out')
})

t.test('PUT validation: fields, app_id, body cap; nothing written on failure', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const id = await reg(s, { app_id: app.id, device_type: 1, identifier: 'v', app_version: '1' })
  const cases: Array<[Record<string, unknown>, number, string | undefined]> = [
    [{ external_user_id: 'x'.repeat(129) }, 400, 'external_user_id'],
    [{ external_user_id: 5 }, 400, 'external_user_id'],
    [{ tags: ['a'] }, 400, 'tags'],
    [{ tags: 'a' }, 400, 'tags'],
    [{ tags: { k: 'x'.repeat(2100) } }, 400, 'tags'],
    [{ transporte: 'hms' }, 400, 'transporte'],
    [{ app_version: 12 }, 400, 'app_version'],
  ]
  for (const [body, status, campo] of cases) {
    const r = await put(s, id, { app_id: app.id, app_version: '2', ...body })
    t.equal(r.status, status, JSON.stringify(body).slice(0, 40))
    t.equal(r.json.explain.campo, campo)
  }
  t.equal((await read(s, app, id)).app_version, '1', 'nothing written')
  t.equal((await put(s, id, { app_version: '2' })).status, 400, 'app_id missing')
  t.equal((await put(s, id, { app_id: '00000000-0000-4000-8000-000000000000' })).status, 400, 'unknown app_id')
  const broken = await s.call('PUT', `/api/v1/players/${id}`, { raw: '{"app_id":' })
  t.equal(broken.status, 400)
  const big = await put(s, id, { app_id: app.id, tags: {}, pad: 'x'.repeat(17 * 1024) })
  t.equal(big.status, 413)
  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await put(s, id, { app_id: app.id, app_version: '9' })).status, 403, 'paused app')
  await s.svc.deps.apps.setPaused(app.id, false)
  t.equal((await read(s, app, id)).app_version, '1')
})

t.test('PUT of an unknown player, a malformed id, or a player of another app: 404', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const id = await reg(s, { app_id: other.id, device_type: 1, identifier: 'foreign' })
  const unknown = await put(s, '00000000-0000-4000-8000-000000000000', { app_id: app.id })
  t.equal(unknown.status, 404)
  t.ok(Array.isArray(unknown.json.errors))
  t.equal((await put(s, 'not-a-uuid', { app_id: app.id })).status, 404)
  t.equal((await put(s, id, { app_id: app.id, app_version: 'x' })).status, 404, 'player of another app')
})

t.test('the cap at PUT: only when the binding changes', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ids: string[] = []
  for (let i = 0; i < 11; i++) ids.push(await reg(s, { app_id: app.id, device_type: 1, identifier: `d-${i}` }))
  for (let i = 0; i < 10; i++) t.equal((await put(s, ids[i] as string, { app_id: app.id, external_user_id: 'ana' })).status, 200)
  const eleventh = await put(s, ids[10] as string, { app_id: app.id, external_user_id: 'ana' })
  t.equal(eleventh.status, 400)
  t.equal(eleventh.json.explain.limite, 10)
  t.equal((await read(s, app, ids[10] as string)).external_user_id, null, 'nothing written')
  // Binding unchanged: no re-check, even with 10 bound.
  t.equal((await put(s, ids[0] as string, { app_id: app.id, external_user_id: 'ana', tags: { a: 1 } })).status, 200)
  // Over the cap already (set behind the service's back): an unchanged binding still passes.
  await s.sql("UPDATE devices SET external_user_id = 'ana' WHERE id = $1", [ids[10]])
  t.equal(
    (await put(s, ids[10] as string, { app_id: app.id, external_user_id: 'ana' })).status,
    200,
    'unchanged binding not re-checked',
  )
  await s.sql('UPDATE devices SET external_user_id = NULL WHERE id = $1', [ids[10]])
  // Logout frees a place.
  t.equal((await put(s, ids[0] as string, { app_id: app.id, external_user_id: null })).status, 200)
  t.equal((await put(s, ids[10] as string, { app_id: app.id, external_user_id: 'ana' })).status, 200)
  // The registration path and the PUT path share the count.
  const r = await s.call('POST', '/api/v1/players', {
    body: { app_id: app.id, device_type: 1, identifier: 'd-new', external_user_id: 'ana' },
  })
  t.equal(r.status, 400)
})

t.test('the PUT cap holds under concurrency', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ids: string[] = []
  for (let i = 0; i < 25; i++) ids.push(await reg(s, { app_id: app.id, device_type: 1, identifier: `k-${i}` }))
  const answers = await Promise.all(ids.map((id) => put(s, id, { app_id: app.id, external_user_id: 'bia' })))
  t.equal(answers.filter((a) => a.status === 200).length, 10)
  t.equal(answers.filter((a) => a.status === 400).length, 15)
  t.equal((await s.sql("SELECT count(*)::int AS n FROM devices WHERE external_user_id = 'bia'"))[0]?.n, 10)
})

t.test('GET player: app key forms, 401s, foreign app, paused, 404', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const id = await reg(s, { app_id: app.id, device_type: 1, identifier: 'g' })
  const otherId = await reg(s, { app_id: other.id, device_type: 1, identifier: 'g' })
  const path = `/api/v1/players/${id}?app_id=${app.id}`
  const get = (headers: Record<string, string>, p = path) => s.call('GET', p, { headers })
  t.equal((await get({ authorization: `Basic ${app.api_key}` })).status, 200, 'Basic <key>')
  t.equal((await get({ authorization: `Bearer ${app.api_key}` })).status, 200, 'Bearer <key>')
  const b64 = Buffer.from(`qualquer:${app.api_key}`).toString('base64')
  t.equal((await get({ authorization: `Basic ${b64}` })).status, 200, 'Basic base64(x:key)')
  t.equal((await get({})).status, 401, 'missing')
  t.equal((await get({ authorization: 'Token abc' })).status, 401, 'malformed')
  t.equal(
    (await get({ authorization: 'Basic pm_live_abcdefgh_0123456789012345678901234567890123456789012' })).status,
    401,
    'unknown key',
  )
  t.equal((await get({ authorization: `Basic ${other.api_key}` })).status, 401, 'key of another app')
  const foreign = await get(basic(app.api_key), `/api/v1/players/${otherId}?app_id=${other.id}`)
  t.equal(foreign.status, 401, 'foreign app_id is 401, never 404')
  t.equal((await get(basic(app.api_key), `/api/v1/players/${otherId}?app_id=${app.id}`)).status, 404, 'player of another app')
  t.equal((await get(basic(app.api_key), `/api/v1/players/00000000-0000-4000-8000-000000000000?app_id=${app.id}`)).status, 404)
  t.equal((await get(basic(app.api_key), `/api/v1/players/nada?app_id=${app.id}`)).status, 404)
  const noApp = await get(basic(app.api_key), `/api/v1/players/${id}`)
  t.equal(noApp.status, 400, 'missing app_id in the query')
  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await get(basic(app.api_key))).status, 403, 'paused')
})
