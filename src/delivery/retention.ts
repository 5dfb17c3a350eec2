// Deliveries retention: the rows of sends completed more than `days` ago are deleted, a bounded chunk per
// statement (a big send's rows never sit in one long transaction), and the send is stamped `deliveries_pruned_at`
// once its last chunk is gone. Safe to run on many processes at once: deleting twice deletes nothing, and a send
// is stamped only after its rows are gone. Completed sends are never delivered again (the actor acknowledges a
// completed send's stream entries without reading its rows), so nothing can count a device twice afterwards.
import { type Db, deleteInChunks, query } from '../db/pool'
import { DAY_MS } from '../core/time'

export interface PruneOptions {
  /** Sends looked at per pass. */
  sends: number
  /** Rows deleted per statement. */
  chunk: number
}

export const PRUNE_DEFAULTS: PruneOptions = { sends: 100, chunk: 10_000 }

export async function pruneDeliveries(
  db: Db,
  days: number,
  nowMs: number,
  o: PruneOptions = PRUNE_DEFAULTS,
): Promise<{ sends: number; rows: number }> {
  const due = await query<{ app_id: string; id: string }>(
    db,
    `SELECT app_id, id FROM sends
      WHERE completed_at IS NOT NULL AND deliveries_pruned_at IS NULL AND completed_at < $1
      ORDER BY completed_at LIMIT $2`,
    [new Date(nowMs - days * DAY_MS), o.sends],
  )
  let rows = 0
  for (const s of due.rows) {
    rows += await deleteInChunks(
      db,
      `DELETE FROM deliveries WHERE app_id = $2 AND send_id = $1 AND device_id IN (
         SELECT device_id FROM deliveries WHERE app_id = $2 AND send_id = $1 ORDER BY device_id LIMIT $3)`,
      [s.id, s.app_id],
      o.chunk,
    )
    await query(db, 'UPDATE sends SET deliveries_pruned_at = $3 WHERE app_id = $1 AND id = $2', [s.app_id, s.id, new Date(nowMs)])
  }
  return { sends: due.rows.length, rows }
}
