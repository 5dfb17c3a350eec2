// Scrape-time collectors (src/ops/metrics.ts): one that throws, rejects or hangs past the scrape's bound is counted
// in pombo_scrape_errors_total by name, and never keeps the scrape from answering with everything else.
import t from 'tap'
import { Metrics } from '../../src/ops/metrics'

t.test('a failing or slow collector is counted, the scrape answers', async (t) => {
  const m = new Metrics()
  const g = m.gauge('pombo_test_gauge', 'a gauge filled at scrape time', [])
  m.onScrape('fills', () => g.set(5))
  m.onScrape('throws', () => {
    throw new Error('boom')
  })
  m.onScrape('rejects', async () => {
    throw new Error('boom')
  })
  m.onScrape('hangs', () => new Promise(() => {}))
  const started = Date.now()
  const text = await m.render(150)
  t.ok(Date.now() - started < 2_000, 'bounded by the timeout')
  t.match(text, /^pombo_test_gauge 5$/m, 'the good collector filled its gauge')
  for (const name of ['throws', 'rejects', 'hangs'])
    t.match(text, new RegExp(`^pombo_scrape_errors_total\\{collector="${name}"\\} 1$`, 'm'), name)
  t.notMatch(text, /collector="fills"/, 'the good collector is not counted')
})
