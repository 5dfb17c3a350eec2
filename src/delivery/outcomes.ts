// Records delivery outcomes exactly once, in batches (group commit): one statement per batch writes the devices'
// final states, invalidates dead tokens, moves the sends' counters by what was NEW in this batch, and closes every
// send whose `remaining` reached 0 with its notification.completed event, all together. A device already final is
// not counted again, so a redelivered stream entry or a retried batch can never count twice.
//
// Which statement moves which column of a send (every writer of `sends`, so a change to one is read against all):
//
// | statement (file)                          | columns it writes                                                   |
// |-------------------------------------------|---------------------------------------------------------------------|
// | writeSends (sends/store.ts)               | the row: recipients, remaining = recipients, expansion_done =        |
// |                                           | recipients_exact, audience, queued_at, send_after, message …        |
// | Handoff.sweep (sends/handoff.ts)          | enqueued_at                                                         |
// | loadSends (audience.ts)                   | picked_at, when still null (the sweeper's sign that a worker took it)|
// | refreshPicked (audience.ts, the heartbeat)| picked_at, refreshed while an actor holds the send (locked rows skipped)|
// | expandSegment (audience.ts)               | expanded_until; at the end expansion_done, recipients, remaining    |
// | recordFinal (here, the outcome batch)     | successful, failed, errored, android_*, ios_*, remaining (down by   |
// |                                           | what became final); completed_at once remaining ≤ 0 and expanded    |
// | closeIfDone (here, batched by the worker) | completed_at, remaining = 0, once remaining ≤ 0 and expanded        |
// | setProblem (audience.ts)                  | problem, first reason only                                          |
// | receipts (receipts/store.ts)              | recebidos, converted                                                |
// | pruneDeliveries (retention.ts)            | deliveries_pruned_at                                                |
//
// notification.completed is written by the statement that sets completed_at (recordFinal or closeIfDone), never
// twice: both set it only over a null completed_at.
import type { Logger } from 'pino'
import { DEFAULT_DELIVERY } from '../core/config'
import { eventCtes } from '../confirmations/events'
import { arrayLiteral } from '../db/arrays'
import { GroupCommit, type GroupCommitStats } from '../db/group-commit'
import { type Db, queryPrepared, retryingConflicts } from '../db/pool'
import type { Clock } from '../core/time'
import { isoWithOffset } from '../core/time'

/** deliveries.status */
export const STATUS = { pending: 0, successful: 1, failed: 2, errored: 3 } as const
export type FinalStatus = 1 | 2 | 3

export interface OutcomeRow {
  appId: string
  sendId: string
  deviceId: string
  deviceType: number
  status: FinalStatus
  attempts: number
  /** Mark the device's token dead (it leaves every audience). */
  invalidate?: string
  /** An accepted push to a device not known to be marked real yet: mark it (devices.push_accepted_at). */
  markReal?: boolean
  /** Why it did not end accepted, `<category>:<provider's reason>` (deliveries.reason, migration 0022). */
  reason?: string
}

export interface Closed {
  sendId: string
  appId: string
}

export class OutcomeRecorder {
  readonly #gc: GroupCommit<OutcomeRow, boolean>
  readonly #soft: number
  /** Sends this recorder's statement closed (their last outcome was in the batch): the send batches skip their own
   *  close of them (send-batches.ts `closedByOutcomes`). Set by the delivery module. */
  onClosed: (c: Closed) => void = () => {}
  /** Outcomes just made durable (metrics: pombo_deliveries_total), told once per batch after its commit. */
  onRecorded: (rows: readonly OutcomeRow[]) => void = () => {}

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    o: { maxBatch: number; concurrency: number; maxQueue: number } = {
      maxBatch: DEFAULT_DELIVERY.outcomeBatchMax,
      concurrency: DEFAULT_DELIVERY.outcomeWriters,
      maxQueue: DEFAULT_DELIVERY.outcomeQueueMax,
    },
  ) {
    this.#gc = new GroupCommit((rows) => this.#write(rows), o)
    this.#soft = Math.max(1, Math.floor(o.maxQueue / 2))
  }

  /**
   * Half the queue is taken: actors start no new delivery until it drains (actor.ts), so answered deliveries of many
   * apps at once never fill the queue while Postgres is slow (a full queue refuses outcomes, and their sends are
   * handed out again).
   */
  get saturated(): boolean {
    return this.#gc.queued >= this.#soft
  }

  /** The writer's queue and batches, for the metrics. */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }

  /** Resolves once the outcome is durable: true when it was new, false when the device was already final. */
  record(row: OutcomeRow): Promise<boolean> {
    return this.#gc.submit(row)
  }

  stop(): Promise<void> {
    return this.#gc.stop()
  }

  async #write(rows: OutcomeRow[]): Promise<boolean[]> {
    // Within a batch one device of one send appears once (the last outcome wins; the actor never sends both).
    const byKey = new Map<string, OutcomeRow>()
    for (const r of rows) byKey.set(`${r.sendId}:${r.deviceId}`, r)
    const unique = [...byKey.values()]
    const now = new Date(this.clock())
    // A deadlock with another writer of `sends` (a heartbeat, a close) is retried here: failing the batch would send
    // its already-delivered pushes again.
    const closed = await retryingConflicts(
      () => recordFinal(this.db, unique, now),
      (err, attempt) =>
        this.log.warn({ code: (err as { code?: string }).code, attempt, outcomes: unique.length }, 'outcome batch retried'),
    )
    for (const c of closed) this.onClosed(c)
    this.onRecorded(unique)
    if (closed.length > 0) this.log.debug({ sends: closed.length }, 'sends completed')
    return rows.map((r) => byKey.get(`${r.sendId}:${r.deviceId}`) === r)
  }
}

/**
 * the spec, Events: notification.completed, written in the statement that closes the send (CTE `u` = the closed rows,
 * with `problem`) for apps that read by webhook or stream (src/confirmations/events.ts). The body is the spec's plus
 * `pm_problema` when deliveries stopped short (the read shape's field: the webhook and stream readers cannot read it).
 */
function completedEvent(whenParam: string, atParam: string, where = 'true'): string {
  return eventCtes({
    source: `(SELECT u.app_id, u.id, 'notification.completed' AS evento,
                     jsonb_build_object('evento', 'notification.completed', 'app_id', u.app_id, 'notification_id', u.id,
                                        'successful', u.successful, 'failed', u.failed, 'errored', u.errored,
                                        'recipients', u.recipients, 'quando', ${whenParam}::text)
                     || CASE WHEN u.problem IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('pm_problema', u.problem) END AS body
                FROM u WHERE ${where}) c`,
    order: 's.id',
    at: atParam,
  })
}

/**
 * One statement for a whole batch (atomic without BEGIN/COMMIT, one round trip): final states written only over a
 * non-final row (`up`); devices whose new outcome names a dead token invalidated (`inv`); devices whose first
 * accepted push this is marked real (`proven`); per send, what became final
 * now (`t`) moves its counters (`u`), and a send whose `remaining` reaches 0 (and whose audience is fully known) is
 * closed with its notification.completed event when the app reads by webhook or stream (`ev`). Answers the sends it closed.
 */
async function recordFinal(db: Db, rows: OutcomeRow[], now: Date): Promise<Closed[]> {
  if (rows.length === 0) return []
  const dead = rows.filter((x) => x.invalidate)
  const real = rows.filter((x) => x.markReal)
  const r = await queryPrepared<{ id: string; app_id: string }>(
    db,
    `WITH up AS (
       INSERT INTO deliveries AS d (send_id, device_id, app_id, device_type, status, attempts, updated_at, reason)
       SELECT s, dv, a, ty, st, att, $7::timestamptz, rs
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::smallint[], $5::smallint[], $6::smallint[], $12::text[])
              AS x(s, dv, a, ty, st, att, rs)
       ON CONFLICT (app_id, send_id, device_id) DO UPDATE
          SET status = excluded.status, attempts = excluded.attempts, updated_at = excluded.updated_at,
              reason = excluded.reason
        WHERE d.status = 0
       RETURNING send_id, device_id, app_id, device_type, status
     ), inv AS (
       UPDATE devices dv SET invalid_identifier = true, invalid_reason = x.reason, updated_at = $7
         FROM unnest($8::uuid[], $9::uuid[], $10::text[]) AS x(send_id, device_id, reason)
         JOIN up ON up.send_id = x.send_id AND up.device_id = x.device_id
        WHERE dv.app_id = up.app_id AND dv.id = x.device_id
     ), proven AS (
       -- The first push a provider accepted for the token: the device is real and may count toward the free plan's
       -- monthly active users (src/sends/mau.ts). Only the rows the actor flagged (the device was not marked when
       -- its page was read), so a batch of devices already marked probes and writes nothing here. Accepted is
       -- accepted: the mark does not wait for the delivery row to be new (a redelivered outcome marks nothing twice).
       UPDATE devices dv SET push_accepted_at = $7
         FROM unnest($13::uuid[], $14::uuid[]) AS x(app_id, device_id)
        WHERE dv.app_id = x.app_id AND dv.id = x.device_id AND dv.push_accepted_at IS NULL
     ), t AS (
       SELECT send_id AS id, app_id,
              count(*) FILTER (WHERE status = 1)::int AS ok,
              count(*) FILTER (WHERE status = 2)::int AS fail,
              count(*) FILTER (WHERE status = 3)::int AS err,
              count(*) FILTER (WHERE status = 1 AND device_type <> 0)::int AS aok,
              count(*) FILTER (WHERE status = 2 AND device_type <> 0)::int AS afail,
              count(*) FILTER (WHERE status = 1 AND device_type = 0)::int AS iok,
              count(*) FILTER (WHERE status = 2 AND device_type = 0)::int AS ifail
         FROM up GROUP BY send_id, app_id
     ), u AS (
       UPDATE sends s SET
         successful = s.successful + x.ok, failed = s.failed + x.fail, errored = s.errored + x.err,
         remaining = s.remaining - (x.ok + x.fail + x.err),
         android_successful = s.android_successful + x.aok, android_failed = s.android_failed + x.afail,
         ios_successful = s.ios_successful + x.iok, ios_failed = s.ios_failed + x.ifail,
         completed_at = CASE WHEN s.remaining - (x.ok + x.fail + x.err) <= 0 AND s.expansion_done THEN $7 ELSE s.completed_at END
         FROM t AS x
        WHERE s.app_id = x.app_id AND s.id = x.id
       RETURNING s.id, s.app_id, s.completed_at, s.successful, s.failed, s.errored, s.recipients, s.problem
     ), ${completedEvent('$11', '$7', 'u.completed_at IS NOT NULL')}
     SELECT id, app_id FROM u WHERE completed_at IS NOT NULL`,
    [
      arrayLiteral(rows.map((x) => x.sendId)),
      arrayLiteral(rows.map((x) => x.deviceId)),
      arrayLiteral(rows.map((x) => x.appId)),
      arrayLiteral(rows.map((x) => x.deviceType)),
      arrayLiteral(rows.map((x) => x.status)),
      arrayLiteral(rows.map((x) => x.attempts)),
      now,
      arrayLiteral(dead.map((x) => x.sendId)),
      arrayLiteral(dead.map((x) => x.deviceId)),
      dead.map((x) => x.invalidate as string),
      isoWithOffset(now),
      rows.map((x) => x.reason ?? null),
      arrayLiteral(real.map((x) => x.appId)),
      arrayLiteral(real.map((x) => x.deviceId)),
    ],
  )
  return r.rows.map((x) => ({ sendId: x.id, appId: x.app_id }))
}

/**
 * Closes the sends, among those named, whose counters already cover their whole audience (a segment whose
 * expansion just ended, a send with nothing left to attempt, or one the outcome batch closed already: then nothing
 * changes): completed_at, remaining 0, the event. One statement for a whole batch of sends; answers those it closed.
 */
export async function closeIfDone(
  db: Db,
  sends: ReadonlyArray<{ appId: string; sendId: string }>,
  now: Date,
): Promise<Set<string>> {
  if (sends.length === 0) return new Set()
  const r = await queryPrepared<{ id: string }>(
    db,
    `WITH u AS (
       UPDATE sends s SET completed_at = $3, remaining = 0
         FROM unnest($1::uuid[], $2::uuid[]) AS x(a, i)
        WHERE s.app_id = x.a AND s.id = x.i AND s.completed_at IS NULL AND s.remaining <= 0 AND s.expansion_done
       RETURNING s.id, s.app_id, s.successful, s.failed, s.errored, s.recipients, s.problem
     ), ${completedEvent('$4', '$3')}
     SELECT id FROM u`,
    [arrayLiteral(sends.map((x) => x.appId)), arrayLiteral(sends.map((x) => x.sendId)), now, isoWithOffset(now)],
  )
  return new Set(r.rows.map((x) => x.id))
}
