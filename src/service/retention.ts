// The lifetimes of the tables the feature jobs do not already bound (docs/operations.md#retention has the whole
// table). Two ways out:
// - Whole time partitions dropped (receipts and receipt_archive by day past the acceptance window; inapp_events by
//   week past PM_INAPP_EVENTS_RETENTION_DAYS): no row-by-row DELETE, no dead tuples, no vacuum (src/db/partitions.ts).
//   A default partition's stray rows (a range whose partition could not be created) are deleted in bounded batches.
// - Everything else: a bounded batch per statement (PM_RETENTION_BATCH), each its own short transaction, found by an
//   index on the row's time (migration 0030), oldest first, with a pause after each full batch (PM_RETENTION_PAUSE
//   times the batch's own time): a pass over millions of rows then leaves the API's latency where it was.
// Runs on worker processes every PM_RETENTION_EVERY_MS; safe on many processes at once (deleting twice deletes
// nothing; dropping a partition another process dropped is IF EXISTS).
// Lives in the composition layer because it reaches across features' tables; each feature keeps the rules that
// need its own logic (deliveries: src/delivery/retention.ts; webhook attempts, events and stream confirmations:
// src/confirmations/retention.ts; receipt archival: src/receipts/archive.ts; exports: src/devices/export.ts; the
// audit log's append-only deletion: src/audit/retention.ts, called from the pass).
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { pruneAudit } from '../audit/retention'
import type { Config } from '../core/config'
import { DAY_MS } from '../core/time'
import { dropRangePartitionsBefore, ensureRangePartitions, type RangeTable } from '../db/partitions'
import { type Db, query } from '../db/pool'
import type { Metrics } from '../ops/metrics'
import { HotCounter } from '../ops/hot'
import { ARCHIVE_TABLE, RECEIPTS_TABLE } from '../receipts/archive'

/** In-app events: week partitions on `em` (migration 0029). */
export const INAPP_EVENTS_TABLE: RangeTable = {
  parent: 'inapp_events',
  prefix: 'inapp_events_p',
  widthDays: 7,
  kind: 'timestamptz',
}

/** What one pass removed: rows per table, partitions per table, and how long it took. */
export interface RetentionReport {
  rows: Record<string, number>
  partitions: Record<string, number>
  ms: number
}

export interface RetentionDeps {
  db: Db
  cfg: Pick<Config, 'jobs' | 'limits' | 'dashboard'>
  clock: () => number
  log: Logger
  /** Told after every pass (metrics). */
  onPass?: (r: RetentionReport) => void
  /** The pause between batches (a test records it instead). */
  sleep?: (ms: number) => Promise<unknown>
}

const startOfDay = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS

/** Rows per statement, and the pause after a full one as a multiple of its time. */
interface Batching {
  size: number
  pause: number
  sleep: (ms: number) => Promise<unknown>
}

/** Deletes by ctid, `b.size` rows a statement, the rows `where` picks through its index, oldest `order` first. */
async function deleteBatched(
  db: Db,
  table: string,
  where: string,
  order: string,
  params: unknown[],
  b: Batching,
): Promise<number> {
  let total = 0
  const n = params.length
  const batch = b.size
  for (;;) {
    const t0 = performance.now()
    // ctid = ANY(ARRAY(...)): a TID scan of exactly the rows the index found (an IN (subquery) may hash-join the
    // whole table instead). The condition is checked again: a row changed since it was picked is left alone.
    const r = await query(
      db,
      `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where} ORDER BY ${order} LIMIT $${n + 1}))
          AND ${where}`,
      [...params, batch],
    )
    const k = r.rowCount ?? 0
    total += k
    if (k < batch) return total
    if (b.pause > 0) await b.sleep((performance.now() - t0) * b.pause)
  }
}

export class Retention {
  #timer: NodeJS.Timeout | null = null
  #running: Promise<RetentionReport | null> | null = null

  constructor(private readonly d: RetentionDeps) {}

  /** At start, then every PM_RETENTION_EVERY_MS; a pass still running is not started twice. */
  start(): void {
    const run = (): void => {
      if (this.#running) return
      this.#running = this.runOnce()
        .catch((err) => {
          this.d.log.warn({ err: String(err) }, 'retention pass failed')
          return null
        })
        .finally(() => {
          this.#running = null
        })
    }
    run()
    this.#timer = setInterval(run, this.d.cfg.jobs.retentionEveryMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    await this.#running
  }

  /** One pass over every lifetime (tests and the benchmark call it). */
  async runOnce(): Promise<RetentionReport> {
    const t0 = performance.now()
    const { db, log } = this.d
    const j = this.d.cfg.jobs
    const batch: Batching = { size: j.retentionBatch, pause: j.retentionPause, sleep: this.d.sleep ?? sleep }
    const now = this.d.clock()
    const rows: Record<string, number> = {}
    const partitions: Record<string, number> = {}

    // Receipts and their archive: nothing of a day past the acceptance window can be counted again (the receipt
    // statement refuses sends due before it), so the day's partition goes whole.
    const windowCut = startOfDay(now) - this.d.cfg.limits.receiptWindowDays * DAY_MS
    const windowDay = new Date(windowCut).toISOString().slice(0, 10)
    for (const t of [RECEIPTS_TABLE, ARCHIVE_TABLE]) {
      partitions[t.parent] = (await dropRangePartitionsBefore(db, t, windowCut, log)).length
      rows[`${t.parent}_default`] = await deleteBatched(db, `${t.parent}_default`, 'day < $1', 'day', [windowDay], batch)
    }

    // In-app events: the coming weeks' partitions, then the weeks past the lifetime.
    await ensureRangePartitions(db, INAPP_EVENTS_TABLE, now - 7 * DAY_MS, now + 15 * DAY_MS, log)
    const eventsCut = now - j.inappEventsRetentionDays * DAY_MS
    partitions.inapp_events = (await dropRangePartitionsBefore(db, INAPP_EVENTS_TABLE, eventsCut, log)).length
    rows.inapp_events_default = await deleteBatched(db, 'inapp_events_default', 'em < $1', 'em', [new Date(eventsCut)], batch)

    for (const d of this.#rowLifetimes(now)) rows[d.table] = await deleteBatched(db, d.table, d.where, d.order, [d.cut], batch)
    rows.audit_log = await pruneAudit(db, j.auditRetentionDays, now, batch.size)
    const sends = await this.#pruneSends(new Date(now - j.sendsRetentionDays * DAY_MS), batch)
    rows.sends = sends.sends
    rows.deliveries = sends.deliveries

    const report: RetentionReport = { rows, partitions, ms: performance.now() - t0 }
    const removed = Object.values(rows).reduce((a, b) => a + b, 0) + Object.values(partitions).reduce((a, b) => a + b, 0)
    if (removed > 0) log.info(report, 'retention: old rows and partitions removed')
    this.d.onPass?.(report)
    return report
  }

  /** The tables whose rows go one batch at a time: each row past `cut` by `where` ($1), found by an index on `order`. */
  #rowLifetimes(now: number): Array<{ table: string; where: string; order: string; cut: Date }> {
    const j = this.d.cfg.jobs
    const before = (days: number): Date => new Date(now - days * DAY_MS)
    return [
      { table: 'inapp_served', where: 'served_at < $1', order: 'served_at', cut: before(j.inappServedRetentionDays) },
      {
        table: 'inapp_reactivations',
        where: 'reactivated_at < $1',
        order: 'reactivated_at',
        cut: before(j.inappReactivationsRetentionDays),
      },
      {
        table: 'webhook_abandoned',
        where: 'abandoned_at < $1',
        order: 'abandoned_at',
        cut: before(j.webhookAbandonedRetentionDays),
      },
      // Idempotency keys: the spec's 30 days (PM_IDEMPOTENCY_TTL_DAYS), stamped on each record as expires_at.
      { table: 'idempotency', where: 'expires_at <= $1', order: 'expires_at', cut: new Date(now) },
      { table: 'dashboard_invites', where: 'expires_at < $1', order: 'expires_at', cut: before(j.invitesRetentionDays) },
      { table: 'dashboard_sessions', where: 'expires_at < $1', order: 'expires_at', cut: new Date(now) },
      // A dead device changes no more (a registration with its token revives it, clearing invalid_identifier).
      {
        table: 'devices',
        where: 'invalid_identifier AND updated_at < $1',
        order: 'updated_at',
        cut: before(j.deadDevicesRetentionDays),
      },
    ]
  }

  /** Completed sends (message, audience, counters) and what is left of their delivery rows (usually nothing: the
   *  deliveries job removed them after PM_DELIVERIES_RETENTION_DAYS); slices go by cascade. Up to 1,000 sends a
   *  round: their delivery rows in batches, then the sends in one statement. */
  async #pruneSends(before: Date, batch: Batching): Promise<{ sends: number; deliveries: number }> {
    const out = { sends: 0, deliveries: 0 }
    const round = Math.min(batch.size, 1_000)
    for (;;) {
      const due = await query<{ app_id: string; id: string }>(
        this.d.db,
        'SELECT app_id, id FROM sends WHERE completed_at IS NOT NULL AND completed_at < $1 ORDER BY completed_at LIMIT $2',
        [before, round],
      )
      if (due.rows.length === 0) return out
      const keys = [due.rows.map((s) => s.app_id), due.rows.map((s) => s.id)]
      out.deliveries += await deleteBatched(
        this.d.db,
        'deliveries',
        '(app_id, send_id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))',
        'send_id',
        keys,
        batch,
      )
      const t0 = performance.now()
      const r = await query(
        this.d.db,
        'DELETE FROM sends WHERE (app_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[])) AND completed_at < $3',
        [...keys, before],
      )
      out.sends += r.rowCount ?? 0
      if (due.rows.length < round) return out
      if (batch.pause > 0) await batch.sleep((performance.now() - t0) * batch.pause)
    }
  }
}

/** The retention job's series: rows and partitions removed per table, the last pass's time, and the stream
 *  confirmations warned of and deleted unread (docs/operations.md). */
export function retentionMetrics(metrics: Metrics): {
  onPass: (r: RetentionReport) => void
  onStreamRetention: (r: { expired: number; expiring: number }) => void
} {
  metrics.allow('table', RETENTION_TABLES)
  const rows = new HotCounter(
    'pombo_retention_rows_deleted_total',
    'Rows the retention job deleted, by table (partitions dropped are counted apart).',
    ['table'],
    metrics.registry,
    metrics.labelSets,
  )
  const parts = new HotCounter(
    'pombo_retention_partitions_dropped_total',
    'Time partitions the retention job dropped whole, by table.',
    ['table'],
    metrics.registry,
    metrics.labelSets,
  )
  const passSeconds = metrics.gauge('pombo_retention_pass_seconds', "The retention job's last pass, in seconds.", [], 'max')
  const expired = new HotCounter(
    'pombo_confirmations_expired_total',
    'Stream confirmations deleted before any stream was sent them (kept PM_STREAM_KEEP_DAYS without a reader).',
    [],
    metrics.registry,
    metrics.labelSets,
  )
  const expiring = metrics.gauge(
    'pombo_confirmations_expiring',
    'Stream confirmations no stream was sent that will be deleted within PM_STREAM_WARN_H (as of the last retention pass).',
    [],
    'max',
  )
  return {
    onPass: (r) => {
      for (const [t, n] of Object.entries(r.rows)) if (n > 0) rows.labels(t).inc(n)
      for (const [t, n] of Object.entries(r.partitions)) if (n > 0) parts.labels(t).inc(n)
      passSeconds.set(r.ms / 1000)
    },
    onStreamRetention: (r) => {
      if (r.expired > 0) expired.labels().inc(r.expired)
      expiring.set(r.expiring)
    },
  }
}

/** Every table a pass reports (the `table` label's values). */
const RETENTION_TABLES = [
  'receipts',
  'receipt_archive',
  'receipts_default',
  'receipt_archive_default',
  'inapp_events',
  'inapp_events_default',
  'inapp_served',
  'inapp_reactivations',
  'webhook_abandoned',
  'idempotency',
  'dashboard_invites',
  'dashboard_sessions',
  'devices',
  'sends',
  'deliveries',
  'audit_log',
]
