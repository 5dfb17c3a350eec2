// The SQL of a dispatcher's turn on an app's webhook queue (docs/design/webhooks.md, "Several dispatchers"): lease,
// call, record. Each step is one statement, so one short transaction; no transaction or lock is open while a call
// is in flight.
//
// - claim: the due destination's row gets a new lease_id and a leased_until on the database's clock (every process
//   reads the same clock), and the statement answers the destination and its next events. Only a row with no live
//   lease and no URL change waiting (handover_until) is claimed, so one app's queue has one turn at a time.
// - renew: pushes leased_until on while a call is in flight, only while lease_id is still the claim's.
// - record: writes the turn's attempts, its abandoned event and the destination's cursor and ladder state, and ends
//   the lease, all only where lease_id is still the claim's. A lease that expired and was claimed again (a paused
//   process, a lost connection) has another lease_id: the statement writes nothing, and the turn that holds the
//   queue now has the say. A URL change clears lease_id on the row it deactivates, with the same effect.
import type { Db } from '../db/pool'
import { query, queryPrepared } from '../db/pool'
import type { AttemptResult, Cancellable } from './sender'

export interface DestinationRow {
  id: string
  app_id: string
  url: string
  sealed_secret: Buffer
  last_seq: string
  head_attempts: number
  consecutive_failures: number
}

export interface EventRow {
  seq: string
  app_id: string
  evento: string
  body: Record<string, unknown>
}

export interface Claim {
  dest: DestinationRow
  /** Up to `batch` events after the cursor, in seq order (at least one). */
  events: EventRow[]
  leaseId: string
}

/** Due destinations nobody holds, with events after their cursor, oldest `next_at` first (turns go round); the
 *  slow ones only while $3 (a slot for them is free). */
export const DUE = `SELECT d.id, d.app_id, d.slow FROM webhook_destinations d
  WHERE d.active AND d.disabled_at IS NULL AND d.next_at <= $1 AND ($3 OR NOT d.slow)
    AND (d.leased_until IS NULL OR d.leased_until < clock_timestamp())
    AND (d.handover_until IS NULL OR d.handover_until < clock_timestamp())
    AND EXISTS (SELECT 1 FROM events e WHERE e.app_id = d.app_id AND e.seq > d.last_seq AND e.canal = 'webhook')
  ORDER BY d.next_at LIMIT $2`

/** claim's statement (its plan: test/integration/tenancy-plans.test.ts). One row: the destination once, and its next
 *  events as one JSON array (a row per event repeated the destination's columns, sealed secret included, and cost a
 *  row parse per event). */
export const CLAIM_SQL = `WITH c AS (
  UPDATE webhook_destinations d SET lease_id = $3, leased_until = clock_timestamp() + $4 * interval '1 millisecond'
   WHERE d.app_id = $6 AND d.id = $1 AND d.active AND d.disabled_at IS NULL AND d.next_at <= $2
     AND (d.leased_until IS NULL OR d.leased_until < clock_timestamp())
     AND (d.handover_until IS NULL OR d.handover_until < clock_timestamp())
     AND EXISTS (SELECT 1 FROM events e WHERE e.app_id = d.app_id AND e.seq > d.last_seq AND e.canal = 'webhook')
  RETURNING d.id, d.app_id, d.url, d.sealed_secret, d.last_seq, d.head_attempts, d.consecutive_failures)
SELECT c.*, e.events FROM c
  JOIN LATERAL (SELECT json_agg(json_build_object('seq', x.seq::text, 'evento', x.evento, 'body', x.body) ORDER BY x.seq)
                       AS events
                  FROM (SELECT seq, evento, body FROM events e
                         WHERE e.app_id = c.app_id AND e.seq > c.last_seq AND e.canal = 'webhook'
                         ORDER BY seq LIMIT $5) x) e ON e.events IS NOT NULL`

/** Claims the destination's queue for `leaseMs` with its next `batch` events; null when it is not claimable now. */
export async function claim(
  db: Db,
  appId: string,
  id: string,
  now: Date,
  leaseId: string,
  leaseMs: number,
  batch: number,
): Promise<Claim | null> {
  const r = await queryPrepared<DestinationRow & { events: Array<Omit<EventRow, 'app_id'>> }>(db, CLAIM_SQL, [
    id,
    now,
    leaseId,
    leaseMs,
    batch,
    appId,
  ])
  const row = r.rows[0]
  if (!row) return null
  const { events, ...dest } = row
  return { dest, leaseId, events: events.map((e) => ({ seq: e.seq, app_id: dest.app_id, evento: e.evento, body: e.body })) }
}

/** Extends the lease; false when it is no longer this claim's (taken over after it expired, or handed over). */
export async function renew(db: Db, appId: string, id: string, leaseId: string, leaseMs: number): Promise<boolean> {
  const r = await queryPrepared(
    db,
    `UPDATE webhook_destinations SET leased_until = clock_timestamp() + $3 * interval '1 millisecond'
      WHERE app_id = $4 AND id = $1 AND lease_id = $2 RETURNING 1`,
    [id, leaseId, leaseMs, appId],
  )
  return r.rows.length > 0
}

/** Ends a lease that made no call (the dispatcher is stopping): the queue is free again at once. */
export async function release(db: Db, appId: string, id: string, leaseId: string): Promise<void> {
  await query(
    db,
    'UPDATE webhook_destinations SET lease_id = NULL, leased_until = NULL WHERE app_id = $3 AND id = $1 AND lease_id = $2',
    [id, leaseId, appId],
  )
}

export interface AttemptRecord {
  seq: string
  n: number
  r: AttemptResult
  at: Date
  nextAt: Date | null
}

export interface TurnOutcome {
  /** The destination's app: its key, and its attempts', lead with it. */
  appId: string
  destinationId: string
  leaseId: string
  cursor: string
  headAttempts: number
  consecutive: number
  nextAt: Date
  disable: boolean
  /** A call of the turn took PM_WEBHOOK_SLOW_MS or more, or timed out. */
  slow: boolean
  at: Date
  /** Failed attempts, and the success that ends a retried event (a first-try success leaves no row). */
  attempts: AttemptRecord[]
  /** The event whose last attempt was spent by this turn. */
  abandoned: { ev: EventRow; attempts: number; reason: string } | null
}

/** record's statement (its plan: test/integration/tenancy-plans.test.ts). */
export const RECORD_SQL = `WITH u AS (
  UPDATE webhook_destinations SET last_seq = $3, head_attempts = $4, consecutive_failures = $5, next_at = $6,
         disabled_at = CASE WHEN $7 THEN $8 ELSE disabled_at END, slow = $23, lease_id = NULL, leased_until = NULL
   WHERE app_id = $24 AND id = $1 AND lease_id = $2
  RETURNING id
), a AS (
  INSERT INTO webhook_attempts (app_id, destination_id, event_seq, n, attempt_id, result, http_status, reason, at, next_at)
  SELECT $24, $1, x.* FROM unnest($9::bigint[], $10::int[], $11::uuid[], $12::text[], $13::int[], $14::text[],
                             $15::timestamptz[], $16::timestamptz[]) x
   WHERE EXISTS (SELECT 1 FROM u)
), b AS (
  INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, last_reason, abandoned_at)
  SELECT $1, $17::bigint, $18::uuid, $19::text, $20::jsonb, $21::int, $22::text, $8
   WHERE $17::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM u)
  ON CONFLICT DO NOTHING
)
SELECT count(*)::int AS n FROM u`

/** Writes the turn's outcome if the lease is still this turn's; false when it was lost (nothing written). */
export async function record(db: Db, o: TurnOutcome): Promise<boolean> {
  const ab = o.abandoned
  const r = await queryPrepared<{ n: number }>(db, RECORD_SQL, [
    o.destinationId,
    o.leaseId,
    o.cursor,
    o.headAttempts,
    o.consecutive,
    o.nextAt,
    o.disable,
    o.at,
    o.attempts.map((a) => a.seq),
    o.attempts.map((a) => a.n),
    o.attempts.map((a) => a.r.attemptId),
    o.attempts.map((a) => (a.r.ok ? 'ok' : a.r.result)),
    o.attempts.map((a) => a.r.status ?? null),
    o.attempts.map((a) => (a.r.ok ? null : a.r.reason)),
    o.attempts.map((a) => a.at),
    o.attempts.map((a) => a.nextAt),
    ab?.ev.seq ?? null,
    ab?.ev.app_id ?? null,
    ab?.ev.evento ?? null,
    ab ? JSON.stringify(ab.ev.body) : null,
    ab?.attempts ?? null,
    ab?.reason ?? null,
    o.slow,
    o.appId,
  ])
  return (r.rows[0]?.n ?? 0) > 0
}

/**
 * A claimed lease while its turn runs: renewed every quarter of its length; when it is lost (taken by another claim,
 * or not renewed in time: Postgres unreachable, a stalled event loop) `held` turns false and the call in flight is
 * cancelled at once (`cancel`, set by the sender for the length of a call). Its local end is measured from when the
 * claim or the last renewal was sent, less a fifth of the lease, so this process stops calling before any other
 * process can see the lease expire.
 */
export class HeldLease implements Cancellable {
  /** False once the lease is lost; a turn starts no call then. A field, read once per call. */
  held = true
  cancel: (() => void) | null = null
  readonly #beat: NodeJS.Timeout
  #expiry: NodeJS.Timeout | null = null
  #renewing = false
  #ended = false

  constructor(
    private readonly db: Db,
    private readonly claimed: Claim,
    private readonly leaseMs: number,
    sentAt: number,
  ) {
    this.#expireAt(sentAt)
    this.#beat = setInterval(() => this.#renew(), Math.max(1, Math.floor(leaseMs / 4)))
  }

  end(): void {
    this.#ended = true
    clearInterval(this.#beat)
    if (this.#expiry) clearTimeout(this.#expiry)
  }

  #expireAt(sentAt: number): void {
    if (this.#expiry) clearTimeout(this.#expiry)
    const left = sentAt + this.leaseMs * 0.8 - performance.now()
    this.#expiry = setTimeout(() => this.#lose(), Math.max(0, left))
  }

  #lose(): void {
    this.end()
    this.held = false
    this.cancel?.()
  }

  #renew(): void {
    if (this.#renewing || this.#ended) return
    this.#renewing = true
    const sentAt = performance.now()
    renew(this.db, this.claimed.dest.app_id, this.claimed.dest.id, this.claimed.leaseId, this.leaseMs)
      .then(
        (ok) => {
          if (this.#ended) return
          if (ok) this.#expireAt(sentAt)
          else this.#lose()
        },
        () => {}, // Postgres unreachable: the local end comes first
      )
      .finally(() => {
        this.#renewing = false
      })
  }
}
