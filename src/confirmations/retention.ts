// Webhook attempts retention: failed attempts (and the success that followed them) older than `days` are deleted,
// oldest first, a bounded chunk per statement. Safe on many processes at once (a row deleted twice is deleted once).
// Abandoned events are never deleted here: they are the only copy of an event that never arrived.
import { type Db, query } from '../db/pool'

const DAY_MS = 86_400_000

export async function pruneWebhookAttempts(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  const before = new Date(nowMs - days * DAY_MS)
  let total = 0
  for (;;) {
    const r = await query(db, 'DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE at < $1 ORDER BY at LIMIT $2)', [
      before,
      chunk,
    ])
    total += r.rowCount ?? 0
    if ((r.rowCount ?? 0) < chunk) return total
  }
}
