// A malformed percent-escape in a path parameter must be the spec's 4xx on
// every route that has one, decoded inside the route's error boundary: never an exception out of the uWS callback
// (which ends the process), never a 500. On /apps/{id}/… it is the spec's 400 outside the envelope.
import t from 'tap'
import { EscapeRecorder } from '../fuzz/escapes'
import { exchange, type WireAnswer } from '../fuzz/wire'
import { basic, PLATFORM_KEY, startService } from '../helpers/service'

const ESCAPES = ['%zz', '%', '%E0%A4%A', '%C3%28', '%FF', '%ED%A0%80', '%C0%AF', 'abc%2']

t.test('malformed escapes in every path parameter', async (t) => {
  const escapes = new EscapeRecorder()
  t.teardown(() => escapes.stop())
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const port = s.svc.api?.port as number
  const app = await s.createApp()
  const player = (await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })).json
    .id
  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<WireAnswer> =>
    exchange(
      port,
      {
        method,
        target: Buffer.from(path),
        headers: Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)]),
        body: body === undefined ? null : Buffer.from(JSON.stringify(body)),
        transfer: 'length',
      },
      1500,
    )
  const key = basic(app.api_key)
  const platform = { authorization: `Bearer ${PLATFORM_KEY}` }
  const routes: Array<[string, (bad: string) => Promise<WireAnswer>, number, boolean]> = [
    ['GET /api/v1/players/{id} (no credential)', (b) => call('GET', `/api/v1/players/${b}?app_id=x`), 401, false],
    ['GET /api/v1/players/{id}', (b) => call('GET', `/api/v1/players/${b}?app_id=${app.id}`, key), 404, false],
    [
      'PUT /api/v1/players/{id}',
      (b) => call('PUT', `/api/v1/players/${b}`, { 'content-type': 'application/json' }, { app_id: app.id, tags: { a: 1 } }),
      404,
      false,
    ],
    ['GET /api/v1/notifications/{id}', (b) => call('GET', `/api/v1/notifications/${b}?app_id=${app.id}`, key), 404, false],
    ['GET /api/v1/exports/{file}', (b) => call('GET', `/api/v1/exports/${b}`), 404, false],
    ['GET /api/v1/apps/{id}/firebase_params', (b) => call('GET', `/api/v1/apps/${b}/firebase_params`), 400, true],
    ['POST /api/v1/apps/{id}/rotate_key', (b) => call('POST', `/api/v1/apps/${b}/rotate_key`, platform), 400, true],
  ]
  for (const [name, send, status, bare] of routes) {
    // All escapes of one route at once: a request that is never answered costs one wait, not one per escape.
    const bad = [...ESCAPES, `${player}%zz`, `${app.id}%`]
    const answers = await Promise.all(bad.map((esc) => send(esc)))
    answers.forEach((r, i) => {
      const what = `${name} with ${bad[i]}`
      t.equal(r.status, status, `${what}: ${status} (got ${r.status ?? (r.hung ? 'no answer' : 'connection closed')})`)
      t.ok(r.headers['x-pm-request-id'], `${what}: X-Pm-Request-Id`)
      let body: { errors?: unknown; erro?: unknown } = {}
      try {
        body = JSON.parse(r.body.toString())
      } catch {}
      if (bare) t.ok(typeof body.erro === 'string' && body.errors === undefined, `${what}: the 400 outside the envelope`)
      else t.ok(Array.isArray(body.errors), `${what}: the error envelope`)
    })
    // A fixed pause on purpose: the assertion is that no exception escapes during it.
    await new Promise((r) => setTimeout(r, 10))
    t.same(escapes.take(), [], `${name}: no exception escaped (each would end the process)`)
  }
  t.equal((await s.call('GET', '/')).status, 200, 'the service still answers')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM app_keys'))[0]?.n, 1, 'no key was rotated')
})
