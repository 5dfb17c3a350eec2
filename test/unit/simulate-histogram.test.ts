// The run's latency histogram and timeline: percentiles within the buckets' width, memory fixed whatever the count.
import t from 'tap'
import { Histogram, Timeline } from '../../src/simulate/histogram'

t.test('percentiles land within ~7% of the exact ones, on a long-tailed sample', async (t) => {
  const h = new Histogram()
  const values: number[] = []
  let s = 1
  for (let i = 0; i < 50_000; i++) {
    s = (s * 48271) % 2147483647
    const v = Math.exp((s / 2147483647) * 8) // 1 ms .. ~3 s, log-uniform
    values.push(v)
    h.record(v)
  }
  values.sort((a, b) => a - b)
  for (const q of [0.5, 0.9, 0.99]) {
    const exact = values[Math.ceil(q * values.length) - 1] as number
    const got = h.quantile(q)
    t.ok(got >= exact && got <= exact * 1.07, `p${q * 100}: ${got.toFixed(1)} vs exact ${exact.toFixed(1)}`)
  }
  t.equal(h.count, 50_000)
  t.equal(h.max, values.at(-1))
  t.equal(h.quantile(1), h.max, 'the top percentile is the largest value seen')
  const buckets = h.buckets()
  t.ok(buckets.length < 200, `a few hundred buckets at most: ${buckets.length}`)
  t.equal(
    buckets.reduce((n, b) => n + b[2], 0),
    50_000,
    'every value in one bucket',
  )
})

t.test('zero, negative and absurd values are kept without breaking the scale', async (t) => {
  const h = new Histogram()
  h.record(-5)
  h.record(0)
  h.record(Number.NaN)
  h.record(1e12)
  t.equal(h.count, 4)
  t.equal(h.quantile(0.5), 1, 'the first bucket holds what is under 1 ms')
  t.equal(h.max, 1e12)
  t.equal(new Histogram().quantile(0.5), 0, 'empty: 0')
})

t.test('the timeline keeps totals and halves its resolution instead of growing', async (t) => {
  const tl = new Timeline(0, 1000, 10)
  for (let s = 0; s < 35; s++) tl.add(s * 1000 + 10, 2)
  t.ok(tl.slots.length <= 10, `bounded: ${tl.slots.length} slots`)
  t.equal(tl.slotMs, 4000, 'slots doubled twice')
  t.equal(
    tl.slots.reduce((a, b) => a + b, 0),
    70,
    'nothing lost',
  )
  tl.add(-500)
  t.equal(tl.slots[0], 9, 'an event before the start counts in the first slot')
})
