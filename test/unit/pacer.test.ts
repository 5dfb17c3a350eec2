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

t.test('tryTake hands out only a token at hand, and the two ways of taking share one bucket', async (t) => {
  const f = fakeTime()
  const p = new Pacer(600, f.clock, f.sleep) // a burst of 10
  const signal = new AbortController().signal
  let now = 0
  for (let i = 0; i < 10; i++) if (p.tryTake(signal)) now++
  t.equal(now, 10, 'the burst, at once')
  t.notOk(p.tryTake(signal), 'none left: no wait, no token')
  const before = f.now
  await p.take(signal)
  t.ok(f.now - before >= 99, 'take() then waits for the next one (10 a second)')
  t.notOk(p.tryTake(signal), 'that one is spent')

  p.pause(1_000)
  f.sleep(500)
  t.notOk(p.tryTake(signal), 'nothing at once while paused, whatever is in the bucket')
  const stopped = new AbortController()
  stopped.abort()
  t.notOk(p.tryTake(stopped.signal), 'nothing once stopped')
})

t.test('with a shared bucket, tryTake spends only what the bucket granted', async (t) => {
  const f = fakeTime()
  let asks = 0
  const store = {
    async take(_rate: number, want: number) {
      asks++
      return { granted: Math.min(want, 3), waitMs: 0 }
    },
    async pause() {},
  }
  const p = new Pacer(60_000, f.clock, f.sleep, store)
  const signal = new AbortController().signal
  t.notOk(p.tryTake(signal), 'nothing granted yet: it never asks Redis itself')
  t.equal(asks, 0)
  await p.take(signal)
  t.equal(asks, 1, 'take() asked once and got 3')
  t.ok(p.tryTake(signal))
  t.ok(p.tryTake(signal))
  t.notOk(p.tryTake(signal), 'the 3 granted are spent')
  t.equal(asks, 1)
})
