// The SDK's retry timing: the doubled, capped, jittered backoff and the reading of Retry-After.
import { backoffMs, retryAfterMs } from '@pombo/sdk'
import fc from 'fast-check'
import t from 'tap'

t.test('backoff: doubles from baseMs, capped at maxMs, jitter within the upper half', async (t) => {
  const p = { baseMs: 1000, maxMs: 60_000 }
  t.equal(
    backoffMs(1, p, () => 1),
    1000,
  )
  t.equal(
    backoffMs(1, p, () => 0),
    500,
  )
  t.equal(
    backoffMs(2, p, () => 1),
    2000,
  )
  t.equal(
    backoffMs(3, p, () => 1),
    4000,
  )
  t.equal(
    backoffMs(10, p, () => 1),
    60_000,
    'the ceiling',
  )
  t.equal(
    backoffMs(10_000, p, () => 1),
    60_000,
    'no overflow for any count',
  )
  t.equal(
    backoffMs(0, p, () => 1),
    1000,
    'a count below 1 is the first failure',
  )
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 200 }),
      fc.integer({ min: 1, max: 100_000 }),
      fc.integer({ min: 0, max: 10_000_000 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (n, base, extra, r) => {
        const pol = { baseMs: base, maxMs: base + extra }
        const nominal = Math.min(pol.maxMs, base * 2 ** (n - 1))
        const d = backoffMs(n, pol, () => r)
        const next = backoffMs(n + 1, pol, () => 1)
        return d >= Math.floor(nominal / 2) && d <= Math.ceil(nominal) && d <= pol.maxMs && next >= Math.min(nominal, pol.maxMs)
      },
    ),
  )
})

t.test('Retry-After: delay-seconds or an HTTP-date; anything else is no instruction', async (t) => {
  const now = Date.parse('2026-11-26T12:00:00Z')
  t.equal(retryAfterMs('60', now), 60_000)
  t.equal(retryAfterMs(' 0 ', now), 0)
  t.equal(retryAfterMs('Thu, 26 Nov 2026 12:00:30 GMT', now), 30_000)
  t.equal(retryAfterMs('Thu, 26 Nov 2026 11:00:00 GMT', now), 0, 'a date in the past: at once')
  t.equal(retryAfterMs('-5', now), undefined)
  t.equal(retryAfterMs('1.5', now), undefined)
  t.equal(retryAfterMs('soon', now), undefined)
  t.equal(retryAfterMs('', now), undefined)
  t.equal(retryAfterMs(null, now), undefined)
})
