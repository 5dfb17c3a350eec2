// Time partitions of the big tables (receipts, receipt_archive, inapp_events): one helper creates the ranges ahead
// and drops the ranges that ended before a cutoff, reading each partition's bounds from the catalog (not from its
// name), so a partition made by a migration (a legacy table attached with FROM (MINVALUE)) is dropped by the same
// rule once everything in it is past the cutoff. Dropping a partition is the whole of its rows' deletion: no
// row-by-row DELETE, no dead tuples, no vacuum.
import type { Logger } from 'pino'
import { DAY_MS } from '../core/time'
import { type Db, query, type Tx, tx } from './pool'

export interface RangeTable {
  /** The partitioned table. */
  parent: string
  /** Partitions are named `<prefix>YYYYMMDD` after their first day. */
  prefix: string
  /** Days per partition; ranges are aligned on multiples of it since 1970-01-01 (UTC). */
  widthDays: number
  /** The partition column's type: a `date`, or a `timestamptz` cut at UTC midnight. */
  kind: 'date' | 'timestamptz'
}

export interface RangePartition {
  name: string
  /** Epoch ms of the bounds; null for MINVALUE / MAXVALUE. */
  fromMs: number | null
  toMs: number | null
}

const ymd = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** A bound as `pg_get_expr` prints it: `'2026-11-29'` or `'2026-11-29 00:00:00+00'` (session time zone). */
function boundMs(raw: string): number | null {
  const v = raw.trim()
  if (/^(MINVALUE|MAXVALUE)$/i.test(v)) return null
  const s = v.replace(/^'|'$/g, '')
  const m = /^(\d{4}-\d{2}-\d{2})(?: (\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2})(?::?(\d{2}))?)?$/.exec(s)
  if (!m) throw new Error(`partition bound not understood: ${raw}`)
  return m[2] ? Date.parse(`${m[1]}T${m[2]}${m[3]}:${m[4] ?? '00'}`) : Date.parse(`${m[1]}T00:00:00Z`)
}

/** The table's range partitions with their bounds (the default partition left out). */
export async function rangePartitions(db: Db | Tx, parent: string): Promise<RangePartition[]> {
  const r = await query<{ name: string; bound: string }>(
    db,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [parent],
  )
  const out: RangePartition[] = []
  for (const x of r.rows) {
    const m = /^FOR VALUES FROM \((.+)\) TO \((.+)\)$/.exec(x.bound)
    if (!m) continue // DEFAULT
    out.push({ name: x.name, fromMs: boundMs(m[1] as string), toMs: boundMs(m[2] as string) })
  }
  return out.sort((a, b) => (a.fromMs ?? Number.NEGATIVE_INFINITY) - (b.fromMs ?? Number.NEGATIVE_INFINITY))
}

function literal(t: RangeTable, ms: number): string {
  return t.kind === 'date' ? `'${ymd(ms)}'` : `'${ymd(ms)} 00:00:00+00'`
}

/** The aligned start of the range holding `ms`. */
export function rangeStart(t: RangeTable, ms: number): number {
  const width = t.widthDays * DAY_MS
  return Math.floor(ms / width) * width
}

/**
 * Creates the missing partitions covering [fromMs, toMs) (aligned ranges). A range that overlaps an existing
 * partition is skipped, and so is one whose rows already sit in the default partition (Postgres refuses it; those
 * rows are then removed from the default by the retention job's bounded DELETE). Answers how many were created.
 */
export async function ensureRangePartitions(db: Db, t: RangeTable, fromMs: number, toMs: number, log: Logger): Promise<number> {
  const existing = await rangePartitions(db, t.parent)
  const width = t.widthDays * DAY_MS
  let created = 0
  for (let start = rangeStart(t, fromMs); start < toMs; start += width) {
    const end = start + width
    const overlaps = existing.some((p) => (p.fromMs === null || p.fromMs < end) && (p.toMs === null || p.toMs > start))
    if (overlaps) continue
    const name = `${t.prefix}${ymd(start).replaceAll('-', '')}`
    try {
      await query(
        db,
        `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${t.parent} FOR VALUES FROM (${literal(t, start)}) TO (${literal(t, end)})`,
      )
      created++
    } catch (err) {
      log.debug(
        { err: String(err), table: t.parent, from: ymd(start) },
        'partition not created (rows already in the default partition)',
      )
    }
  }
  return created
}

/**
 * Drops every partition whose range ended at or before `cutoffMs`. Each drop is its own short transaction with a
 * lock timeout: DROP takes the parent's ACCESS EXCLUSIVE lock for an instant, and a drop that would queue behind a
 * long query (and make every later query queue behind it) gives up and is tried again on the next pass.
 */
export async function dropRangePartitionsBefore(
  db: Db,
  t: RangeTable,
  cutoffMs: number,
  log: Logger,
  lockTimeoutMs = 2_000,
): Promise<string[]> {
  const dropped: string[] = []
  for (const p of await rangePartitions(db, t.parent)) {
    if (p.toMs === null || p.toMs > cutoffMs) continue
    try {
      await tx(db, async (c) => {
        await query(c, `SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`)
        await query(c, `DROP TABLE IF EXISTS ${p.name}`)
      })
      dropped.push(p.name)
    } catch (err) {
      log.warn({ err: String(err), partition: p.name }, 'partition not dropped this pass (lock not granted in time)')
    }
  }
  return dropped
}
