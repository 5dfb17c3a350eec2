// Where open confirmation streams are known to the rest of the deployment:
// - Redis, for `streams_ativos`: each app has a sorted set of `<instance>:<stream>` scored by an expiry time (wall
//   clock, ms). Every instance re-scores its open streams every `heartbeatMs`; a closed stream is removed at once; a
//   dead instance's streams stop being counted `ttlMs` after its last heartbeat.
// - Postgres (`event_streams`), for retention: how far each stream was sent and when it was last seen, written when
//   it opens, every `positionEveryMs` while it is open, and when it closes. (Settings: ConfirmationStream in
//   src/core/config.ts.)
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { type ConfirmationStream, DEFAULT_STREAM } from '../core/config'
import { type Db, query } from '../db/pool'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { firstError, pipelineBySlot } from '../redis/slots'

export interface Tracked {
  id: string
  appId: string
  /** Last seq written to the stream (a decimal string). */
  cursor: string
}

/** `streams_ativos`: the app's open streams on every instance (those re-scored within `ttlMs`). */
export async function activeStreams(redis: RedisClient, keys: Keys, appId: string): Promise<number> {
  return redis.zcount(keys.grpcStreams(appId), `(${Date.now()}`, '+inf')
}

export class Presence {
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  #lastPositions = 0

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly now: () => number,
    private readonly s: Pick<ConfirmationStream, 'ttlMs' | 'positionEveryMs'> = DEFAULT_STREAM,
  ) {}

  async opened(s: Tracked): Promise<void> {
    const at = new Date(this.now())
    await query(this.db, 'INSERT INTO event_streams (id, app_id, last_seq, opened_at, seen_at) VALUES ($1, $2, $3, $4, $4)', [
      s.id,
      s.appId,
      s.cursor,
      at,
    ])
    const key = this.keys.grpcStreams(s.appId)
    await this.redis
      .multi()
      .zadd(key, Date.now() + this.s.ttlMs, this.#member(s))
      .pexpire(key, this.s.ttlMs * 10)
      .exec()
  }

  /** Never throws: a stream closing must not fail on its bookkeeping (the TTL and the next job correct it). */
  async closed(s: Tracked): Promise<void> {
    await this.redis.zrem(this.keys.grpcStreams(s.appId), this.#member(s)).catch(() => {})
    await query(this.db, 'UPDATE event_streams SET last_seq = $2, seen_at = $3 WHERE app_id = $4 AND id = $1', [
      s.id,
      s.cursor,
      new Date(this.now()),
      s.appId,
    ]).catch(() => {})
  }

  /** One heartbeat of this instance's open streams: Redis every time, positions every `positionEveryMs`. */
  async beat(open: readonly Tracked[]): Promise<void> {
    if (open.length === 0) return
    const expiry = Date.now() + this.s.ttlMs
    // Each app's set lives in its app's cluster slot: one pipeline per slot, sent together.
    const res = await pipelineBySlot(
      this.redis,
      open,
      (s) => this.keys.grpcStreams(s.appId),
      (p, s) => {
        const key = this.keys.grpcStreams(s.appId)
        p.zadd(key, expiry, this.#member(s))
        p.pexpire(key, this.s.ttlMs * 10)
        // Members of dead instances are trimmed here too, so a set never grows with them.
        p.zremrangebyscore(key, '-inf', `(${Date.now()}`)
      },
    )
    const failed = firstError(res)
    if (failed) throw failed
    if (Date.now() - this.#lastPositions < this.s.positionEveryMs) return
    this.#lastPositions = Date.now()
    await query(
      this.db,
      // An upsert: a row folded away by retention (src/confirmations/retention.ts) comes back.
      `INSERT INTO event_streams AS s (id, app_id, last_seq, opened_at, seen_at)
       SELECT x.id, x.app, x.seq, $4, $4 FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS x(id, app, seq)
       ON CONFLICT (app_id, id) DO UPDATE SET last_seq = excluded.last_seq, seen_at = excluded.seen_at`,
      [open.map((s) => s.id), open.map((s) => s.appId), open.map((s) => s.cursor), new Date(this.now())],
    )
  }

  #member(s: Tracked): string {
    return `${this.instance}:${s.id}`
  }
}
