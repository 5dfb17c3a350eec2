// A shard of a tier: one long-lived test process that imports its share of the tier's files, one after another
// (scripts/test-tiers.mjs says which, and why a file's own process is costly). Every file's top-level tests join this
// process's root and run in order.
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import type { Tier } from '../../scripts/test-tiers.mjs'

/** A shard runs many files' tests: its limit is the sum of theirs, not one file's (tap's `timeout`, 240 s). */
const SHARD_LIMIT_MS = 900_000

/** The files shard `index` of `count` of `tier` runs, repository-relative. */
export async function shardFiles(tier: Tier, index: number, count: number): Promise<string[]> {
  const tiers = await import('../../scripts/test-tiers.mjs')
  return tier === 'cluster' ? tiers.CLUSTER_SUITES : tiers.shardFiles(tier, index, count)
}

export async function runShard(tier: Tier, index: number, count: number): Promise<void> {
  const { REPO_ROOT } = await import('../../scripts/test-tiers.mjs')
  // The cluster shard repeats the Redis-bound suites with every service on the run's Redis Cluster; the setting is
  // read when test/helpers/redis-cluster.ts is first imported, so it is made before any file is.
  if (tier === 'cluster') process.env.PM_TEST_REDIS = 'cluster'
  // A unit shard runs with the services out of reach however it was started (`npm run test:unit` does the same
  // through NODE_OPTIONS; a full `npm test` starts the unit shards in the integration tier's run).
  if (tier === 'unit') {
    const { SERVICE_ENV } = await import('../../scripts/test-tiers.mjs')
    for (const k of SERVICE_ENV) delete process.env[k]
    await import('../../scripts/no-services.mjs')
  }
  for (const f of await shardFiles(tier, index, count)) await import(pathToFileURL(path.join(REPO_ROOT, f)).href)
  // A file may set the root's limit while it is imported (t.setTimeout at its top level); the last word is ours.
  t.setTimeout(SHARD_LIMIT_MS)
}
