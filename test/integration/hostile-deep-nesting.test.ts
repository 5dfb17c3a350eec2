// Deep nesting (thousands of levels) in send `data` or registration / PUT `tags` must be a 4xx
// of the spec's tables, never a stack overflow answered 500.
import t from 'tap'
import { basic, startService } from '../helpers/service'

const nest = (depth: number, open: '[' | '{"a":') => `${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`

t.test('deep nesting: 400 on the device routes, 400/422 on a send, and the service is unharmed', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })
  const player = reg.json.id as string
  const json = { 'content-type': 'application/json' }

  // Registration and PUT bodies are capped at 16 KB: 5,000 levels of `[` fit (10 KB), as do 2,500 of `{"a":`.
  for (const [depth, open] of [
    [5000, '['],
    [7000, '['],
    [2500, '{"a":'],
  ] as const) {
    const tags = `{"t":${nest(depth, open)}}`
    const r = await s.call('POST', '/api/v1/players', {
      raw: `{"app_id":"${app.id}","device_type":1,"identifier":"tok-deep-${depth}","tags":${tags}}`,
      headers: json,
    })
    t.equal(r.status, 400, `registration, tags ${depth} levels of ${open}: 400 (got ${r.status})`)
    t.match(r.status >= 400 ? r.text : '', 'tags', 'names tags')
    const p = await s.call('PUT', `/api/v1/players/${player}`, { raw: `{"app_id":"${app.id}","tags":${tags}}`, headers: json })
    t.equal(p.status, 400, `PUT, tags ${depth} levels of ${open}: 400 (got ${p.status})`)
  }
  // Sends take 256 KB: 10,000 levels.
  for (const [depth, open] of [
    [10000, '['],
    [10000, '{"a":'],
    [3000, '['],
  ] as const) {
    for (const data of [`{"t":${nest(depth, open)}}`, nest(depth, '{"a":')]) {
      const r = await s.call('POST', '/api/v1/notifications', {
        raw: `{"app_id":"${app.id}","contents":{"en":"oi"},"include_player_ids":["${player}"],"data":${data}}`,
        headers: { ...basic(app.api_key), ...json },
      })
      t.ok(r.status === 400 || r.status === 422, `send, data ${depth} levels of ${open}: 400 or 422 (got ${r.status})`)
    }
  }
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM sends'))[0]?.n, 0, 'no send was written')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices'))[0]?.n, 1, 'no device was written')
  t.equal((await s.call('GET', '/')).status, 200, 'the service still answers')
  t.notOk(
    s.logs.some((l) => /Maximum call stack/.test(JSON.stringify(l))),
    'no stack overflow was logged',
  )
})
