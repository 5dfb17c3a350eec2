// The simulators' random identifiers: the requested number of bytes as hex, and no repeat across refills of the pool.
import t from 'tap'
import { RandomHex } from '../../src/simulators/random-hex'

t.test('n bytes as lower-case hex, distinct across many refills of the pool', async (t) => {
  const r = new RandomHex(8)
  const seen = new Set<string>()
  for (let i = 0; i < 5_000; i++) seen.add(r.next()) // 40,000 bytes: the 4 KB pool refilled nine times
  t.equal(seen.size, 5_000, 'no identifier repeats')
  t.same(
    [...seen].filter((x) => !/^[0-9a-f]{16}$/.test(x)),
    [],
    'every one is 16 hex digits',
  )
})

t.test('a size that does not divide the pool still gets whole identifiers', async (t) => {
  const r = new RandomHex(3000)
  for (let i = 0; i < 4; i++) t.match(r.next(), /^[0-9a-f]{6000}$/)
})

t.test('sizes outside 1..4096 are refused', async (t) => {
  t.throws(() => new RandomHex(0), RangeError)
  t.throws(() => new RandomHex(4097), RangeError)
  t.throws(() => new RandomHex(1.5), RangeError)
})
