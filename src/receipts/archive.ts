// Day partitions of receipts and their archival (the spec, Receipts `tardio`): the job creates the coming days'
// partitions, and folds every day older than the horizon into `receipt_archive` (keys only), dropping its partition.
// A receipt for an archived day is still counted once, against the archive, and answered `tardio`.
import type { Logger } from 'pino'
import { type Db, query, type Tx, tx } from '../db/pool'
import { DAY_MS } from '../core/time'

/** Partitions created ahead: sends are scheduled at most 28 days ahead (the spec, Limits send_after). */
const AHEAD_DAYS = 30

const ymd = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const partitionName = (day: string): string => `receipts_p${day.replaceAll('-', '')}`

/** Creates the partitions of yesterday through 30 days ahead; a day whose rows are already in the default
 * partition keeps them there (its partition cannot be created), which archival handles alike. */
export async function ensureDayPartitions(db: Db, nowMs: number, log: Logger): Promise<number> {
  let created = 0
  const existing = new Set((await partitions(db)).map((p) => p.name))
  const st = await query<{ archived_before: string | null }>(db, 'SELECT archived_before::text FROM receipt_archive_state')
  const archivedBefore = st.rows[0]?.archived_before ?? ''
  for (let i = -1; i <= AHEAD_DAYS; i++) {
    const day = ymd(nowMs + i * DAY_MS)
    const name = partitionName(day)
    // An archived day takes no partition: its receipts go to the archive.
    if (existing.has(name) || day < archivedBefore) continue
    try {
      await query(
        db,
        `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF receipts FOR VALUES FROM ('${day}') TO ('${ymd(Date.parse(day) + DAY_MS)}')`,
      )
      created++
    } catch (err) {
      log.debug({ err: String(err), day }, 'receipt partition not created (rows already in the default partition)')
    }
  }
  return created
}

async function partitions(db: Db | Tx): Promise<Array<{ name: string; day: string }>> {
  const r = await query<{ name: string }>(
    db,
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'receipts'::regclass`,
  )
  return r.rows
    .map((x) => ({ name: x.name, m: /^receipts_p(\d{4})(\d{2})(\d{2})$/.exec(x.name) }))
    .filter((x) => x.m)
    .map((x) => ({ name: x.name, day: `${x.m?.[1]}-${x.m?.[2]}-${x.m?.[3]}` }))
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
      `INSERT INTO receipt_archive (send_id, device_id, kind, app_id)
       SELECT send_id, device_id, kind, app_id FROM receipts WHERE day < $1 ON CONFLICT DO NOTHING`,
      [before],
    )
    let dropped = 0
    for (const p of await partitions(c)) {
      if (p.day < before) {
        await query(c, `DROP TABLE ${p.name}`)
        dropped++
      }
    }
    await query(c, 'DELETE FROM receipts_default WHERE day < $1', [before])
    await query(c, 'UPDATE receipt_archive_state SET archived_before = $1', [before])
    return { before, rows: moved.rowCount ?? 0, dropped }
  })
}
