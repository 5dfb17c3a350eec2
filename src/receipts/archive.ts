// Day partitions of receipts and their archival (the spec, Receipts `tardio`): the job creates the coming days'
// partitions, and folds every day older than the horizon into `receipt_archive` (keys only), dropping its partition.
// A receipt for an archived day is still counted once, against the archive, and answered `tardio`.
import type { Logger } from 'pino'
import { type Db, query, tx } from '../db/pool'
import { DEFAULT_LIMITS } from '../core/config'
import { ensureRangePartitions, type RangeTable, rangePartitions } from '../db/partitions'
import { DAY_MS } from '../core/time'

/** Partitions created ahead: sends are scheduled at most 28 days ahead (the spec, Limits send_after). */
const AHEAD_DAYS = 30

const ymd = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** Receipts: one partition per UTC day the send was due. */
export const RECEIPTS_TABLE: RangeTable = { parent: 'receipts', prefix: 'receipts_p', widthDays: 1, kind: 'date' }
/** The archive (migration 0028): one partition per day too, dropped once the day is past the acceptance window. */
export const ARCHIVE_TABLE: RangeTable = { parent: 'receipt_archive', prefix: 'receipt_archive_p', widthDays: 1, kind: 'date' }

/** Creates the receipts partitions of yesterday through 30 days ahead, and the archive's partitions of the days a
 * receipt may still be accepted for (`windowDays`, the spec's 90); a day whose rows are already in the default
 * partition keeps them there (its partition cannot be created), which archival and retention handle alike. */
export async function ensureDayPartitions(
  db: Db,
  nowMs: number,
  log: Logger,
  windowDays = DEFAULT_LIMITS.receiptWindowDays,
): Promise<number> {
  const st = await query<{ archived_before: string | null }>(db, 'SELECT archived_before::text FROM receipt_archive_state')
  const archivedBefore = st.rows[0]?.archived_before
  // An archived day takes no receipts partition: its receipts go to the archive.
  const from = Math.max(nowMs - DAY_MS, archivedBefore ? Date.parse(`${archivedBefore}T00:00:00Z`) : 0)
  const created = await ensureRangePartitions(db, RECEIPTS_TABLE, from, nowMs + (AHEAD_DAYS + 1) * DAY_MS, log)
  return created + (await ensureRangePartitions(db, ARCHIVE_TABLE, nowMs - (windowDays + 1) * DAY_MS, nowMs + DAY_MS, log))
}

/**
 * Archives every day before `today - horizonDays` (UTC): keys copied to receipt_archive, day partitions dropped, the
 * default partition's rows of those days deleted, the watermark moved, in one transaction. Receipt writers are held
 * off meanwhile (EXCLUSIVE lock), so no receipt lands in a day while it is being archived.
 */
export async function archiveReceipts(
  db: Db,
  horizonDays: number,
  nowMs: number,
): Promise<{ before: string; rows: number; dropped: number }> {
  const before = ymd(nowMs - horizonDays * DAY_MS)
  return tx(db, async (c) => {
    await query(c, 'LOCK TABLE receipts IN EXCLUSIVE MODE')
    const st = await query<{ archived_before: string | null }>(
      c,
      'SELECT archived_before::text FROM receipt_archive_state FOR UPDATE',
    )
    const current = st.rows[0]?.archived_before ?? null
    if (current !== null && current >= before) return { before: current, rows: 0, dropped: 0 }
    const moved = await query(
      c,
      `INSERT INTO receipt_archive (app_id, send_id, device_id, kind, day)
       SELECT app_id, send_id, device_id, kind, day FROM receipts WHERE day < $1 ON CONFLICT DO NOTHING`,
      [before],
    )
    let dropped = 0
    // Inside this transaction (the writers are held off), not dropRangePartitionsBefore's own short ones.
    const cutoff = Date.parse(`${before}T00:00:00Z`)
    for (const p of await rangePartitions(c, RECEIPTS_TABLE.parent)) {
      if (p.toMs !== null && p.toMs <= cutoff) {
        await query(c, `DROP TABLE ${p.name}`)
        dropped++
      }
    }
    await query(c, 'DELETE FROM receipts_default WHERE day < $1', [before])
    await query(c, 'UPDATE receipt_archive_state SET archived_before = $1', [before])
    return { before, rows: moved.rowCount ?? 0, dropped }
  })
}
