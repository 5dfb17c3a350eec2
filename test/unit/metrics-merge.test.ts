// The operations port of a process group (src/group/) merges its workers' series into the parent's: counters and
// histograms summed by label set, a process's own gauges summed, a deployment-wide gauge (read alike by several
// processes) by its maximum; a worker that does not answer is left out of that scrape, never blocking it.
import t from 'tap'
import { Metrics } from '../../src/ops/metrics'

function sample(text: string, line: string): number | undefined {
  const m = new RegExp(`^${line.replace(/[{}()[\]|.+*?^$\\]/g, '\\$&')} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : undefined
}

t.test('counters, histograms and gauges of two processes merge by their rule', async (t) => {
  const parent = new Metrics()
  const worker = new Metrics()
  parent.addPeer(() => worker.json())
  parent.deliveries.labels('android', 'successful').inc(2)
  worker.deliveries.labels('android', 'successful').inc(5)
  worker.deliveries.labels('ios', 'failed').inc(1)
  parent.providerDuration.labels('android').observe(0.003)
  worker.providerDuration.labels('android').observe(0.2)
  const own = (m: Metrics, n: number) => m.gauge('pombo_pg_pool_max', 'pool share', ['pool']).labels('main').set(n)
  own(parent, 16)
  own(worker, 12)
  const shared = (m: Metrics, n: number) => {
    m.allow('partition', ['3']) // as collectStreams wires it (labels take values from fixed sets: src/ops/labels.ts)
    m.gauge('pombo_stream_length', 'stream length', ['partition'], 'max').labels('3').set(n)
  }
  shared(parent, 40)
  shared(worker, 41)

  const text = await parent.render()
  t.equal(sample(text, 'pombo_deliveries_total{platform="android",outcome="successful"}'), 7, 'a counter is summed')
  t.equal(sample(text, 'pombo_deliveries_total{platform="ios",outcome="failed"}'), 1, 'a series only the worker has is kept')
  t.equal(sample(text, 'pombo_provider_request_duration_seconds_count{platform="android"}'), 2, 'histogram counts summed')
  t.equal(sample(text, 'pombo_provider_request_duration_seconds_bucket{platform="android",le="0.005"}'), 1, 'buckets summed')
  t.equal(sample(text, 'pombo_provider_request_duration_seconds_bucket{platform="android",le="0.25"}'), 2)
  t.equal(sample(text, 'pombo_pg_pool_max{pool="main"}'), 28, "each process's own gauge is summed")
  t.equal(
    sample(text, 'pombo_stream_length{partition="3"}'),
    41,
    'a deployment-wide gauge takes the maximum, not twice the figure',
  )
  const helps = text.split('\n').filter((l) => l.startsWith('# HELP '))
  t.equal(new Set(helps).size, helps.length, 'each family once')
})

t.test('a peer that is gone or silent is left out; the scrape still answers', async (t) => {
  const parent = new Metrics()
  parent.deliveries.labels('android', 'successful').inc(3)
  parent.addPeer(async () => null)
  parent.addPeer(() => new Promise(() => {}))
  const started = Date.now()
  const text = await parent.render(200)
  t.ok(Date.now() - started < 2_000, 'bounded by the scrape timeout')
  t.equal(sample(text, 'pombo_deliveries_total{platform="android",outcome="successful"}'), 3)
})
