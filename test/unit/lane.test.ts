// An actor's lane (src/delivery/lane.ts): its sends oldest first, each once, exactly as a Map in insertion order
// would keep them, without walking the holes deleted sends leave behind.
import fc from 'fast-check'
import t from 'tap'
import { Lane } from '../../src/delivery/lane'

const item = (key: string) => ({ key })
const keys = (lane: Lane<{ key: string }>) => {
  const out: string[] = []
  lane.forEach((x) => {
    out.push(x.key)
  })
  return out
}

t.test('oldest first, each once; a send deleted and added again goes to the back', async (t) => {
  const lane = new Lane<{ key: string }>()
  for (const k of ['a', 'b', 'c']) lane.add(item(k))
  lane.add(item('a'))
  t.same(keys(lane), ['a', 'b', 'c'], 'adding a send already there keeps its place')
  lane.delete('a')
  lane.add(item('a'))
  t.same(keys(lane), ['b', 'c', 'a'])
  t.equal(lane.size, 3)
  t.ok(lane.has('a'))
  lane.delete('b')
  t.notOk(lane.has('b'))
  t.equal(
    lane.first((x) => (x.key === 'b' ? x : undefined)),
    undefined,
    'a deleted send is never visited',
  )
  t.equal(
    lane.first((x) => (x.key !== 'c' ? x.key : undefined)),
    'a',
    'first answers the oldest match',
  )
  lane.delete('nothing')
  t.equal(lane.size, 2)
})

t.test('behaves as a Map in insertion order under any adds and deletes', async (t) => {
  const op = fc.oneof(
    fc.record({ add: fc.integer({ min: 0, max: 40 }) }),
    fc.record({ del: fc.integer({ min: 0, max: 40 }) }),
    fc.record({ popFront: fc.constant(true) }),
  )
  // fc.check reports the first counterexample instead of throwing it: the assertion below carries it.
  const run = fc.check(
    fc.property(fc.array(op, { maxLength: 3_000 }), (ops) => {
      const lane = new Lane<{ key: string }>()
      const model = new Map<string, true>()
      for (const o of ops) {
        if ('add' in o) {
          const k = `k${o.add}`
          lane.add(item(k))
          if (!model.has(k)) model.set(k, true)
        } else if ('del' in o) {
          lane.delete(`k${o.del}`)
          model.delete(`k${o.del}`)
        } else {
          const front = lane.first((x) => x.key)
          if (front !== undefined) lane.delete(front)
          const m = model.keys().next()
          if (!m.done) model.delete(m.value)
          if (front !== m.value) return false
        }
        if (lane.size !== model.size) return false
      }
      return JSON.stringify(keys(lane)) === JSON.stringify([...model.keys()])
    }),
    { numRuns: 300 },
  )
  t.equal(
    run.failed,
    false,
    `same order and members as the Map model${run.failed ? `; counterexample ${JSON.stringify(run.counterexample)}` : ''}`,
  )
})

t.test('a long FIFO backlog costs a pick about what a short one does', async (t) => {
  const churn = (waiting: number, picks: number) => {
    const lane = new Lane<{ key: string }>()
    let n = 0
    for (let i = 0; i < waiting; i++) lane.add(item(`s${n++}`))
    const t0 = performance.now()
    for (let i = 0; i < picks; i++) {
      const k = lane.first((x) => x.key) as string
      lane.delete(k)
      lane.add(item(`s${n++}`))
    }
    return (performance.now() - t0) / picks
  }
  churn(100, 20_000) // warm-up
  // The best of five, the two sizes taking turns, so that a busy moment of a shared machine slows one reading of each
  // rather than all of one size (a loaded run once read 15×).
  let short = Number.POSITIVE_INFINITY
  let long = Number.POSITIVE_INFINITY
  for (let i = 0; i < 5; i++) {
    short = Math.min(short, churn(100, 50_000))
    long = Math.min(long, churn(20_000, 50_000))
  }
  // A Map walked from its front took ~50× longer a pick with 20,000 waiting than with 100. This lane reads 1–5× on a
  // quiet machine and up to ~10× on a loaded one (20,000 items do not stay in the caches 100 do): 20× tells the two
  // apart on either.
  t.ok(long < short * 20, `a pick with 20,000 waiting ${(long * 1000).toFixed(2)} µs, with 100 ${(short * 1000).toFixed(2)} µs`)
})

t.test('the slots never hold many more sends than the lane', async (t) => {
  const lane = new Lane<{ key: string }>()
  let n = 0
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 500; i++) lane.add(item(`s${n++}`))
    // Picked from the front, as the actor dispatches them, down to a few left.
    while (lane.size > 3) lane.delete(lane.first((x) => x.key) as string)
  }
  const slots = lane.slotCount
  t.ok(slots <= 2 * lane.size + 130, `slots ${slots} for ${lane.size} sends`)
  while (lane.size > 0) lane.delete(lane.first((x) => x.key) as string)
  t.equal(lane.slotCount, 0, 'an empty lane holds nothing')
})
