// What an erasure must leave behind: nothing. Every table of the test's schema (read from the catalog, so a table
// added later is searched too) and every Redis key of the test's prefix (SCAN, every master of a cluster), searched
// for any of the given ids in every column and in every key's name and content.
import type Redis from 'ioredis'
import { isCluster } from '../../src/redis/client'
import type { TestService } from './service'

/** The audit log keeps who did what to a tenant after it is gone (an erased app's `app.excluido` record, its ids and
 *  its people's e-mails as `quem`), never an end user's data: searched for the end users' ids only. */
export const KEPT_AFTER_ERASURE = ['audit_log']

/** Rows, in every table of the schema (but `skip`), whose text (every column) names one of the ids, by table. */
export async function rowsNaming(s: TestService, ids: string[], skip: string[] = []): Promise<Record<string, number>> {
  // Every table that holds rows (a partition's rows are counted under its partitioned table's name).
  const tables = await s.sql<{ t: string; root: string }>(
    `SELECT c.relname AS t, r.relname AS root FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
      WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1`,
    [s.cfg.dbSchema],
  )
  if (tables.length < 20) throw new Error(`only ${tables.length} tables in ${s.cfg.dbSchema}: not the service's schema?`)
  const re = ids.map((x) => x.toLowerCase().replace(/[^0-9a-z-]/g, '')).join('|')
  const out: Record<string, number> = {}
  for (const { t: table, root } of tables) {
    if (skip.includes(root)) continue
    const [r] = await s.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" x WHERE lower(x::text) ~ $1`, [re])
    if ((r?.n ?? 0) > 0) out[root] = (out[root] ?? 0) + (r?.n as number)
  }
  return out
}

/** Redis keys of the test's prefix whose name or content names one of the ids. */
export async function keysNaming(s: TestService, ids: string[]): Promise<string[]> {
  const redis = s.svc.deps.redis
  const nodes: Redis[] = isCluster(redis) ? redis.nodes('master') : [redis]
  const found: string[] = []
  const names = (text: string) => ids.some((id) => text.toLowerCase().includes(id.toLowerCase()))
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${s.cfg.redisPrefix}:*`, 'COUNT', 1000)
      for (const k of keys) {
        if (names(k)) {
          found.push(k)
          continue
        }
        const type = await node.type(k)
        let content: unknown = null
        if (type === 'string') content = await node.get(k)
        else if (type === 'hash') content = await node.hgetall(k)
        else if (type === 'zset') content = await node.zrange(k, '0', '-1', 'WITHSCORES')
        else if (type === 'set') content = await node.smembers(k)
        else if (type === 'list') content = await node.lrange(k, 0, -1)
        else if (type === 'stream') content = await node.xrange(k, '-', '+')
        if (names(JSON.stringify(content))) found.push(`${k} (content)`)
      }
      cursor = next
    } while (cursor !== '0')
  }
  return found
}

/** How many keys the scan above looked at (a search that saw nothing proves nothing). */
export async function keyCount(s: TestService): Promise<number> {
  const redis = s.svc.deps.redis
  const nodes: Redis[] = isCluster(redis) ? redis.nodes('master') : [redis]
  let n = 0
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${s.cfg.redisPrefix}:*`, 'COUNT', 1000)
      n += keys.length
      cursor = next
    } while (cursor !== '0')
  }
  return n
}
