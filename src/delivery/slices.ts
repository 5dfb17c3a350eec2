// One big segment send delivered by every worker that has room. The send's actor (in the worker that owns the app's
// partition) cuts the device id space into slices (rows of send_slices) and then only watches them; every worker,
// its own included, leases slices while it has room and delivers each through an actor of the app (the app's pace
// is shared through Redis, pacer.ts). A slice is leased like a partition: one owner until `lease_until`, renewed
// while it works, taken over by any worker once it lapses (a worker that died or stalled). A taken-over slice is
// walked again from its start: devices with a final outcome are skipped, the others (those in flight when its owner
// died among them) are delivered again, at least once; the outcome statement counts each device once.
//
// The audience of a sliced send becomes fixed once every slice has expanded its range (endSliceExpansion), then the
// send's counters close it as for any send; its actor closes it and acknowledges its stream entry once every slice
// is done.
import type { Logger } from 'pino'
import { DEFAULT_DELIVERY } from '../core/config'
import { arrayLiteral } from '../db/arrays'
import { type Db, query, queryPrepared, tx } from '../db/pool'
import type { Clock } from '../core/time'
import { AFTER_ANY_ID, BEFORE_ANY_ID, expandSql } from './audience'
import type { SendMeta } from '../handoff/send'

export interface SliceSettings {
  /** A segment send estimated above this many devices is sliced, about this many devices a slice. */
  sliceDevices: number
  /** Slices a worker holds at once. */
  perWorker: number
  leaseMs: number
  /** How often a worker with room looks for a slice to lease. */
  pollMs: number
  /** A worker that found no slice looks again after this long, unless its own process plans some meanwhile. */
  idlePollMs: number
}

/** A leased slice: devices of the send with ids in (lo, hi]. */
export interface SliceLease {
  appId: string
  sendId: string
  slice: number
  lo: string
  hi: string
  expandedUntil: string | null
  expansionDone: boolean
  /** How often it has been leased, this lease included (more than once: taken over). */
  leases: number
}

/** The slices of the id space: slice i covers (bound i, bound i+1]; every v4 device id falls in exactly one. */
export function sliceBounds(k: number): Array<{ lo: string; hi: string }> {
  const bound = (i: number) =>
    i === 0
      ? BEFORE_ANY_ID
      : i === k
        ? AFTER_ANY_ID
        : `${Math.floor((i * 0x1_0000_0000) / k)
            .toString(16)
            .padStart(8, '0')}-0000-0000-0000-000000000000`
  return Array.from({ length: k }, (_, i) => ({ lo: bound(i), hi: bound(i + 1) }))
}

/** How many slices a send gets (1: not sliced). Only a segment not yet expanded is sliced: its audience is still open. */
export function sliceCount(meta: SendMeta, sliceDevices: number, maxSlices: number = DEFAULT_DELIVERY.maxSlices): number {
  if (meta.targetKind !== 'segments' || meta.expansionDone || meta.expandedUntil !== null) return 1
  return Math.min(maxSlices, Math.max(1, Math.ceil(meta.recipients / sliceDevices)))
}

/** Writes the send's slices (a second writer, after a takeover, writes the same rows: nothing changes). */
export async function planSlices(db: Db, meta: SendMeta, k: number): Promise<void> {
  const b = sliceBounds(k)
  await query(
    db,
    `INSERT INTO send_slices (app_id, send_id, slice, lane, lo, hi)
     SELECT $1, $2, x.k, $3, x.lo, x.hi FROM unnest($4::int[], $5::uuid[], $6::uuid[]) AS x(k, lo, hi)
     ON CONFLICT DO NOTHING`,
    [meta.appId, meta.id, meta.lane, b.map((_, i) => i), b.map((x) => x.lo), b.map((x) => x.hi)],
  )
}

/** Slices of the send not done yet, and whether the send is closed. */
export async function sliceProgress(db: Db, appId: string, sendId: string): Promise<{ open: number; completed: boolean }> {
  const r = await queryPrepared<{ open: number; completed: boolean }>(
    db,
    `SELECT (SELECT count(*)::int FROM send_slices WHERE app_id = $1 AND send_id = $2 AND done_at IS NULL) AS open,
            COALESCE((SELECT completed_at IS NOT NULL FROM sends WHERE app_id = $1 AND id = $2), true) AS completed`,
    [appId, sendId],
  )
  return r.rows[0] ?? { open: 0, completed: true }
}

interface LeaseRow {
  app_id: string
  send_id: string
  slice: number
  lo: string
  hi: string
  expanded_until: string | null
  expansion_done: boolean
  leases: number
}

/** Leases one open slice whose lease is free or lapsed (transactional sends first, then the longest free). */
/** leaseSlice's statement (its plan: test/integration/tenancy-plans.test.ts). */
export const LEASE_SLICE_SQL = `UPDATE send_slices t SET owner = $1, lease_until = $3, leases = t.leases + 1
       FROM (SELECT app_id, send_id, slice FROM send_slices WHERE done_at IS NULL AND lease_until <= $2
              ORDER BY lane, lease_until, send_id, slice LIMIT 1 FOR UPDATE SKIP LOCKED) c
      WHERE t.app_id = c.app_id AND t.send_id = c.send_id AND t.slice = c.slice
     RETURNING t.app_id, t.send_id, t.slice, t.lo, t.hi, t.expanded_until, t.expansion_done, t.leases`

export async function leaseSlice(db: Db, owner: string, now: Date, leaseMs: number): Promise<SliceLease | null> {
  const r = await queryPrepared<LeaseRow>(db, LEASE_SLICE_SQL, [owner, now, new Date(now.getTime() + leaseMs)])
  const x = r.rows[0]
  if (!x) return null
  return {
    appId: x.app_id,
    sendId: x.send_id,
    slice: x.slice,
    lo: x.lo,
    hi: x.hi,
    expandedUntil: x.expanded_until,
    expansionDone: x.expansion_done,
    leases: x.leases,
  }
}

/** Renews the owner's leases in one statement; answers the keys still held (the others were taken over). */
async function renewSlices(db: Db, owner: string, held: readonly SliceLease[], until: Date): Promise<Set<string>> {
  const r = await query<{ send_id: string; slice: number }>(
    db,
    `UPDATE send_slices t SET lease_until = $4
       FROM unnest($5::uuid[], $2::uuid[], $3::int[]) AS x(a, s, k)
      WHERE t.app_id = x.a AND t.send_id = x.s AND t.slice = x.k AND t.owner = $1 AND t.done_at IS NULL
     RETURNING t.send_id, t.slice`,
    [
      owner,
      arrayLiteral(held.map((h) => h.sendId)),
      arrayLiteral(held.map((h) => h.slice)),
      until,
      arrayLiteral(held.map((h) => h.appId)),
    ],
  )
  return new Set(r.rows.map((x) => sliceKey(x.send_id, x.slice)))
}

export function sliceKey(sendId: string, slice: number): string {
  return `${sendId}#${slice}`
}

/**
 * Pages the slice's next devices into placeholder rows; answers how many were added. At 0 the slice's expansion is
 * over, and when it was the send's last slice to expand, the send's audience is fixed (endSliceExpansion).
 */
export async function expandSlice(db: Db, meta: SendMeta, l: SliceLease, size: number, now: Date): Promise<number> {
  const r = await queryPrepared<{ n: number; last: string | null }>(db, expandSql(meta.segments, true), [
    meta.appId,
    meta.id,
    meta.platformMask,
    l.expandedUntil ?? l.lo,
    now,
    size,
    l.hi,
  ])
  const { n, last } = r.rows[0] ?? { n: 0, last: null }
  if (n > 0) {
    await queryPrepared(db, 'UPDATE send_slices SET expanded_until = $3 WHERE app_id = $4 AND send_id = $1 AND slice = $2', [
      meta.id,
      l.slice,
      last,
      meta.appId,
    ])
    l.expandedUntil = last
  } else {
    await endSliceExpansion(db, meta, l.slice)
    l.expansionDone = true
  }
  return n
}

/**
 * The slice's range is expanded. The send's row is locked first, so of two slices ending at once the second reads
 * the first's mark (each statement of a READ COMMITTED transaction sees what committed before it): whichever ends
 * last finds no slice still expanding and fixes the audience (recipients, remaining from the row's own counters).
 */
async function endSliceExpansion(db: Db, meta: SendMeta, slice: number): Promise<void> {
  await tx(db, async (c) => {
    await c.query('SELECT 1 FROM sends WHERE app_id = $1 AND id = $2 FOR UPDATE', [meta.appId, meta.id])
    await c.query('UPDATE send_slices SET expansion_done = true WHERE app_id = $1 AND send_id = $2 AND slice = $3', [
      meta.appId,
      meta.id,
      slice,
    ])
    await c.query(
      `WITH n AS (SELECT count(*)::int AS n FROM deliveries WHERE app_id = $1 AND send_id = $2)
       UPDATE sends SET expansion_done = true, recipients = n.n, remaining = n.n - (successful + failed + errored)
         FROM n WHERE app_id = $1 AND id = $2 AND NOT expansion_done
          AND NOT EXISTS (SELECT 1 FROM send_slices WHERE app_id = $1 AND send_id = $2 AND NOT expansion_done)`,
      [meta.appId, meta.id],
    )
  })
}

/**
 * A worker's slices: it leases open slices while it holds fewer than `perWorker`, hands each to `start` (an actor of
 * the app walks it), renews its leases, and marks a slice done (or gives it back) when its actor is through.
 */
export class SliceRunner {
  readonly #held = new Map<string, SliceLease>()
  #stopped = false
  #polling: Promise<void> | null = null
  /** No open slice was found: polls wait until then (an idle deployment costs a statement a second per worker). */
  #idleUntil = 0

  constructor(
    private readonly db: Db,
    private readonly owner: string,
    private readonly s: SliceSettings,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** A slice was leased: deliver it (finish() is called once it is through). */
    private readonly start: (lease: SliceLease) => Promise<void>,
    /** Slices taken over by another worker: their actors stop walking them. */
    private readonly lost: (keys: string[]) => void,
  ) {}

  get held(): number {
    return this.#held.size
  }

  /** Slices were just planned in this process: look now. */
  wake(): void {
    this.#idleUntil = 0
    if (!this.#stopped) this.poll().catch((err) => this.log.warn({ err: String(err) }, 'could not lease a slice'))
  }

  /** Leases slices while there is room (called every pollMs, and as soon as a slice is through). */
  poll(): Promise<void> {
    if (this.clock() < this.#idleUntil) return Promise.resolve()
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = null
    })
    return this.#polling
  }

  async #poll(): Promise<void> {
    while (!this.#stopped && this.#held.size < this.s.perWorker) {
      const lease = await leaseSlice(this.db, this.owner, new Date(this.clock()), this.s.leaseMs)
      if (!lease) {
        this.#idleUntil = this.clock() + this.s.idlePollMs
        return
      }
      if (lease.leases > 1) this.log.info({ app: lease.appId, send: lease.sendId, slice: lease.slice }, 'slice taken over')
      this.#held.set(sliceKey(lease.sendId, lease.slice), lease)
      await this.start(lease).catch((err) => {
        this.log.warn({ err: String(err), send: lease.sendId, slice: lease.slice }, 'could not start a slice; it is given back')
        return this.finish(lease, false)
      })
    }
  }

  /** Renews every held lease (called every leaseMs / 3); those taken over meanwhile are forgotten and their walks stopped. */
  async renew(): Promise<void> {
    if (this.#held.size === 0) return
    const held = [...this.#held.values()]
    const still = await renewSlices(this.db, this.owner, held, new Date(this.clock() + this.s.leaseMs))
    const lost: string[] = []
    for (const h of held) {
      const k = sliceKey(h.sendId, h.slice)
      if (still.has(k) || !this.#held.has(k)) continue
      this.#held.delete(k)
      lost.push(k)
    }
    if (lost.length > 0) {
      this.log.warn({ slices: lost }, 'slice leases lost to another worker: their walks here stop')
      this.lost(lost)
    }
  }

  /**
   * The slice's walk is over: done when every device of it has a durable outcome (`complete`), else given back at
   * once for another walk (an outcome could not be recorded, or the worker is stopping). A slice is marked done only
   * if no pending row is left in its range: a stalled former owner, expanding once more before it learnt of the
   * takeover, may have added a device behind the new owner's walk; the slice is then walked again.
   */
  async finish(lease: SliceLease, complete: boolean): Promise<void> {
    const k = sliceKey(lease.sendId, lease.slice)
    if (!this.#held.delete(k)) return // taken over meanwhile: the new owner finishes it
    const now = new Date(this.clock())
    await query(
      this.db,
      `UPDATE send_slices t SET lease_until = $4,
              done_at = CASE WHEN $5 AND NOT EXISTS (
                SELECT 1 FROM deliveries x
                 WHERE x.app_id = t.app_id AND x.send_id = t.send_id AND x.device_id > t.lo AND x.device_id <= t.hi AND x.status = 0
              ) THEN $4::timestamptz END
        WHERE t.app_id = $6 AND t.send_id = $1 AND t.slice = $2 AND t.owner = $3 AND t.done_at IS NULL`,
      [lease.sendId, lease.slice, this.owner, now, complete, lease.appId],
    )
    // Room again: the next slice now rather than at the next poll (a worker's window must not idle between slices).
    if (!this.#stopped) this.poll().catch((err) => this.log.warn({ err: String(err) }, 'could not lease a slice'))
  }

  /** Stops leasing and gives back every held slice (another worker takes it at once). */
  async stop(): Promise<void> {
    this.#stopped = true
    await Promise.allSettled([...this.#held.values()].map((l) => this.finish(l, false)))
  }
}
