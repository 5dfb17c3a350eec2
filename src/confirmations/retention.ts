// Retention of the webhook side, a bounded chunk per statement, oldest first; safe on many processes at once.
// - Attempts: failed attempts (and the success that followed them) older than `days`.
// - Events: an event older than `days` that no destination can still read: at or before the cursor of the app's
//   active destination (delivered, or abandoned into webhook_abandoned), or any event of an app without an active
//   one (a destination registered later starts after the app's newest event; a deactivated one never resumes).
//   Events still queued for a destination are never deleted, however old.
// Abandoned events are never deleted here: they are the only copy of an event that never arrived.
import { type Db, deleteInChunks } from '../db/pool'
import { DAY_MS } from '../time'


export function pruneWebhookAttempts(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  return deleteInChunks(
    db,
    'DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE at < $1 ORDER BY at LIMIT $2)',
    [new Date(nowMs - days * DAY_MS)],
    chunk,
  )
}

export function pruneEvents(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  return deleteInChunks(
    db,
    `DELETE FROM events WHERE seq IN (
       SELECT e.seq FROM events e
        WHERE e.created_at < $1
          AND e.seq <= COALESCE((SELECT d.last_seq FROM webhook_destinations d WHERE d.app_id = e.app_id AND d.active),
                                9223372036854775807)
        ORDER BY e.seq LIMIT $2)`,
    [new Date(nowMs - days * DAY_MS)],
    chunk,
  )
}
