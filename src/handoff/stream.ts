// Hands committed sends to the data plane: an entry on the app's partition stream (XADD, one script per stream per
// event-loop turn). Redis may lose its data, so Postgres stays the truth: a sweeper re-enqueues every due,
// unfinished send that no worker has touched for a grace period (workers refresh `picked_at` while they work on a
// send; a scheduled send is first enqueued by the sweeper when its time comes), unless its entry is still waiting
// unread in its stream (a backlog, stillUnread below). Workers treat a duplicate entry as
// a no-op, so re-enqueueing is always safe; stream length is capped because the sweeper re-derives anything trimmed.
import type { Logger } from 'pino'
import { type Db, query, retryingConflicts } from '../db/pool'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { partitionOf, WORK_GROUP } from '../redis/partitions'
import { firstError, pipelineBySlot } from '../redis/slots'
import type { Clock } from '../core/time'

/** What the workers' group has read of a stream (Handoff.#readHorizons). */
interface Horizon {
  lastReadMs: number
  firstMs: number
}

/** Postgres' clock (a send's hand-off time) and Redis' (stream ids) may differ by this much. */
const CLOCK_SKEW_MS = 2_000

/**
 * The send's entry is waiting, unread, in its stream: it was handed off after the group's last read and after the
 * stream's first entry (so it was not trimmed). A worker that holds back its reading (PM_WORKER_MAX_SENDS) leaves a
 * backlog in the stream, older than the grace period, and re-enqueueing it would only double the backlog. If the
 * entry is in fact missing (its hand-off failed), the sweep re-enqueues it once the readers pass its time.
 */
export function stillUnread(h: Horizon | undefined, handedMs: number): boolean {
  return h !== undefined && handedMs > h.lastReadMs + CLOCK_SKEW_MS && handedMs - CLOCK_SKEW_MS >= h.firstMs
}

/**
 * When a send was last handed to a stream, or NULL when it never was. The sweeper stamps `enqueued_at` on every
 * hand-off it makes; the create path hands a send off at once (no stamp: that would cost a write per send) unless
 * its `send_after` lies ahead, and then the sweeper's hand-off is its first. A scheduled send not yet handed off
 * has no entry anywhere, so its creation time must never pass for a hand-off time: a stream read before it was
 * created would make it look "waiting unread" to every sweep, forever.
 */
const FIRST_HANDOFF = `CASE WHEN enqueued_at IS NOT NULL THEN enqueued_at
  WHEN send_after IS NULL OR send_after <= queued_at THEN queued_at END`

/** The ms part of a stream id ("1700000000000-3"). */
function idMs(id: string): number {
  return Number(id.slice(0, id.indexOf('-')))
}

export interface HandoffSettings {
  partitions: number
  /** An enqueued send no worker took within this is enqueued again. */
  graceMs: number
  sweepEveryMs: number
  /** Approximate cap of each work stream (XADD MAXLEN ~). */
  streamMaxLen: number
}

// KEYS: the stream. ARGV: the approximate cap (MAXLEN ~), then app, send, lane and the carried send ('' for none:
// the worker loads it) of each entry, in order.
const XADD_EACH = `
for i = 2, #ARGV, 4 do
  if ARGV[i + 3] == '' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'a', ARGV[i], 's', ARGV[i + 1], 'l', ARGV[i + 2])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'a', ARGV[i], 's', ARGV[i + 1], 'l', ARGV[i + 2], 'c', ARGV[i + 3])
  end
end
return (#ARGV - 1) / 4`

interface Entry {
  appId: string
  sendId: string
  lane: number
  /** The send itself (src/handoff/carried.ts), or '' when the worker is to load it. */
  carried: string
}

export class Handoff {
  #pending: Entry[] = []
  #scheduled = false
  #timer: NodeJS.Timeout | null = null
  #sweeping: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly s: HandoffSettings,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  streamOf(appId: string): string {
    return this.keys.workStream(partitionOf(appId, this.s.partitions))
  }

  /**
   * After commit. A future `send_after` is left to the sweeper, which enqueues it when due. `carried`: the send
   * whole, for a worker to start without loading it (src/handoff/carried.ts). Never throws.
   */
  enqueue(appId: string, sendId: string, lane: number, sendAfterMs: number | null, carried: string | null = null): void {
    if (sendAfterMs !== null && sendAfterMs > this.clock()) return
    this.#pending.push({ appId, sendId, lane, carried: carried ?? '' })
    if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(() => {
        this.#scheduled = false
        const batch = this.#pending
        this.#pending = []
        this.#xadd(batch).catch((err) =>
          this.log.warn({ err: String(err), sends: batch.length }, 'hand-off failed; the sweeper will retry'),
        )
      })
    }
  }

  async #xadd(entries: Entry[]): Promise<void> {
    if (entries.length === 0) return
    // One script per stream, not one XADD per send: at thousands of sends a second the client's per-command cost
    // (a command object, its encoding, its reply) was most of the hand-off. Streams hash to different cluster
    // slots: one pipeline per slot, sent together.
    const byStream = new Map<string, string[]>()
    for (const e of entries) {
      const stream = this.streamOf(e.appId)
      const args = byStream.get(stream)
      if (args) args.push(e.appId, e.sendId, String(e.lane), e.carried)
      else byStream.set(stream, [e.appId, e.sendId, String(e.lane), e.carried])
    }
    const res = await pipelineBySlot(
      this.redis,
      [...byStream],
      ([stream]) => stream,
      (pipe, [stream, args]) => {
        pipe.eval(XADD_EACH, 1, stream, this.s.streamMaxLen, ...args)
      },
    )
    const failed = firstError(res)
    if (failed) throw failed
  }

  /** Enqueues due, unfinished sends no worker has touched lately; answers how many. One instance at a time (lock). */
  async sweep(limit = 5_000): Promise<number> {
    const now = new Date(this.clock())
    const r = await query<{ app_id: string; id: string; lane: number; handed_ms: number | null }>(
      this.db,
      `SELECT app_id, id, lane, extract(epoch FROM ${FIRST_HANDOFF})::float8 * 1000 AS handed_ms FROM sends
        WHERE completed_at IS NULL AND COALESCE(send_after, queued_at) <= $1
          AND ((enqueued_at IS NULL AND picked_at IS NULL AND send_after IS NOT NULL)
               OR GREATEST(picked_at, enqueued_at, queued_at) < $1::timestamptz - make_interval(secs => $2::float8 / 1000))
        ORDER BY COALESCE(send_after, queued_at) LIMIT $3`,
      [now, this.s.graceMs, limit],
    )
    if (r.rows.length === 0) return 0
    const horizons = await this.#readHorizons([...new Set(r.rows.map((x) => this.streamOf(x.app_id)))])
    const due = r.rows.filter((x) => x.handed_ms === null || !stillUnread(horizons.get(this.streamOf(x.app_id)), x.handed_ms))
    if (due.length === 0) return 0
    // Re-enqueued sends are loaded by their worker: it may have delivered some of them already.
    await this.#xadd(due.map((x) => ({ appId: x.app_id, sendId: x.id, lane: x.lane, carried: '' })))
    // A deadlock with an outcome batch (which moves the same rows' counters) is retried: a failed stamp would have
    // the next sweep, a second later, enqueue the same sends again.
    await retryingConflicts(() =>
      query(
        this.db,
        'UPDATE sends SET enqueued_at = $1 FROM unnest($2::uuid[], $3::uuid[]) AS u(a, i) WHERE app_id = u.a AND id = u.i',
        [now, due.map((x) => x.app_id), due.map((x) => x.id)],
      ),
    )
    return due.length
  }

  /**
   * How far the workers have read each stream: the time of the group's last-read entry, and of the stream's first
   * (older ones were trimmed). Stream ids are Redis' clock in ms. A stream without entries or without the group (Redis
   * lost it), or whose group has no lag, has no horizon: nothing is known to wait in it. Errors count as no horizon (the sweep then re-enqueues,
   * which is always safe).
   */
  async #readHorizons(streams: string[]): Promise<Map<string, Horizon>> {
    const replies = await pipelineBySlot(
      this.redis,
      streams,
      (stream) => stream,
      (pipe, stream) => {
        pipe.xinfo('GROUPS', stream)
        pipe.xrange(stream, '-', '+', 'COUNT', 1)
      },
    )
    const out = new Map<string, Horizon>()
    streams.forEach((stream, i) => {
      const [[gErr, groups] = [null, null], [fErr, first] = [null, null]] = replies[i] ?? []
      if (gErr || fErr || !Array.isArray(groups) || !Array.isArray(first) || first.length === 0) return
      for (const g of groups as unknown[][]) {
        const f = new Map<string, unknown>()
        for (let k = 0; k + 1 < g.length; k += 2) f.set(String(g[k]), g[k + 1])
        if (f.get('name') !== WORK_GROUP) continue
        // Lag 0: the group has read every entry, so nothing waits unread however recent its hand-off looks (a send
        // whose hand-off was lost in a crash after its commit would otherwise wait for other traffic to pass it).
        if (f.get('lag') === 0) continue
        const lastRead = idMs(String(f.get('last-delivered-id')))
        const firstMs = idMs(String((first[0] as [string])[0]))
        if (Number.isFinite(lastRead) && Number.isFinite(firstMs)) out.set(stream, { lastReadMs: lastRead, firstMs })
      }
    })
    return out
  }

  start(lockKey: string): void {
    const tick = async () => {
      if ((await this.redis.set(lockKey, '1', 'PX', this.s.sweepEveryMs, 'NX')) !== 'OK') return
      const n = await this.sweep()
      if (n > 0) this.log.info({ sends: n }, 'sweeper re-enqueued sends')
    }
    this.#timer = setInterval(() => {
      this.#sweeping = tick().catch((err) => this.log.warn({ err: String(err) }, 'sweep failed'))
    }, this.s.sweepEveryMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    await this.#sweeping
  }
}
