// The key-resolution cache (src/apps/directory.ts): bounded LRUs, misses kept apart so a flood of unknown ids
// never evicts what real traffic uses (the spec, Authentication 6 caching; the cache must not send every lookup to Postgres).
import t from 'tap'
import { TtlCache } from '../../src/apps/directory'

function counting() {
  const loads = new Map<string, number>()
  const load = async (id: string) => {
    loads.set(id, (loads.get(id) ?? 0) + 1)
    return id.startsWith('real') ? { id } : null
  }
  return { loads, load }
}

t.test('a flood of random unknown ids evicts only other misses; known entries stay cached', async (t) => {
  const now = 1_000_000
  const c = new TtlCache<{ id: string }>(60_000, () => now, { max: 100, missMax: 50 })
  const { loads, load } = counting()
  for (let i = 0; i < 10; i++) await c.get(`real-${i}`, load)
  let found = 0
  for (let i = 0; i < 100_000; i++) if ((await c.get(`rand-${i}`, load)) !== null) found++
  t.equal(found, 0, 'every unknown id answers null')
  for (let i = 0; i < 10; i++) t.same(await c.get(`real-${i}`, load), { id: `real-${i}` })
  for (let i = 0; i < 10; i++) t.equal(loads.get(`real-${i}`), 1, `real-${i} read from Postgres once`)
  t.same(c.size, { hits: 10, misses: 50 }, 'both rooms stay within their bounds')
  await c.get('rand-99999', load)
  t.equal(loads.get('rand-99999'), 1, 'a recent miss is answered from the cache')
})

t.test('least recently used entries leave first; expiry and invalidation still apply', async (t) => {
  let now = 5_000_000
  const c = new TtlCache<{ id: string }>(60_000, () => now, { max: 3, missMax: 3 })
  const { loads, load } = counting()
  for (const id of ['real-a', 'real-b', 'real-c']) await c.get(id, load)
  await c.get('real-a', load) // a is now the most recent
  await c.get('real-d', load) // evicts b
  await c.get('real-a', load)
  await c.get('real-b', load)
  t.equal(loads.get('real-a'), 1, 'a kept')
  t.equal(loads.get('real-b'), 2, 'b was evicted and read again')
  now += 60_000
  await c.get('real-a', load)
  t.equal(loads.get('real-a'), 2, 'expired after the ttl')
  c.delete('real-a')
  await c.get('real-a', load)
  t.equal(loads.get('real-a'), 3, 'dropped at once on invalidation')
})
