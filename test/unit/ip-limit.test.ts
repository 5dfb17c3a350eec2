import t from 'tap'
import { IpLimiter } from '../../src/http/ip-limit'
import { clientKey } from '../../src/core/ip'

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

t.test('IPv6 sources are counted by /64: a host cannot step past the limit by changing its address', async (t) => {
  const l = new IpLimiter(3, 'fixed', () => 60_000 * 7)
  t.same(
    ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff:ffff:ffff:ffff'].map((ip) => l.take(ip)),
    [true, true, true],
  )
  t.notOk(l.take('2001:0db8:0001:0002:0000:0000:0000:0009'), 'the same /64 however it is spelled')
  t.ok(l.take('2001:db8:1:3::1'), 'the next /64 is another source')
  t.equal(clientKey('2001:0DB8:0001:0002:abcd::1'), '2001:db8:1:2::/64')
  t.equal(clientKey('::ffff:10.1.2.3'), '10.1.2.3', 'an IPv4-mapped address is its IPv4 source')
  t.equal(clientKey('0000:0000:0000:0000:0000:ffff:0a01:0203'), '10.1.2.3', "uWS's spelled-out mapped form too")
  t.equal(clientKey('10.1.2.3'), '10.1.2.3')
})

t.test('memory is fixed however many sources there are, and a flood of them does not lock others out', async (t) => {
  let now = 60_000 * 9
  const l = new IpLimiter(120, 'sliding', () => now)
  const before = l.memoryBytes
  t.ok(before > 0 && before <= 2 * 1024 * 1024, `bounded: ${before} bytes`)
  // 300,000 distinct sources (IPv4 and IPv6 /64s), 2 requests each, inside one window.
  for (let i = 0; i < 150_000; i++) {
    l.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
    l.take(`2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`)
  }
  for (let i = 0; i < 150_000; i++) l.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  t.equal(l.memoryBytes, before, 'not a byte more')
  let refusedFresh = 0
  for (let i = 0; i < 1_000; i++) if (!l.take(`192.0.2.${i % 250}-${i}`)) refusedFresh++
  t.equal(refusedFresh, 0, 'new sources are still admitted (over-counting stays far below the limit)')
  for (let i = 0; i < 120; i++) l.take('198.51.100.7')
  t.notOk(l.take('198.51.100.7'), 'and a source over its limit is still refused')
  now += 120_000
  t.ok(l.take('198.51.100.7'), 'windows roll over as before')
})

t.test('a disabled limiter holds no counters', async (t) => {
  t.equal(new IpLimiter(0, 'sliding').memoryBytes, 0)
})
