// The unit tier's shards (test/unit-tier) together run every unit file exactly once, whatever files are added.
import { readdirSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { shardFiles } from '../unit-tier/shard'

t.test('two shards split test/unit without loss or overlap', async (t) => {
  const all = readdirSync(path.resolve(__dirname))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
  const a = shardFiles(0, 2)
  const b = shardFiles(1, 2)
  t.ok(all.includes('unit-tier.test.ts'), 'this file is itself in the tier')
  t.same([...a, ...b].sort(), all, 'the union is every unit file')
  t.same(
    a.filter((f) => b.includes(f)),
    [],
    'no file is in both',
  )
  t.ok(Math.abs(a.length - b.length) <= 1, 'the shards hold about as many files')
})
