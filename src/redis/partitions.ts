// Which work partition an app belongs to: a stable hash of the app id, so every process agrees without asking.
// The count itself is the deployment's, recorded in Postgres (migration 0015): a process started with another
// PM_PARTITIONS refuses to start, and `pombo partitions resize N` changes it without losing or doubling work.
import { createHash } from 'node:crypto'
import { ConfigError } from '../core/config'
import { type Db, query } from '../db/pool'
import type { RedisClient } from './client'
import type { Keys } from './keys'
import { firstError, pipelineBySlot } from './slots'

/** The hash of each app seen (bounded): the API and the worker ask once per send, and a sha1 per send shows in profiles. */
const hashes = new Map<string, number>()

export function partitionOf(appId: string, partitions: number): number {
  let h = hashes.get(appId)
  if (h === undefined) {
    h = createHash('sha1').update(appId).digest().readUInt32BE(0)
    if (hashes.size >= 100_000) hashes.clear()
    hashes.set(appId, h)
  }
  return h % partitions
}

/** The deployment's recorded partition count; null before any process started. */
export async function recordedPartitions(db: Db): Promise<number | null> {
  const r = await query<{ partitions: number }>(db, 'SELECT partitions FROM deployment_partitions')
  return r.rows[0]?.partitions ?? null
}

/** At start: records `configured` if nothing is recorded yet; refuses (one line) when the deployment has another. */
export async function checkPartitions(db: Db, configured: number): Promise<void> {
  await query(db, 'INSERT INTO deployment_partitions (partitions) VALUES ($1) ON CONFLICT DO NOTHING', [configured])
  const recorded = await recordedPartitions(db)
  if (recorded !== null && recorded !== configured) {
    throw new ConfigError(
      `PM_PARTITIONS=${configured} but this deployment has ${recorded} partitions: start with PM_PARTITIONS=${recorded}, or change it with \`pombo partitions resize ${configured}\``,
    )
  }
}

/** The consumer group every worker reads the work streams through. */
export const WORK_GROUP = 'workers'

export interface PartitionStatus {
  partition: number
  /** The worker holding the partition's lease, or null. */
  owner: string | null
  /** Entries in the stream (read and unread; the stream is capped). */
  length: number
  /** Entries read by a worker and not yet acknowledged. */
  pending: number
  /** Age of the oldest pending entry (from its id's time), or null when none is pending. */
  oldestPendingAgeMs: number | null
}

/** What `pombo partitions` prints: one pipeline for every partition. */
export async function partitionStatus(
  redis: RedisClient,
  keys: Keys,
  partitions: number,
  nowMs: number,
): Promise<PartitionStatus[]> {
  // A partition's lease and stream share its hash tag: one pipeline per partition slot, sent together.
  const all = Array.from({ length: partitions }, (_, p) => p)
  const res = await pipelineBySlot(
    redis,
    all,
    (p) => keys.workStream(p),
    (pipe, p) => {
      pipe.get(keys.lease(p))
      pipe.xlen(keys.workStream(p))
      pipe.xpending(keys.workStream(p), WORK_GROUP)
    },
  )
  const out: PartitionStatus[] = []
  for (let p = 0; p < partitions; p++) {
    const [lease, len, pend] = (res[p] ?? []).map(([err, v]) => (err ? null : v))
    // XPENDING summary: [count, smallest id, greatest id, consumers]; NOGROUP (no worker yet) reads as none pending.
    const summary = Array.isArray(pend) ? (pend as [number, string | null]) : [0, null]
    const oldest = summary[1] ? Number(String(summary[1]).split('-')[0]) : null
    out.push({
      partition: p,
      owner: typeof lease === 'string' ? lease : null,
      length: Number(len ?? 0),
      pending: Number(summary[0] ?? 0),
      oldestPendingAgeMs: oldest === null ? null : Math.max(0, nowMs - oldest),
    })
  }
  return out
}

export class ResizeRefused extends Error {}

/**
 * Changes the deployment's partition count. Refused while a worker is live (an app's sends must be delivered by
 * one actor at a time, and a worker hashes with the count it started with). Then, in an order where a crash at any
 * point loses nothing and doubles nothing:
 *  1. every work stream of the old and new counts is deleted (its group and pending entries with it): no stale
 *     entry can be read under the new count by a worker that does not own the app;
 *  2. the new count is recorded (processes started with the old one now refuse to start);
 *  3. every due, unfinished send gets one entry on its app's stream under the new count, from Postgres (the truth).
 * A crash after 1 or 2 leaves the sends to the sweeper, which re-enqueues them after its grace period.
 */
export async function resizePartitions(
  db: Db,
  redis: RedisClient,
  keys: Keys,
  to: number,
  o: { leaseMs: number; streamMaxLen: number; nowMs: number },
): Promise<{ from: number | null; to: number; requeued: number }> {
  if (!Number.isInteger(to) || to < 1 || to > 4096) throw new ResizeRefused(`N: expected an integer from 1 to 4096, got "${to}"`)
  const from = await recordedPartitions(db)
  const live = await redis.zrangebyscore(keys.workers(), o.nowMs - o.leaseMs * 2, '+inf')
  if (live.length > 0)
    throw new ResizeRefused(
      `${live.length} worker(s) still live (${live.join(', ')}): stop every process of the deployment first`,
    )
  const top = Math.max(from ?? to, to)
  const held: number[] = []
  for (let p = 0; p < top; p++) if (await redis.exists(keys.lease(p))) held.push(p)
  if (held.length > 0)
    throw new ResizeRefused(`partitions ${held.join(', ')} are still leased: stop every process of the deployment first`)
  const lock = keys.job('partitions-resize')
  if ((await redis.set(lock, String(process.pid), 'PX', 120_000, 'NX')) !== 'OK')
    throw new ResizeRefused('another resize is under way')
  try {
    for (let p = 0; p < top; p++) await redis.del(keys.workStream(p))
    await query(
      db,
      `INSERT INTO deployment_partitions (partitions, changed_at) VALUES ($1, $2)
       ON CONFLICT (singleton) DO UPDATE SET partitions = excluded.partitions, changed_at = excluded.changed_at`,
      [to, new Date(o.nowMs)],
    )
    const now = new Date(o.nowMs)
    let requeued = 0
    let after = { at: new Date(0), id: '00000000-0000-0000-0000-000000000000' }
    for (;;) {
      const r = await query<{ app_id: string; id: string; lane: number; at: Date }>(
        db,
        `SELECT app_id, id, lane, COALESCE(send_after, queued_at) AS at FROM sends
          WHERE completed_at IS NULL AND COALESCE(send_after, queued_at) <= $1
            AND (COALESCE(send_after, queued_at), id) > ($2::timestamptz, $3::uuid)
          ORDER BY COALESCE(send_after, queued_at), id LIMIT 5000`,
        [now, after.at, after.id],
      )
      if (r.rows.length === 0) break
      const res = await pipelineBySlot(
        redis,
        r.rows,
        (x) => keys.workStream(partitionOf(x.app_id, to)),
        (pipe, x) => {
          pipe.xadd(
            keys.workStream(partitionOf(x.app_id, to)),
            'MAXLEN',
            '~',
            o.streamMaxLen,
            '*',
            'a',
            x.app_id,
            's',
            x.id,
            'l',
            String(x.lane),
          )
        },
      )
      const failed = firstError(res)
      if (failed) throw failed
      await query(
        db,
        'UPDATE sends SET enqueued_at = $1 FROM unnest($2::uuid[], $3::uuid[]) AS u(a, i) WHERE app_id = u.a AND id = u.i',
        [now, r.rows.map((x) => x.app_id), r.rows.map((x) => x.id)],
      )
      requeued += r.rows.length
      const last = r.rows[r.rows.length - 1] as { id: string; at: Date }
      after = { at: last.at, id: last.id }
    }
    return { from, to, requeued }
  } finally {
    await redis.del(lock)
  }
}
