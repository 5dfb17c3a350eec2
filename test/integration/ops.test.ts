// The operations port (docs/spec/contract.md "Operations"): metrics by route pattern after real requests, sends, deliveries
// and receipts; /healthz on every role; /readyz 200, then 503 while draining and while Postgres is cut; request ids
// carried from X-Request-Id / traceparent into the logs and the answer, hostile values ignored; PM_OPS_PORT=0 off.
import t from 'tap'
import { sample } from '../helpers/metrics'
import { deliveredSend } from '../helpers/receipts'
import { DATABASE_URL, startService } from '../helpers/service'
import { postgresBehindCut } from '../helpers/tcp-cut'

async function get(url: string): Promise<{ status: number; text: string; type: string | null }> {
  const r = await fetch(url)
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') }
}

t.test(
  'metrics: HTTP by route pattern (never the raw path), sends, deliveries, receipts, provider latency, streams',
  async (t) => {
    const w = await deliveredSend(t, { devices: 2 })
    const [a] = w.players as [string]
    t.equal((await w.post(w.body(a))).status, 200)
    t.equal((await w.post(w.body(a))).status, 200)
    await w.s.call('GET', `/api/v1/players/${a}?app_id=${w.app.id}`)
    await w.s.call('GET', '/no/such/path/secret-token')
    // The send's stream entry is acknowledged just after it closes: scrape until nothing is pending.
    let m = await get(`${w.s.opsUrl}/metrics`)
    for (let i = 0; i < 100 && /^pombo_stream_pending\{[^}]*\} [1-9]/m.test(m.text); i++) {
      await new Promise((r) => setTimeout(r, 50))
      m = await get(`${w.s.opsUrl}/metrics`)
    }
    t.equal(m.status, 200)
    t.match(m.type, /^text\/plain/)
    const text = m.text
    t.equal(
      sample(text, 'pombo_http_requests_total', { server: 'api', method: 'POST', route: '/api/v1/receipts', status: '200' }),
      2,
    )
    t.ok(sample(text, 'pombo_http_requests_total', { method: 'POST', route: '/api/v1/notifications', status: '200' }))
    t.ok(sample(text, 'pombo_http_requests_total', { route: '/api/v1/players/:player_id' }), 'the pattern names the route')
    t.equal(sample(text, 'pombo_http_requests_total', { method: '*', route: '/*', status: '404' }), 1)
    t.notOk(text.includes(a) || text.includes('secret-token'), 'no raw path or id in any label')
    t.ok(sample(text, 'pombo_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/receipts' }))
    t.equal(sample(text, 'pombo_sends_accepted_total', { lane: '0' }), 1)
    t.equal(sample(text, 'pombo_deliveries_total', { platform: 'android', outcome: 'successful' }), 2)
    t.equal(sample(text, 'pombo_provider_request_duration_seconds_count', { platform: 'fcm' }), 2)
    t.equal(sample(text, 'pombo_provider_outcomes_total', { platform: 'fcm', kind: 'accepted' }), 2)
    t.equal(sample(text, 'pombo_receipts_total', { evento: 'recebido', outcome: 'counted' }), 1)
    t.equal(sample(text, 'pombo_receipts_total', { evento: 'recebido', outcome: 'duplicate' }), 1)
    for (const p of ['0', '1', '2', '3']) {
      t.equal(sample(text, 'pombo_stream_pending', { partition: p }), 0, `partition ${p}: nothing pending after the send closed`)
      t.not(sample(text, 'pombo_stream_length', { partition: p }), undefined)
      t.not(sample(text, 'pombo_stream_oldest_pending_age_seconds', { partition: p }), undefined)
    }
    t.ok(sample(text, 'pombo_group_commit_batch_size_count', { writer: 'receipts' }), 'receipt batches')
    t.ok(sample(text, 'pombo_group_commit_batch_size_count', { writer: 'registrations' }), 'registration batches')
    t.ok(sample(text, 'pombo_group_commit_batch_size_count', { writer: 'outcomes' }), 'outcome batches')
    t.equal(sample(text, 'pombo_group_commit_queued', { writer: 'sends' }), 0)
    t.equal(sample(text, 'pombo_group_commit_inflight', { writer: 'receipts' }), 0)
    t.not(sample(text, 'pombo_pg_pool_connections', { pool: 'main' }), undefined)
    t.not(sample(text, 'pombo_pg_pool_waiting', { pool: 'main' }), undefined)
    t.match(text, /^pombo_actors_running \d+$/m)
    t.match(text, /^pombo_worker_sends_held \d+$/m)
    t.match(text, /^pombo_worker_sends_max 10000$/m, 'PM_WORKER_MAX_SENDS by default')
    t.match(text, /^pombo_h2_sessions\{origin="https:\/\/127\.0\.0\.1:\d+"\} [1-9]/m)
    t.match(text, /^pombo_webhook_destinations_disabled 0$/m)
    t.match(text, /^pombo_webhook_lag_seconds 0$/m)
    t.match(text, /# TYPE pombo_webhook_events_total counter/)
    t.notMatch(text, /pombo_scrape_errors_total\{/, 'every collector succeeded')
  },
)

t.test('/healthz and /readyz on a worker-only process; /readyz 503 while draining', async (t) => {
  const s = await startService(t, { roles: ['worker'], dispatcher: false })
  t.equal(s.svc.api, null)
  t.equal((await get(`${s.opsUrl}/healthz`)).status, 200)
  const ready = await get(`${s.opsUrl}/readyz`)
  t.equal(ready.status, 200)
  t.same(JSON.parse(ready.text), { postgres: true, redis: true, draining: false, starting: false })
  t.equal((await get(`${s.opsUrl}/metrics`)).status, 200)
  t.equal((await get(`${s.opsUrl}/nope`)).status, 404)
  t.equal((await fetch(`${s.opsUrl}/metrics`, { method: 'POST' })).status, 405)
  s.svc.drain()
  const draining = await get(`${s.opsUrl}/readyz`)
  t.equal(draining.status, 503)
  t.equal(JSON.parse(draining.text).draining, true)
  t.equal((await get(`${s.opsUrl}/healthz`)).status, 200, 'still alive while draining')
})

t.test('/readyz answers 503 while Postgres is cut, 200 again when it is back', async (t) => {
  const cut = await postgresBehindCut(t, DATABASE_URL)
  const s = await startService(t, { env: { DATABASE_URL: cut.url } })
  t.equal((await get(`${s.opsUrl}/readyz`)).status, 200)
  await cut.proxy.cut()
  const down = await get(`${s.opsUrl}/readyz`)
  t.equal(down.status, 503)
  t.same(JSON.parse(down.text), { postgres: false, redis: true, draining: false, starting: false })
  t.equal((await get(`${s.opsUrl}/healthz`)).status, 200, 'alive: a load balancer takes it out, a supervisor leaves it')
  await cut.proxy.open()
  t.equal((await get(`${s.opsUrl}/readyz`)).status, 200)
})

t.test('request ids: X-Request-Id and traceparent carried into the logs and the answer; hostile values ignored', async (t) => {
  const s = await startService(t, { logLevel: 'debug' })
  const linesOf = (id: string) => s.logs.filter((l) => l.msg === 'request' && l.request_id === id)

  const given = await s.call('GET', '/', { headers: { 'x-request-id': 'lb-7f3a/req:42' } })
  const own = given.headers.get('x-pm-request-id') as string
  t.ok(own && own !== 'lb-7f3a/req:42', 'X-Pm-Request-Id stays the identifier of the call')
  t.equal(given.headers.get('x-request-id'), 'lb-7f3a/req:42')
  t.match(linesOf(own), [{ level: 30, correlation_id: 'lb-7f3a/req:42', route: '/', status: 200, method: 'GET' }])

  const trace = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const traced = await s.call('GET', '/nope', { headers: { traceparent: trace } })
  t.equal(traced.headers.get('x-request-id'), '4bf92f3577b34da6a3ce929d0e0e4736')
  t.equal(traced.json.explain.request_id, traced.headers.get('x-pm-request-id'), 'the envelope names our id')
  t.match(linesOf(traced.headers.get('x-pm-request-id') as string), [
    { correlation_id: '4bf92f3577b34da6a3ce929d0e0e4736', status: 404 },
  ])

  const both = await s.call('GET', '/', { headers: { 'x-request-id': 'mine', traceparent: trace } })
  t.equal(both.headers.get('x-request-id'), 'mine', 'X-Request-Id wins over traceparent')

  const hostile: Array<Record<string, string>> = [
    { 'x-request-id': 'a'.repeat(129) },
    { 'x-request-id': 'has space' },
    { 'x-request-id': 'tab\there' },
    { 'x-request-id': 'a\u00e9b' },
    { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
    { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01' },
    { traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    { traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01' },
    { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra' },
    { traceparent: 'garbage' },
  ]
  for (const h of hostile) {
    const r = await s.call('GET', '/', { headers: h })
    t.equal(r.status, 200, JSON.stringify(h))
    t.equal(r.headers.get('x-request-id'), null, `ignored: ${JSON.stringify(h)}`)
    const [line] = linesOf(r.headers.get('x-pm-request-id') as string)
    t.ok(line && line.correlation_id === undefined, 'nothing carried into the log')
  }
  // A future version may append fields (W3C Trace Context §3.2.4).
  const future = await s.call('GET', '/', {
    headers: { traceparent: '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz' },
  })
  t.equal(future.headers.get('x-request-id'), '4bf92f3577b34da6a3ce929d0e0e4736')
})

t.test('access log: hot routes at debug, others at info; PM_ACCESS_LOG=errors and off', async (t) => {
  const info = await startService(t)
  await info.call('POST', '/api/v1/players', {
    body: { app_id: '00000000-0000-4000-8000-000000000000', device_type: 1, identifier: 'x' },
  })
  await info.call('POST', '/api/v1/receipts', { raw: '{}', headers: { 'content-type': 'application/json' } })
  await info.call('GET', '/')
  const lines = info.logs.filter((l) => l.msg === 'request')
  t.match(
    lines.find((l) => l.route === '/'),
    { level: 30, status: 200 },
  )
  t.match(
    lines.find((l) => l.route === '/api/v1/players'),
    { level: 30, status: 400 },
    'a refused hot request is logged at info',
  )

  const debug = await startService(t, { logLevel: 'debug', env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await debug.createApp()
  await debug.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-access' } })
  t.match(
    debug.logs.find((l) => l.msg === 'request' && l.route === '/api/v1/players'),
    { level: 20, status: 200 },
    'a hot route answered 200 is at debug',
  )

  const errors = await startService(t, { env: { PM_ACCESS_LOG: 'errors' } })
  await errors.call('GET', '/')
  await errors.call('GET', '/nope')
  t.same(
    errors.logs.filter((l) => l.msg === 'request').map((l) => l.status),
    [404],
  )
  const off = await startService(t, { env: { PM_ACCESS_LOG: 'off' } })
  await off.call('GET', '/nope')
  t.equal(off.logs.filter((l) => l.msg === 'request').length, 0)
})

t.test('PM_OPS_PORT=0: no operations port, the API serves on', async (t) => {
  const s = await startService(t, { ops: false })
  t.equal(s.svc.ops, null)
  t.equal((await s.call('GET', '/')).status, 200)
  const text = await s.svc.deps.metrics.registry.metrics()
  t.notMatch(text, /pombo_http_requests_total\{/, 'no HTTP series measured: nobody could read them')
})

t.test('the API and the dashboard both answer GET /: their series stay apart (label server)', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  await s.call('GET', '/')
  await fetch(`${s.dashboardUrl}/`).then((r) => r.text())
  await fetch(`${s.dashboardUrl}/`).then((r) => r.text())
  const text = (await get(`${s.opsUrl}/metrics`)).text
  t.equal(sample(text, 'pombo_http_requests_total', { server: 'api', method: 'GET', route: '/', status: '200' }), 1)
  t.equal(sample(text, 'pombo_http_requests_total', { server: 'dashboard', method: 'GET', route: '/', status: '200' }), 2)
})
