// Redis connections: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES, which wins when set). Commands
// fail fast while Redis is down (no offline queue), so a request answers a named 503 instead of hanging; the client
// keeps reconnecting in the background. Code that needs more than one command per round trip goes through
// src/redis/slots.ts, which keeps every pipeline inside one cluster slot.
import Redis, { Cluster } from 'ioredis'
import type { Config } from '../core/config'

export type RedisClient = Redis | Cluster

export type RedisTarget = Pick<Config, 'redisUrl' | 'redisClusterNodes'>

/** The seeds each cluster client was started with (the client keeps its own private). */
const seeds = new WeakMap<Cluster, ReadonlyArray<{ host: string; port: number }>>()

const retry = (times: number): number => Math.min(times * 100, 2_000)

export async function connectRedis(target: RedisTarget, name: string): Promise<RedisClient> {
  const nodes = target.redisClusterNodes
  const r: RedisClient = nodes
    ? new Cluster(
        nodes.map((n) => ({ host: n.host, port: n.port })),
        {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: retry,
          // A failover or a restarted master: commands wait this long between tries instead of failing at once.
          retryDelayOnFailover: 200,
          retryDelayOnClusterDown: 200,
          slotsRefreshTimeout: 5_000,
          redisOptions: { connectionName: name, maxRetriesPerRequest: 1 },
        },
      )
    : new Redis(target.redisUrl, {
        lazyConnect: true,
        connectionName: name,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        retryStrategy: retry,
      })
  if (nodes && isCluster(r)) seeds.set(r, nodes)
  // Without a listener ioredis prints every reconnect failure; outages surface as 503s and health logs instead.
  r.on('error', () => {})
  await r.connect()
  return r
}

export function isCluster(r: RedisClient): r is Cluster {
  return r instanceof Cluster
}

/**
 * A second client to the same Redis for what must not share the main connection: subscriptions and blocking reads.
 * It queues commands while (re)connecting and retries them forever: it has no caller waiting on an answer.
 */
export function duplicateClient(r: RedisClient, connectionName?: string): RedisClient {
  const named = connectionName === undefined ? {} : { connectionName }
  const d = isCluster(r)
    ? r.duplicate([], {
        enableOfflineQueue: true,
        redisOptions: { ...r.options.redisOptions, maxRetriesPerRequest: null, ...named },
      })
    : r.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, ...named })
  d.on('error', () => {})
  return d
}

/**
 * Readiness: every server answers PING. On a cluster that is the master of every slot in the client's slot table (a
 * slot whose master is gone fails every command on it, so the process is not ready), plus CLUSTER INFO's verdict.
 */
export async function pingAll(r: RedisClient): Promise<void> {
  if (!isCluster(r)) {
    await r.ping()
    return
  }
  const owners = new Set<string>()
  for (const s of r.slots) if (s?.[0]) owners.add(s[0])
  if (owners.size === 0) throw new Error('redis cluster: no slot is served')
  const masters = new Map(r.nodes('master').map((n) => [`${n.options.host}:${n.options.port}`, n]))
  const missing = [...owners].filter((o) => !masters.has(o))
  if (missing.length > 0) throw new Error(`redis cluster: master ${missing.join(', ')} is not connected`)
  await Promise.all([...owners].map((o) => (masters.get(o) as Redis).ping()))
  const info = String(await (masters.get([...owners][0] as string) as Redis).cluster('INFO'))
  if (!/cluster_state:ok/.test(info)) throw new Error('redis cluster: cluster_state is not ok')
}

/**
 * A connection of its own to the master serving `slot` (blocking reads: on the cluster client one blocked command
 * would hold up every other command to that node). It does not follow redirects or reconnect: its user drops it on
 * any error and asks again, by then the cluster client has learnt the new layout.
 */
export function slotConnection(c: Cluster, slot: number, name: string): Redis | null {
  const key = c.slots[slot]?.[0]
  if (!key) return null
  const i = key.lastIndexOf(':')
  const conn = new Redis({
    ...c.options.redisOptions,
    host: key.slice(0, i),
    port: Number(key.slice(i + 1)),
    connectionName: name,
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  conn.on('error', () => {})
  return conn
}

/**
 * Listens on pub/sub channels on a connection of its own. `onGap` is called whenever the connection came back after
 * a loss (messages published meanwhile are lost, so a cache must drop everything; on a cluster it is called once
 * the new subscription is in place, so nothing cached during the gap survives it). Answers a function that stops.
 *
 * On a cluster, classic PUBLISH reaches every node, so one connection to any master hears everything; when it
 * drops, the next master the cluster client knows (or the next seed) is tried, every RESUBSCRIBE_MS until one
 * answers. ioredis's own cluster subscriber moves silently, which would hide the gap.
 */
export async function subscribe(
  r: RedisClient,
  channels: string[],
  onMessage: (channel: string, message: string) => void,
  onGap: () => void,
): Promise<() => void> {
  if (!isCluster(r)) {
    const sub = duplicateClient(r)
    let first = true
    sub.on('ready', () => {
      if (!first) onGap()
      first = false
    })
    sub.on('message', onMessage)
    await sub.subscribe(...channels)
    return () => sub.disconnect()
  }
  const cluster = r
  let stopped = false
  let current: Redis | null = null
  let turn = 0
  const candidates = (): Array<{ host: string; port: number }> => {
    const known = cluster.nodes('master').map((n) => ({ host: n.options.host as string, port: n.options.port as number }))
    return [...known, ...(seeds.get(cluster) ?? [])]
  }
  const open = async (afterGap: boolean): Promise<void> => {
    while (!stopped) {
      const list = candidates()
      const at = list[turn++ % Math.max(1, list.length)]
      if (at) {
        const conn = new Redis({
          ...cluster.options.redisOptions,
          host: at.host,
          port: at.port,
          lazyConnect: true,
          enableOfflineQueue: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        })
        conn.on('error', () => {})
        conn.on('message', onMessage)
        try {
          await conn.connect()
          await conn.subscribe(...channels)
          if (stopped) {
            conn.disconnect()
            return
          }
          current = conn
          conn.once('end', () => {
            if (stopped || current !== conn) return
            current = null
            void open(true)
          })
          // Only once listening again: whatever was cached before this point may have missed a message.
          if (afterGap) onGap()
          return
        } catch {
          conn.disconnect()
        }
      }
      await new Promise((res) => setTimeout(res, RESUBSCRIBE_MS))
    }
  }
  await open(false)
  return () => {
    stopped = true
    current?.disconnect()
    current = null
  }
}

const RESUBSCRIBE_MS = 250
