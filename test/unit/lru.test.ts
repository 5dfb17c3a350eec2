// src/core/lru.ts: a bounded LRU that allocates as it fills. Model-based: random sequences of operations played
// against it and against lru-cache made at the full bound (the behaviour it keeps), compared after every step:
// answers, size, recency order and every dispose call. Then what it is for: memory follows use, not the bound.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import { LRUCache } from 'lru-cache'
import t from 'tap'
import { Lru } from '../../src/core/lru'

type Op = { op: 'set'; k: number; v: number } | { op: 'get' | 'peek' | 'has' | 'delete'; k: number } | { op: 'clear' }

const op = (keys: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 120, arbitrary: fc.record({ op: fc.constant('set' as const), k: fc.nat(keys), v: fc.nat(1000) }) },
    {
      weight: 60,
      arbitrary: fc.record({ op: fc.constantFrom('get' as const, 'peek' as const, 'has' as const), k: fc.nat(keys) }),
    },
    { weight: 20, arbitrary: fc.record({ op: fc.constant('delete' as const), k: fc.nat(keys) }) },
    { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
  )

/** The operation on either cache; what it answers (null for set and clear). */
function apply(c: Lru<number, number> | LRUCache<number, number>, o: Op): unknown {
  switch (o.op) {
    case 'set':
      c.set(o.k, o.v)
      return null
    case 'clear':
      c.clear()
      return null
    default:
      return c[o.op](o.k)
  }
}

t.test('plays every sequence exactly as lru-cache at its full bound: answers, size, order, disposals', async (t) => {
  await fc.assert(
    fc.property(fc.integer({ min: 1, max: 700 }), fc.array(op(900), { minLength: 1, maxLength: 3000 }), (max, ops) => {
      const gone: { lru: string[]; ref: string[] } = { lru: [], ref: [] }
      const lru = new Lru<number, number>({ max, dispose: (v, k, why) => gone.lru.push(`${k}=${v}:${why}`) })
      const ref = new LRUCache<number, number>({ max, dispose: (v, k, why) => gone.ref.push(`${k}=${v}:${why}`) })
      for (const [i, o] of ops.entries()) {
        const a = apply(lru, o)
        const b = apply(ref, o)
        if (a !== b) throw new Error(`step ${i} ${JSON.stringify(o)}: ${a} against ${b}`)
        if (lru.size !== ref.size) throw new Error(`step ${i}: size ${lru.size} against ${ref.size}`)
        if (lru.capacity > max) throw new Error(`step ${i}: capacity ${lru.capacity} over the bound ${max}`)
      }
      t.same([...lru.entries()], [...ref.entries()], 'same entries, most recent first')
      t.same([...lru.values()], [...ref.values()])
      t.same(gone.lru, gone.ref, 'the same disposals, in the same order (growing disposes nothing)')
    }),
    { numRuns: 60 },
  )
})

t.test('room grows by doubling from 256 to the bound, only when full; the least recent goes once at the bound', async (t) => {
  const lru = new Lru<number, string>({ max: 1000 })
  t.equal(lru.capacity, 256, 'starts with room for 256')
  for (let i = 0; i < 256; i++) lru.set(i, `v${i}`)
  t.equal(lru.capacity, 256, 'full, not grown yet')
  lru.set(0, 'again')
  t.equal(lru.capacity, 256, 'replacing a value is not growing')
  lru.set(256, 'v256')
  t.equal(lru.capacity, 512)
  for (let i = 257; i < 1000; i++) lru.set(i, `v${i}`)
  t.equal(lru.capacity, 1000, 'never past the bound')
  t.equal(lru.size, 1000)
  lru.get(1) // 1 is now recent: 2 is the least recently used (0 was set again after 1 had been set)
  lru.set(1000, 'v1000')
  t.equal(lru.size, 1000)
  t.equal(lru.peek(2), undefined, 'the least recently used left')
  t.equal(lru.peek(1), 'v1', 'a recently read entry stayed')
  t.equal(lru.peek(0), 'again')
  t.equal(new Lru({ max: 10 }).capacity, 10, 'a bound under 256 is allocated as it is')
  t.throws(() => new Lru({ max: 0 }), /positive integer/)
  t.throws(() => new Lru({ max: 1.5 }), /positive integer/)
})

t.test('memory follows what is held: eight caches at the default bounds cost next to nothing until used', async (t) => {
  // The bounds of the process's caches (src/core/config.ts DEFAULT_LIMITS): keys and misses, receipt keys, credentials
  // (twice the app bound), providers, in-app packages, device profiles, webhook secrets.
  const bounds = [200_000, 20_000, 100_000, 200_000, 200_000, 20, 500_000, 100_000]
  // A full collection before each reading, so a collection the allocation itself set off (a busy machine's heap
  // grows late) cannot make the difference negative: what is measured is what the caches hold.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const measure = (make: (max: number) => unknown) => {
    gc()
    const before = process.memoryUsage()
    const t0 = performance.now()
    const held = bounds.map(make)
    const ms = performance.now() - t0
    gc()
    const after = process.memoryUsage()
    return { ms, bytes: after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers, held }
  }
  const full = measure((max) => new LRUCache({ max }))
  const grown = measure((max) => new Lru({ max }))
  t.comment(
    `lru-cache: ${(full.bytes / 1e6).toFixed(1)} MB in ${full.ms.toFixed(0)} ms; Lru: ${(grown.bytes / 1e6).toFixed(2)} MB in ${grown.ms.toFixed(1)} ms`,
  )
  t.ok(full.bytes > 20e6, 'lru-cache allocates its bound at once (what this module avoids)')
  t.ok(grown.bytes < full.bytes / 20, 'Lru allocates a small fraction of it')
})
