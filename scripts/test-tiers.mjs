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
export const UNIT_SHARDS = 2
export const INTEGRATION_SHARDS = 6

/**
 * Files of the integration tier that keep a process of their own, slowest first: the start order of a run (tap
 * starts files in the order it is given them, `jobs` at a time), so the longest are not left for the end.
 *   - root-level hooks or process state: t.before/t.teardown on the root, process.env changed, a check that no
 *     timer is left when the file ends (sends-model);
 *   - mostly waiting (a clock to pass, a process to restart, a browser): alone they overlap with the others' CPU;
 *     inside a shard they would hold back every file after them;
 *   - children that do most of the work (npm, tsc, `pombo` processes).
 */
export const ALONE = [
  'test/integration/simulate.test.ts',
  'test/integration/sends-scheduled.test.ts',
  'test/integration/delivery-crash.test.ts',
  'test/integration/delivery-rules.test.ts',
  'test/browser/dashboard-sends.test.ts',
  'test/integration/sends-model.test.ts',
  'test/integration/readme-first-minutes.test.ts',
  'test/integration/audit.test.ts',
  'test/integration/delivery-slices.test.ts',
  'test/integration/grpc-crash.test.ts',
  'test/browser/dashboard.test.ts',
  'test/integration/delivery.test.ts',
  'test/integration/build.test.ts',
  'test/integration/redis-cluster-failover.test.ts',
  'test/integration/dashboard-erasure.test.ts',
  'test/integration/delivery-handback.test.ts',
  'test/fuzz/hostile.test.ts',
  'test/browser/sdk-push.test.ts',
  'test/integration/erasure.test.ts',
  'test/integration/dashboard-people.test.ts',
  'test/integration/webhooks-turns.test.ts',
  'test/integration/receipts-model.test.ts',
  'test/integration/serve-group.test.ts',
  'test/integration/providers-apns.test.ts',
  'test/integration/providers-fcm.test.ts',
  'test/integration/providers-pool.test.ts',
  'test/integration/schema-pool.test.ts',
]

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

/**
 * The files shard `index` of `count` of a tier runs: every count-th file of the sorted list (the integration tier's
 * files that run alone left out).
 */
export function shardFiles(tier, index, count) {
  const files = tier === 'unit' ? testFiles(UNIT_DIR) : integrationFiles().filter((f) => !ALONE.includes(f))
  return files.filter((_, i) => i % count === index)
}

/** The shard entry files of a tier, as tap is given them (test/tiers/<tier>-<n>.ts). */
export function shardEntries(tier) {
  const n = tier === 'unit' ? UNIT_SHARDS : tier === 'cluster' ? 1 : INTEGRATION_SHARDS
  return Array.from({ length: n }, (_, i) => `test/tiers/${tier}-${i + 1}.ts`)
}
