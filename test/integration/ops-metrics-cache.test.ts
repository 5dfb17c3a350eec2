// The operations port's /metrics, through a real service: it answers from a text computed at most
// PM_OPS_METRICS_CACHE_MS ago, and scrapes that arrive together share one computation (each computation is a
// Postgres query and two Redis commands per partition); with PM_OPS_TOKEN it answers only that bearer token, while
// /healthz and /readyz stay open for probes.
import t from 'tap'
import { loadConfig } from '../../src/core/config'
import { sample } from '../helpers/metrics'
import { startService } from '../helpers/service'
import { until } from '../helpers/until'

const NOT_FOUND = { server: 'api', method: '*', route: '/*', status: '404' }

t.test('a flood of scrapes costs one computation per interval; the text is refreshed after it', async (t) => {
  const s = await startService(t, { env: { PM_OPS_METRICS_CACHE_MS: '60000' } })
  // A collector of our own counts the computations (every collector runs once per computation).
  let computed = 0
  s.svc.deps.metrics.onScrape('probe', () => {
    computed++
  })
  await s.call('GET', '/no/such/route')
  const first = await (await fetch(`${s.opsUrl}/metrics`)).text()
  t.equal(sample(first, 'pombo_http_requests_total', NOT_FOUND), 1)
  t.equal(computed, 1)

  await s.call('GET', '/no/such/route')
  const texts = await Promise.all(Array.from({ length: 50 }, () => fetch(`${s.opsUrl}/metrics`).then((r) => r.text())))
  t.equal(computed, 1, '50 more scrapes, sequential or together, computed nothing')
  t.ok(
    texts.every((x) => x === first),
    'each answered the cached text',
  )
  t.equal(sample(texts[0] as string, 'pombo_http_requests_total', NOT_FOUND), 1, 'the second request is not in it yet')
})

t.test('scrapes that arrive while one computes wait for it; after the interval the next scrape computes', async (t) => {
  const s = await startService(t, { env: { PM_OPS_METRICS_CACHE_MS: '300' } })
  let computed = 0
  let release: () => void = () => {}
  let gate: Promise<void> | null = new Promise((r) => {
    release = r
  })
  s.svc.deps.metrics.onScrape('probe', async () => {
    computed++
    await gate
  })
  const together = Array.from({ length: 20 }, () => fetch(`${s.opsUrl}/metrics`).then((r) => r.status))
  await until('all twenty wait for the first computation', () => s.svc.ops?.metricsWaiting === 20)
  gate = null
  release()
  t.same(await Promise.all(together), Array(20).fill(200))
  t.equal(computed, 1, 'twenty scrapes together: one computation')

  await s.call('GET', '/no/such/route')
  const fresh = await until(
    'the text refreshed after the interval',
    async () => {
      const text = await (await fetch(`${s.opsUrl}/metrics`)).text()
      return sample(text, 'pombo_http_requests_total', NOT_FOUND) === 1 ? text : null
    },
    5_000,
  )
  t.ok(fresh, 'the request made after the first computation appears once the interval passed')
  // Scraping without pause for a second computes at most once per interval.
  const before = computed
  const started = Date.now()
  let scrapes = 0
  while (Date.now() - started < 1_000) {
    await (await fetch(`${s.opsUrl}/metrics`)).text()
    scrapes++
  }
  const elapsed = Date.now() - started
  t.ok(
    computed - before <= Math.ceil(elapsed / 300) + 1,
    `${scrapes} scrapes in ${elapsed} ms: ${computed - before} computations`,
  )
})

t.test('PM_OPS_TOKEN: /metrics needs the bearer token; /healthz and /readyz stay open', async (t) => {
  const token = 'ops-token-0123456789abcdef'
  const s = await startService(t, { env: { PM_OPS_TOKEN: token } })
  const none = await fetch(`${s.opsUrl}/metrics`)
  t.equal(none.status, 401, 'no token')
  t.match(none.headers.get('www-authenticate'), /^Bearer/)
  t.notMatch(await none.text(), /pombo_/, 'nothing of the metrics')
  for (const wrong of [`Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Basic ${token}`, token, 'Bearer ']) {
    t.equal((await fetch(`${s.opsUrl}/metrics`, { headers: { authorization: wrong } })).status, 401, wrong.slice(0, 12))
  }
  const ok = await fetch(`${s.opsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.status, 200)
  t.match(await ok.text(), /pombo_http_requests_total/)
  t.equal((await fetch(`${s.opsUrl}/metrics`, { headers: { authorization: `bearer ${token}` } })).status, 200, 'scheme any case')
  t.equal((await fetch(`${s.opsUrl}/healthz`)).status, 200, '/healthz open')
  t.equal((await fetch(`${s.opsUrl}/readyz`)).status, 200, '/readyz open')
})

t.test('PM_OPS_TOKEN: a short or spaced token is refused at start', async (t) => {
  t.throws(() => loadConfig({ PM_OPS_TOKEN: 'short' }), /PM_OPS_TOKEN/)
  t.throws(() => loadConfig({ PM_OPS_TOKEN: 'has a space in it, long enough' }), /PM_OPS_TOKEN/)
  t.equal(loadConfig({}).opsToken, null)
  t.equal(loadConfig({}).opsMetricsCacheMs, 5_000, 'cached 5 s by default')
})
