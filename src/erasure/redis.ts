// An app's traces in Redis: its own keys (every per-app key carries the app id as a hash tag, src/redis/keys.ts, so
// one pattern finds them all) and the work-stream entries that name it. SCAN only, never KEYS: a big keyspace is
// walked in small steps without blocking the server. On a Redis Cluster each master is scanned (SCAN sees one node).
import type Redis from 'ioredis'
import { isCluster, type RedisClient } from '../redis/client'

/** Escapes the glob characters of a SCAN pattern (a prefix may hold any of them). */
function glob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
}

function nodes(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes('master') : [redis]
}

async function scan(redis: RedisClient, pattern: string, each: (keys: string[]) => Promise<void>): Promise<void> {
  for (const node of nodes(redis)) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      if (keys.length > 0) await each(keys)
      cursor = next
    } while (cursor !== '0')
  }
}

/** The pattern of every key of one app (its hash tag). */
export function appKeyPattern(prefix: string, appId: string): string {
  return `${glob(prefix)}:{${appId}}:*`
}

/** Counts the app's keys (the refusal without --yes says how many). */
export async function countAppKeys(redis: RedisClient, prefix: string, appId: string): Promise<number> {
  let n = 0
  await scan(redis, appKeyPattern(prefix, appId), async (keys) => {
    n += keys.length
  })
  return n
}

/** Deletes every key of the app; answers how many were deleted. Every key shares the app's slot: one DEL per page. */
export async function deleteAppKeys(redis: RedisClient, prefix: string, appId: string): Promise<number> {
  let n = 0
  await scan(redis, appKeyPattern(prefix, appId), async (keys) => {
    n += await redis.del(...keys)
  })
  return n
}

/**
 * Removes the work-stream entries of the app from every partition stream (a stream written under another partition
 * count included): each entry is acknowledged in every consumer group, then deleted. An entry a worker already holds
 * in memory finds no send row once the rows are gone, and is dropped (src/delivery/worker.ts).
 */
export async function deleteStreamEntries(redis: RedisClient, prefix: string, appId: string): Promise<number> {
  let n = 0
  const streams: string[] = []
  await scan(redis, `${glob(prefix)}:{p*}:work`, async (keys) => {
    streams.push(...keys)
  })
  for (const stream of streams) {
    const ids: string[] = []
    let start = '-'
    for (;;) {
      const page = (await redis.xrange(stream, start, '+', 'COUNT', 1000)) as Array<[string, string[]]>
      for (const [id, fields] of page) {
        for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'a' && fields[i + 1] === appId) ids.push(id)
      }
      if (page.length < 1000) break
      start = `(${(page[page.length - 1] as [string, string[]])[0]}`
    }
    if (ids.length === 0) continue
    const groups = (await redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][]
    for (let i = 0; i < ids.length; i += 1000) {
      const chunk = ids.slice(i, i + 1000)
      for (const g of groups) {
        const name = g[g.indexOf('name') + 1]
        if (typeof name === 'string') await redis.xack(stream, name, ...chunk)
      }
      n += await redis.xdel(stream, ...chunk)
    }
  }
  return n
}
