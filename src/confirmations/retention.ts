// Retention of the webhook side, a bounded chunk per statement, oldest first; safe on many processes at once.
// - Attempts: failed attempts (and the success that followed them) older than `days`.
// - Events: an event older than `days` that no destination can still read: at or before the cursor of the app's
//   active destination (delivered, or abandoned into webhook_abandoned), or any event of an app without an active
//   one (a destination registered later starts after the app's newest event; a deactivated one never resumes).
//   Events still queued for a destination are never deleted, however old.
// - Stream events (`canal = 'grpc'`, PM_STREAM_KEEP_DAYS): an event older than that is deleted only when every
//   stream of the app seen within it (open now, or closed less than that ago: src/confirmations/stream.ts records
//   how far each was sent) is past it; an app whose streams were all gone that long keeps nothing older. Those no
//   stream was ever sent are warned of first (the app's `pm_problema`, pombo_confirmations_expiring) and counted
//   when they go (pombo_confirmations_expired_total).
// Abandoned events are never deleted here: they are the only copy of an event that never arrived.
import { type Db, deleteInChunks, query } from '../db/pool'
import { DAY_MS } from '../core/time'

export function pruneWebhookAttempts(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  return deleteInChunks(
    db,
    `DELETE FROM webhook_attempts WHERE (app_id, id) IN (
       SELECT app_id, id FROM webhook_attempts WHERE at < $1 ORDER BY at LIMIT $2)`,
    [new Date(nowMs - days * DAY_MS)],
    chunk,
  )
}

/** What one pass of pruneEvents removed: every event, and of them the stream confirmations no stream had been sent. */
export interface PrunedEvents {
  events: number
  unread: number
}

/**
 * Webhook events after `days` (as above); stream events after `streamDays` (PM_STREAM_KEEP_DAYS). A stream event
 * beyond every position (no stream was ever sent it) is an unread confirmation: its deletion is counted apart, and
 * the app was warned before it (expiringStreamConfirmations).
 */
export async function pruneEvents(db: Db, days: number, nowMs: number, chunk = 10_000, streamDays = days): Promise<PrunedEvents> {
  const out: PrunedEvents = { events: 0, unread: 0 }
  const webhookBefore = new Date(nowMs - days * DAY_MS)
  const streamBefore = new Date(nowMs - streamDays * DAY_MS)
  for (;;) {
    // No ORDER BY: seq is per app now; the BRIN index on created_at finds the old rows.
    const r = await query<{ unread: boolean }>(
      db,
      `WITH doomed AS (
         SELECT e.app_id, e.seq,
                e.canal = 'grpc' AND e.seq > COALESCE((SELECT max(s.last_seq) FROM event_streams s WHERE s.app_id = e.app_id), 0)
                  AS unread
           FROM events e
          WHERE e.created_at < GREATEST($1::timestamptz, $2::timestamptz)
            AND CASE WHEN e.canal = 'grpc'
                  THEN e.created_at < $2 AND e.seq <= COALESCE(
                         (SELECT min(s.last_seq) FROM event_streams s WHERE s.app_id = e.app_id AND s.seen_at >= $2),
                         9223372036854775807)
                  ELSE e.created_at < $1 AND e.seq <= COALESCE(
                         (SELECT d.last_seq FROM webhook_destinations d WHERE d.app_id = e.app_id AND d.active),
                         9223372036854775807)
                END
          LIMIT $3)
       DELETE FROM events e USING doomed x WHERE e.app_id = x.app_id AND e.seq = x.seq RETURNING x.unread`,
      [webhookBefore, streamBefore, chunk],
    )
    out.events += r.rows.length
    for (const x of r.rows) if (x.unread) out.unread++
    if (r.rows.length < chunk) return out
  }
}

/** Unread stream confirmations of one app that will go soon. */
export interface Expiring {
  /** How many are waiting for a reader (counted up to EXPIRING_COUNT_MAX). */
  count: number
  /** When the first of them goes, if no stream reads it before. */
  at: Date
}

/** Unread confirmations are counted up to this (the index walk of one app stays bounded). */
export const EXPIRING_COUNT_MAX = 100_000

/**
 * The app's stream confirmations no stream has been sent, when the first of them goes within `warnMs`; null when
 * none does. They go (pruneEvents) once older than `keepDays` while no stream of the app was seen within
 * `keepDays`: the first at max(its creation, the last sighting) + keepDays.
 */
export async function expiringStreamConfirmations(
  db: Db,
  appId: string,
  keepDays: number,
  warnMs: number,
  nowMs: number,
): Promise<Expiring | null> {
  if (warnMs <= 0) return null
  // The oldest unread one first (one index probe): most apps have none, or none going soon, and are not counted.
  const first = await query<{ read: string | null; seen: Date | null; oldest: Date | null }>(
    db,
    `WITH pos AS (SELECT max(last_seq) AS read, max(seen_at) AS seen FROM event_streams WHERE app_id = $1)
     SELECT (SELECT read FROM pos)::text AS read, (SELECT seen FROM pos) AS seen,
            (SELECT e.created_at FROM events e
              WHERE e.app_id = $1 AND e.canal = 'grpc' AND e.seq > COALESCE((SELECT read FROM pos), 0)
              ORDER BY e.seq LIMIT 1) AS oldest`,
    [appId],
  )
  const x = first.rows[0]
  if (!x?.oldest) return null
  const at = Math.max(x.oldest.getTime(), x.seen?.getTime() ?? 0) + keepDays * DAY_MS
  if (at - nowMs > warnMs) return null
  const n = await query<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM (
       SELECT 1 FROM events WHERE app_id = $1 AND canal = 'grpc' AND seq > $2 ORDER BY seq LIMIT $3) u`,
    [appId, x.read ?? '0', EXPIRING_COUNT_MAX],
  )
  return { count: n.rows[0]?.n ?? 0, at: new Date(at) }
}

/** The deployment's unread stream confirmations that go within `warnMs` (the gauge), app by app in `grpc` mode. */
export async function expiringStreamTotal(db: Db, keepDays: number, warnMs: number, nowMs: number): Promise<number> {
  if (warnMs <= 0) return 0
  const apps = await query<{ app_id: string }>(
    db,
    `SELECT DISTINCT app_id FROM events WHERE canal = 'grpc' AND created_at < $1`,
    [new Date(nowMs + warnMs - keepDays * DAY_MS)],
  )
  let total = 0
  for (const a of apps.rows) total += (await expiringStreamConfirmations(db, a.app_id, keepDays, warnMs, nowMs))?.count ?? 0
  return total
}

/** An app with more closed positions than this (a client reconnecting in a loop) has them folded into one. */
export const POSITIONS_PER_APP = 100

/**
 * Stream positions not seen for `days` no longer hold events back (see pruneEvents) and are deleted. An app's
 * positions closed over an hour ago, when there are more than POSITIONS_PER_APP of them, are folded into one row
 * with the lowest position and the latest sighting: it holds back at least every event they held back.
 */
export async function pruneStreamPositions(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  const deleted = await deleteInChunks(
    db,
    'DELETE FROM event_streams WHERE (app_id, id) IN (SELECT app_id, id FROM event_streams WHERE seen_at < $1 LIMIT $2)',
    [new Date(nowMs - days * DAY_MS)],
    chunk,
  )
  await query(
    db,
    `WITH busy AS (
       SELECT app_id FROM event_streams WHERE seen_at < $1 GROUP BY app_id HAVING count(*) > $2
     ), gone AS (
       DELETE FROM event_streams s USING busy b WHERE s.app_id = b.app_id AND s.seen_at < $1
       RETURNING s.app_id, s.last_seq, s.opened_at, s.seen_at
     )
     INSERT INTO event_streams (id, app_id, last_seq, opened_at, seen_at)
     SELECT gen_random_uuid(), app_id, min(last_seq), min(opened_at), max(seen_at) FROM gone GROUP BY app_id`,
    [new Date(nowMs - 3600_000), POSITIONS_PER_APP],
  )
  return deleted
}
