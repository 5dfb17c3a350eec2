// Which test files a full run starts, and in which processes (scripts/test.mjs; test/tiers/shard.ts imports a
// shard's files). Starting a test process costs about a second of CPU before its first test (Node, tap's hooks, the
// TypeScript loader, and compiling and evaluating the same ~250 src/ modules again), and on a 2-core machine the
// suite is CPU-bound, so a file whose own work is small runs inside a shard: a long-lived process that imports its
// share of the files one after another. Every file's top-level tests join that process's root and run in order, so
// a shared file must leave no global state behind (env, timers, root-level hooks, monkey-patches). Every file also
// runs alone with `npm test -- <file>`, which is how a failure is best read.
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const UNIT_DIR = 'test/unit'
/** What a unit test process runs without: the services' addresses (scripts/test.mjs, test/tiers/shard.ts). */
export const SERVICE_ENV = [
  'DATABASE_URL',
  'REDIS_URL',
  'PM_DATABASE_DIRECT_URL',
  'PM_TEST_REDIS_CLUSTER_NODES',
  'REDIS_CLUSTER_NODES',
]
export const UNIT_SHARDS = 2
/** Unit files that mostly wait (a hostile HTTP/2 peer's stalls and timeouts, one case after another: ~14 s). The
 *  unit tier's first shard runs them and the other shards the rest, so the tier lasts as long as they do. */
export const UNIT_SLOW = ['test/unit/h2-hostile-peer.test.ts']
export const INTEGRATION_SHARDS = 6

/**
 * Files of the integration tier that keep a process of their own: root-level hooks (t.before/t.teardown on the
 * root) or process state (process.env changed; a check, when the file ends, that no timer is left).
 */
export const ALONE = [
  'test/integration/sends-model.test.ts',
  'test/integration/schema-pool.test.ts',
  'test/integration/providers-pool.test.ts',
  'test/integration/providers-fcm.test.ts',
  'test/integration/providers-apns.test.ts',
]

/**
 * Files that mostly wait (a clock to pass, a process to restart, a browser) or whose children do the work (npm, tsc,
 * `pombo` processes), slowest first. They share SLOW_SHARDS shards of their own: their waits overlap with the other
 * shards' CPU instead of holding back the small files behind them (tap starts entries in the order of their paths,
 * so these start as the first ones end: scripts/test.mjs). They are dealt out in this
 * order, back and forth (1, 2, …, n, n, …, 2, 1, 1, 2, …), so each shard gets about as much of the slow and the
 * less slow.
 */
export const SLOW = [
  'test/integration/delivery-crash.test.ts',
  'test/integration/simulate.test.ts',
  'test/integration/sends-scheduled.test.ts',
  'test/integration/audit.test.ts',
  'test/integration/build.test.ts',
  'test/fuzz/hostile.test.ts',
  'test/integration/delivery-rules.test.ts',
  'test/browser/dashboard-sends.test.ts',
  'test/integration/dashboard-people.test.ts',
  'test/integration/erasure.test.ts',
  'test/integration/delivery-slices.test.ts',
  'test/integration/readme-first-minutes.test.ts',
  'test/integration/grpc-crash.test.ts',
  'test/browser/dashboard.test.ts',
  'test/integration/redis-cluster-failover.test.ts',
  'test/integration/serve-group.test.ts',
  'test/integration/delivery.test.ts',
  'test/integration/dashboard-erasure.test.ts',
  'test/integration/receipts-model.test.ts',
  'test/integration/delivery-handback.test.ts',
  'test/browser/sdk-push.test.ts',
  'test/integration/webhooks-turns.test.ts',
]
export const SLOW_SHARDS = 5

/** The suites a full run repeats with every service on the Redis Cluster: delivery, sends, receipts, the shared pace. */
export const CLUSTER_SUITES = [
  'test/integration/delivery.test.ts',
  'test/integration/sends-create.test.ts',
  'test/integration/receipts.test.ts',
  'test/integration/pace-shared.test.ts',
  'test/integration/group-release.test.ts',
]

/** Test files under `dir` (repository-relative), sorted; the folder `skip` left out. */
export function testFiles(dir, skip) {
  const out = []
  const walk = (d) => {
    for (const e of readdirSync(path.join(REPO_ROOT, d), { withFileTypes: true })) {
      const p = `${d}/${e.name}`
      if (e.isDirectory() && p !== skip && e.name !== 'node_modules') walk(p)
      else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(p)
    }
  }
  walk(dir)
  return out.sort()
}

/** Every file of the integration tier: the test files outside test/unit. */
export const integrationFiles = () => testFiles('test', UNIT_DIR)

/** The shard (0 … count-1) that the i-th of a list dealt back and forth over `count` shards goes to. */
const dealt = (i, count) => (Math.floor(i / count) % 2 === 0 ? i % count : count - 1 - (i % count))

/**
 * The files shard `index` of `count` of a tier runs: for the integration tier every count-th file of the sorted list
 * (its slow files and those run alone left out); for `slow`, its deal of SLOW; for the unit tier, UNIT_SLOW in the
 * first shard and every (count-1)-th of the other files in each of the others.
 */
export function shardFiles(tier, index, count) {
  if (tier === 'slow') return SLOW.filter((_, i) => dealt(i, count) === index)
  if (tier === 'unit') {
    // The first shard runs the slow unit files, the others share the rest.
    const files = testFiles(UNIT_DIR)
    if (index === 0) return files.filter((f) => UNIT_SLOW.includes(f))
    return files.filter((f) => !UNIT_SLOW.includes(f)).filter((_, i) => i % (count - 1) === index - 1)
  }
  const files = integrationFiles().filter((f) => !ALONE.includes(f) && !SLOW.includes(f))
  return files.filter((_, i) => i % count === index)
}

/** How many shards a tier runs in. */
export const shardCount = (tier) => ({ unit: UNIT_SHARDS, integration: INTEGRATION_SHARDS, slow: SLOW_SHARDS, cluster: 1 })[tier]

/** The shard entry files of a tier, as tap is given them (test/tiers/<tier>-<n>.ts). */
export function shardEntries(tier) {
  return Array.from({ length: shardCount(tier) }, (_, i) => `test/tiers/${tier}-${i + 1}.ts`)
}
