// The tiers' shards (scripts/test-tiers.mjs, test/tiers) together run every test file exactly once, whatever files
// are added: the unit shards split test/unit; the integration shards and the files that run alone split the rest.
import { existsSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import t, { type Test } from 'tap'

const tiers = import('../../scripts/test-tiers.mjs')

function splits(t: Test, shards: string[][], all: string[]): void {
  t.same(shards.flat().sort(), [...all].sort(), 'the union is every file of the tier')
  t.equal(new Set(shards.flat()).size, shards.flat().length, 'no file is in two shards')
  const sizes = shards.map((s) => s.length)
  t.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `the shards hold about as many files (${sizes.join(', ')})`)
}

t.test('the unit shards split test/unit without loss or overlap, the slow files in the first', async (t) => {
  const { shardFiles, testFiles, UNIT_DIR, UNIT_SHARDS, UNIT_SLOW } = await tiers
  const all = testFiles(UNIT_DIR)
  t.ok(all.includes('test/unit/test-tiers.test.ts'), 'this file is itself in the tier')
  t.same(
    UNIT_SLOW.filter((f) => !all.includes(f)),
    [],
    'every slow unit file exists',
  )
  const shards = Array.from({ length: UNIT_SHARDS }, (_, i) => shardFiles('unit', i, UNIT_SHARDS))
  t.same(shards[0], UNIT_SLOW, 'the first shard runs the slow files, only them')
  t.same(shards.flat().sort(), [...all].sort(), 'the union is every unit file')
  t.equal(new Set(shards.flat()).size, shards.flat().length, 'no file is in two shards')
  if (UNIT_SHARDS > 2)
    splits(
      t,
      shards.slice(1),
      all.filter((f) => !UNIT_SLOW.includes(f)),
    )
})

t.test('the integration shards, the slow shards and the files run alone split the rest without loss or overlap', async (t) => {
  const { ALONE, INTEGRATION_SHARDS, integrationFiles, shardFiles, SLOW, SLOW_SHARDS } = await tiers
  const all = integrationFiles()
  t.ok(all.length > 100, `the tier is every file outside test/unit (${all.length})`)
  t.notOk(
    all.some((f) => f.startsWith('test/unit/')),
    'no unit file',
  )
  t.same(
    [...SLOW, ...ALONE].filter((f) => !all.includes(f)),
    [],
    'every file named slow or alone exists',
  )
  t.same(
    SLOW.filter((f) => ALONE.includes(f)),
    [],
    'no file is both slow and alone',
  )
  const shards = Array.from({ length: INTEGRATION_SHARDS }, (_, i) => shardFiles('integration', i, INTEGRATION_SHARDS))
  splits(
    t,
    shards,
    all.filter((f) => !ALONE.includes(f) && !SLOW.includes(f)),
  )
  const slow = Array.from({ length: SLOW_SHARDS }, (_, i) => shardFiles('slow', i, SLOW_SHARDS))
  splits(t, slow, SLOW)
  t.same(
    slow[0]?.slice(0, 2),
    [SLOW[0], SLOW[2 * SLOW_SHARDS - 1]],
    'dealt back and forth: the slowest shard gets the least slow of the next round',
  )
  t.same(slow[SLOW_SHARDS - 1]?.slice(0, 2), [SLOW[SLOW_SHARDS - 1], SLOW[SLOW_SHARDS]], 'and the last shard the next one')
})

t.test('every shard entry tap is given exists', async (t) => {
  const { REPO_ROOT, shardEntries } = await tiers
  for (const tier of ['unit', 'integration', 'slow', 'cluster'] as const)
    for (const f of shardEntries(tier)) t.ok(existsSync(path.join(REPO_ROOT, f)), f)
})

// `npm run test:unit` loads the guard through NODE_OPTIONS; a full `npm test` starts the unit shards in the
// integration tier's run, with the services' addresses in its environment, and test/tiers/shard.ts applies the guard.
// This file runs in one of those processes either way (`npm test -- test/unit/test-tiers.test.ts` runs it as the unit
// tier).
t.test('a unit test process has the services out of reach, however the suite was started', async (t) => {
  const { SERVICE_ENV } = await tiers
  for (const k of SERVICE_ENV) t.equal(process.env[k], undefined, `${k} is not set`)
  t.equal(net.Socket.prototype.connect.name, 'guardedConnect', 'a connection to Postgres or Redis stops the process')
})

t.test("tap's Test class is built with the plugins package.json names, as npm test makes sure first", async (t) => {
  const { tapPlugins } = await import('../../scripts/tap-plugins.mjs')
  const argv = process.argv
  // npm test's own flags on the command line (npm run test:unit) are not read as tap's.
  process.argv = [...argv.slice(0, 2), '--unit', 'test/unit/x.test.ts']
  const { wanted, built } = await tapPlugins().finally(() => {
    process.argv = argv
  })
  t.ok(wanted.includes('@tapjs/asserts') && !wanted.includes('@tapjs/typescript'), 'the configured set, as read')
  // A run that records coverage (CI) keeps a fresh install's default set (scripts/test.mjs says why).
  if (process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1') return
  t.equal(built, wanted, 'the built set is read from its file and is the configured one')
  t.notOk(
    process.execArgv.some((a) => /@tapjs[\\/](typescript|mock)/.test(a)),
    "this process started without the default plugins' loaders",
  )
})
