import t from 'tap'
import { IpLimiter } from '../../src/http/ip-limit'

t.test('fixed window: N per window, then refused until the next window', async (t) => {
  let now = 60_000 * 100
  const l = new IpLimiter(3, 'fixed', () => now)
  t.same([l.take('a'), l.take('a'), l.take('a'), l.take('a')], [true, true, true, false])
  t.ok(l.take('b'), 'each address has its own count')
  now += 59_999
  t.notOk(l.take('a'))
  now += 1
  t.ok(l.take('a'), 'a new window starts afresh')
})

t.test('sliding window: the previous minute still weighs in', async (t) => {
  let now = 60_000 * 100
  const l = new IpLimiter(10, 'sliding', () => now)
  for (let i = 0; i < 10; i++) t.ok(l.take('a'))
  t.notOk(l.take('a'))
  now += 60_000 // start of the next window: the full previous count still applies
  t.notOk(l.take('a'))
  now += 30_000 // half-way: half the previous count (5) is still in the last minute
  for (let i = 0; i < 5; i++) t.ok(l.take('a'), `half-way ${i}`)
  t.notOk(l.take('a'))
  now += 120_000 // two windows later nothing remains
  t.ok(l.take('a'))
})

t.test('limit 0 disables the limiter', async (t) => {
  const l = new IpLimiter(0, 'sliding')
  for (let i = 0; i < 1000; i++) if (!l.take('a')) t.fail('refused')
  t.ok(l.take('a'))
})
