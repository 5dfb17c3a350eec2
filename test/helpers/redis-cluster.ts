// A real Redis Cluster for the tests: 3 masters of Debian's redis-server in cluster mode on loopback ports
// (scripts/redis-cluster.mjs does the work). `npm test` starts one for the whole run and passes its seeds in
// PM_TEST_REDIS_CLUSTER_NODES; a test file run on its own starts one for its process (stopped when it exits).
// A test that kills nodes starts a private one with startRedisCluster, so it never disturbs the others.
import { join } from 'node:path'

export interface RedisClusterHandle {
  ports: number[]
  dir: string
  /** The value for REDIS_CLUSTER_NODES. */
  nodes: string
  /** SIGKILLs master i. */
  kill(i: number): Promise<void>
  /** Starts master i again from its data and waits until the cluster is whole. */
  restart(i: number): Promise<void>
  ready(ms: number): Promise<void>
  stop(): Promise<void>
}

export interface ClusterOptions {
  masters?: number
  /** Append-only file with fsync at every write: a killed and restarted master keeps every acknowledged write. */
  appendonly?: boolean
  nodeTimeoutMs?: number
}

interface Manager {
  startRedisCluster(o: ClusterOptions): Promise<RedisClusterHandle>
}

export async function startRedisCluster(o: ClusterOptions = {}): Promise<RedisClusterHandle> {
  const m = (await import(join(__dirname, '../../scripts/redis-cluster.mjs'))) as Manager
  return m.startRedisCluster(o)
}

let shared: Promise<string> | null = null

/** Seeds of the run's shared cluster (REDIS_CLUSTER_NODES form). */
export function sharedClusterNodes(): Promise<string> {
  const fromRun = process.env.PM_TEST_REDIS_CLUSTER_NODES
  if (fromRun) return Promise.resolve(fromRun)
  shared ??= startRedisCluster().then((c) => c.nodes)
  return shared
}

/** Whether startService connects to the cluster unless told otherwise (`PM_TEST_REDIS=cluster`). */
export const CLUSTER_BY_DEFAULT = process.env.PM_TEST_REDIS === 'cluster'
