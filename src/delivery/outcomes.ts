// Records delivery outcomes exactly once, in batches (group commit): one transaction per batch writes the devices'
// final states, invalidates dead tokens, moves the sends' counters by what was NEW in this batch, and closes every
// send whose `remaining` reached 0 with its notification.completed event, all together. A device already final is
// not counted again, so a redelivered stream entry or a retried batch can never count twice.
import type { Logger } from 'pino'
import { eventCtes } from '../confirmations/events'
import { arrayLiteral } from '../db/arrays'
import { GroupCommit } from '../db/group-commit'
import { type Db, query, queryPrepared, type Tx, tx } from '../db/pool'
import type { Clock } from '../time'
import { isoWithOffset } from '../time'

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
}

export interface Closed {
  sendId: string
  appId: string
}

interface Tally {
  appId: string
  successful: number
  failed: number
  errored: number
  androidSuccessful: number
  androidFailed: number
  iosSuccessful: number
  iosFailed: number
}

export class OutcomeRecorder {
  readonly #gc: GroupCommit<OutcomeRow, boolean>
  /** Sends closed by this recorder (the actor acks their stream entries). */
  onClosed: (c: Closed) => void = () => {}
  /** Outcomes just made durable (metrics: pombo_deliveries_total), told once per batch after its commit. */
  onRecorded: (rows: readonly OutcomeRow[]) => void = () => {}

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.#gc = new GroupCommit((rows) => this.#write(rows), {
      maxBatch: 1_000,
      concurrency: 4,
      maxQueue: 200_000,
      onSplit: (err, outcomes) => this.log.error({ err, outcomes }, 'outcome batch refused by Postgres; isolating the outcome'),
    })
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
    const closed = await tx(this.db, async (c) => applyTallies(c, await upsertFinal(c, unique, now), now))
    for (const c of closed) this.onClosed(c)
    this.onRecorded(unique)
    if (closed.length > 0) this.log.debug({ sends: closed.length }, 'sends completed')
    return rows.map((r) => byKey.get(`${r.sendId}:${r.deviceId}`) === r)
  }
}

/**
 * spec §Events: notification.completed, written in the statement that closes the send (CTE `u` = the closed rows,
 * with `problem`) for apps that read by webhook or stream (src/confirmations/events.ts). The body is the spec's plus
 * `pm_problema` when deliveries stopped short (the read shape's field: the webhook and stream readers cannot read it).
 */
function completedEvent(quandoParam: string, atParam: string, where = 'true'): string {
  return eventCtes({
    source: `(SELECT u.app_id, u.id, 'notification.completed' AS evento,
                     jsonb_build_object('evento', 'notification.completed', 'app_id', u.app_id, 'notification_id', u.id,
                                        'successful', u.successful, 'failed', u.failed, 'errored', u.errored,
                                        'recipients', u.recipients, 'quando', ${quandoParam}::text)
                     || CASE WHEN u.problem IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('pm_problema', u.problem) END AS body
                FROM u WHERE ${where}) c`,
    order: 's.id',
    at: atParam,
  })
}

function blankTally(appId: string): Tally {
  return { appId, successful: 0, failed: 0, errored: 0, androidSuccessful: 0, androidFailed: 0, iosSuccessful: 0, iosFailed: 0 }
}

/** Final states, written only over a non-final row: answers the (send, device) pairs that became final now. */
/**
 * Final states, written only over a non-final row; devices whose new outcome names a dead token are invalidated in
 * the same statement. Answers, per send, what became final now (aggregated: one row per send and outcome kind).
 */
async function upsertFinal(c: Tx, rows: OutcomeRow[], now: Date): Promise<Map<string, Tally>> {
  const tallies = new Map<string, Tally>()
  if (rows.length === 0) return tallies
  const dead = rows.filter((x) => x.invalidate)
  const r = await queryPrepared<{ send_id: string; app_id: string; status: number; android: boolean; n: number }>(
    c,
    `WITH up AS (
       INSERT INTO deliveries AS d (send_id, device_id, app_id, device_type, status, attempts, updated_at)
       SELECT s, dv, a, ty, st, att, $7::timestamptz
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::smallint[], $5::smallint[], $6::smallint[]) AS x(s, dv, a, ty, st, att)
       ON CONFLICT (send_id, device_id) DO UPDATE
          SET status = excluded.status, attempts = excluded.attempts, updated_at = excluded.updated_at
        WHERE d.status = 0
       RETURNING send_id, device_id, app_id, device_type, status
     ), inv AS (
       UPDATE devices dv SET invalid_identifier = true, invalid_reason = x.reason, updated_at = $7
         FROM unnest($8::uuid[], $9::uuid[], $10::text[]) AS x(send_id, device_id, reason)
         JOIN up ON up.send_id = x.send_id AND up.device_id = x.device_id
        WHERE dv.app_id = up.app_id AND dv.id = x.device_id
     )
     SELECT send_id, app_id, status, device_type <> 0 AS android, count(*)::int AS n FROM up GROUP BY 1, 2, 3, 4`,
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
    ],
  )
  for (const x of r.rows) {
    const t = tallies.get(x.send_id) ?? blankTally(x.app_id)
    tallies.set(x.send_id, t)
    if (x.status === STATUS.successful) {
      t.successful += x.n
      if (x.android) t.androidSuccessful += x.n
      else t.iosSuccessful += x.n
    } else if (x.status === STATUS.failed) {
      t.failed += x.n
      if (x.android) t.androidFailed += x.n
      else t.iosFailed += x.n
    } else t.errored += x.n
  }
  return tallies
}

/**
 * Moves each send's counters by what became final in this batch; a send whose `remaining` reaches 0 (and whose
 * audience is fully known) is closed and its notification.completed event written when the app reads by webhook
 * or stream.
 */
async function applyTallies(c: Tx, tallies: Map<string, Tally>, now: Date): Promise<Closed[]> {
  if (tallies.size === 0) return []
  const ids = [...tallies.keys()]
  const t = ids.map((id) => tallies.get(id) as Tally)
  const r = await queryPrepared<{ id: string; app_id: string }>(
    c,
    `WITH u AS (
       UPDATE sends s SET
         successful = s.successful + x.ok, failed = s.failed + x.fail, errored = s.errored + x.err,
         remaining = s.remaining - (x.ok + x.fail + x.err),
         android_successful = s.android_successful + x.aok, android_failed = s.android_failed + x.afail,
         ios_successful = s.ios_successful + x.iok, ios_failed = s.ios_failed + x.ifail,
         completed_at = CASE WHEN s.remaining - (x.ok + x.fail + x.err) <= 0 AND s.expansion_done THEN $10 ELSE s.completed_at END
         FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[], $9::int[])
           AS x(id, app_id, ok, fail, err, aok, afail, iok, ifail)
        WHERE s.app_id = x.app_id AND s.id = x.id
       RETURNING s.id, s.app_id, s.completed_at, s.successful, s.failed, s.errored, s.recipients, s.problem
     ), ${completedEvent('$11', '$10', 'u.completed_at IS NOT NULL')}
     SELECT id, app_id FROM u WHERE completed_at IS NOT NULL`,
    [
      ids,
      t.map((x) => x.appId),
      t.map((x) => x.successful),
      t.map((x) => x.failed),
      t.map((x) => x.errored),
      t.map((x) => x.androidSuccessful),
      t.map((x) => x.androidFailed),
      t.map((x) => x.iosSuccessful),
      t.map((x) => x.iosFailed),
      now,
      isoWithOffset(now),
    ],
  )
  return r.rows.map((x) => ({ sendId: x.id, appId: x.app_id }))
}

/**
 * Closes a send whose counters already cover its whole audience (a segment whose expansion just ended, or a send
 * with nothing left to attempt): sets recipients to what was expanded and completed_at, writes the event.
 */
export async function closeIfDone(db: Db, appId: string, sendId: string, now: Date): Promise<boolean> {
  const r = await query<{ id: string }>(
    db,
    `WITH u AS (
       UPDATE sends SET completed_at = $3, remaining = 0
        WHERE app_id = $1 AND id = $2 AND completed_at IS NULL AND remaining <= 0 AND expansion_done
       RETURNING id, app_id, successful, failed, errored, recipients, problem
     ), ${completedEvent('$4', '$3')}
     SELECT id FROM u`,
    [appId, sendId, now, isoWithOffset(now)],
  )
  return r.rows.length > 0
}
