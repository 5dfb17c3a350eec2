import t from 'tap'
import { Pacer } from '../../src/delivery/pacer'

/** A clock that sleeping moves: the pacer's waits become exact arithmetic. */
function fakeTime(start = 1_000_000) {
  let now = start
  return {
    clock: () => now,
    sleep: async (ms: number) => {
      now += ms
    },
    get now() {
      return now
    },
  }
}

t.test('rate_por_min 600 lets about 10 per second through after a one-second burst', async (t) => {
  const f = fakeTime()
  const p = new Pacer(600, f.clock, f.sleep)
  const signal = new AbortController().signal
  const start = f.now
  for (let i = 0; i < 110; i++) await p.take(signal)
  const elapsed = f.now - start
  // 10 as the burst, then 100 at 10/s.
  t.ok(elapsed >= 9_900 && elapsed <= 10_100, `110 tokens in ${elapsed} ms`)
})

t.test('a 429 pauses the bucket for Retry-After', async (t) => {
  const f = fakeTime()
  const p = new Pacer(60_000, f.clock, f.sleep)
  const signal = new AbortController().signal
  await p.take(signal)
  p.pause(5_000)
  const before = f.now
  await p.take(signal)
  t.ok(f.now - before >= 5_000)
})

t.test('stop wins over a wait', async (t) => {
  const p = new Pacer(1, Date.now)
  const ac = new AbortController()
  t.equal(await p.take(ac.signal), true, 'the burst token')
  setTimeout(() => ac.abort(), 20)
  t.equal(await p.take(ac.signal), false)
})
