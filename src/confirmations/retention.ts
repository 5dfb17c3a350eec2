// Retention of the webhook side, a bounded chunk per statement, oldest first; safe on many processes at once.
// - Attempts: failed attempts (and the success that followed them) older than `days`.
// - Events: an event older than `days` that no destination can still read: at or before the cursor of the app's
//   active destination (delivered, or abandoned into webhook_abandoned), or any event of an app without an active
//   one (a destination registered later starts after the app's newest event; a deactivated one never resumes).
//   Events still queued for a destination are never deleted, however old.
// - Stream events (`canal = 'grpc'`): an event older than `days` is deleted only when every stream of the app seen
//   within `days` (open now, or closed less than `days` ago: src/confirmations/stream.ts records how far each was
//   sent) is past it; an app whose streams were all gone for `days` keeps nothing older than `days`.
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

export function pruneEvents(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  // No ORDER BY: seq is per app now; the BRIN index on created_at finds the old rows.
  return deleteInChunks(
    db,
    `DELETE FROM events WHERE (app_id, seq) IN (
       SELECT e.app_id, e.seq FROM events e
        WHERE e.created_at < $1
          AND e.seq <= CASE WHEN e.canal = 'grpc'
                THEN COALESCE((SELECT min(s.last_seq) FROM event_streams s WHERE s.app_id = e.app_id AND s.seen_at >= $1),
                              9223372036854775807)
                ELSE COALESCE((SELECT d.last_seq FROM webhook_destinations d WHERE d.app_id = e.app_id AND d.active),
                              9223372036854775807)
              END
        LIMIT $2)`,
    [new Date(nowMs - days * DAY_MS)],
    chunk,
  )
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
