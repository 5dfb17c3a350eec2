// An app's pace toward the providers (the spec, App rate_por_min): a token bucket refilled continuously, with a burst
// of one second's worth. A provider 429 pauses the whole bucket (back-pressure, honouring Retry-After).
//
// An app's devices may be delivered by several processes at once (a big send's slices, slices.ts), so its bucket
// lives in Redis (SharedBucket): one Lua script refills it and hands out tokens, a tenth of a second's worth at a
// time, which the actor spends locally (one round trip per batch of tokens, not per device). The same script keeps
// the lanes across processes: while any process asks for transactional tokens (a marker that lapses after
// LANE_MARK_MS), marketing asks get none. Without a shared bucket (unit tests) the bucket is local.
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'

/** How long a transactional ask holds marketing back, across processes. */
export const LANE_MARK_MS = 250

/** The app's shared bucket: at most `want` tokens now, or how long to wait for one. */
export interface PaceStore {
  take(ratePerMin: number, want: number, lane: 0 | 1, now: number): Promise<{ granted: number; waitMs: number }>
  pause(untilMs: number): Promise<void>
}

// KEYS: the bucket (hash: t tokens, at last refill, p paused until), the transactional marker; one hash slot.
// ARGV: now ms, rate per minute, want, lane, marker ms. A clock behind the bucket's (another process) refills nothing.
const TAKE = `
local now = tonumber(ARGV[1]) local rate = tonumber(ARGV[2]) local want = tonumber(ARGV[3])
local burst = math.max(1, rate / 60)
local h = redis.call('HMGET', KEYS[1], 't', 'at', 'p')
local tokens = tonumber(h[1]) local at = tonumber(h[2]) local paused = tonumber(h[3]) or 0
if tokens == nil or at == nil then tokens = burst at = now end
if now > at then tokens = tokens + (now - at) * rate / 60000 at = now end
if tokens > burst then tokens = burst end
local granted = 0 local wait = 0
if now < paused then
  wait = paused - now
elseif ARGV[4] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then
  wait = math.max(1, redis.call('PTTL', KEYS[2]))
else
  if ARGV[4] == '0' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[5]) end
  granted = math.min(want, math.floor(tokens))
  tokens = tokens - granted
  if granted == 0 then wait = math.ceil((1 - tokens) * 60000 / rate) end
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', tostring(at), 'p', tostring(paused))
redis.call('PEXPIRE', KEYS[1], 120000)
return {granted, wait}`

const PAUSE = `
local p = tonumber(redis.call('HGET', KEYS[1], 'p')) or 0
if tonumber(ARGV[1]) > p then redis.call('HSET', KEYS[1], 'p', ARGV[1]) redis.call('PEXPIRE', KEYS[1], 120000) end
return 0`

/** An app's bucket in Redis, shared by every process delivering for the app. */
export class SharedBucket implements PaceStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly appId: string,
  ) {}

  async take(ratePerMin: number, want: number, lane: 0 | 1, now: number): Promise<{ granted: number; waitMs: number }> {
    const [granted, waitMs] = (await this.redis.eval(
      TAKE,
      2,
      this.keys.pace(this.appId),
      this.keys.paceLane(this.appId),
      now,
      ratePerMin,
      want,
      lane,
      LANE_MARK_MS,
    )) as [number, number]
    return { granted: Number(granted), waitMs: Number(waitMs) }
  }

  async pause(untilMs: number): Promise<void> {
    await this.redis.eval(PAUSE, 1, this.keys.pace(this.appId), untilMs)
  }
}

/** After a failed ask of the shared bucket (Redis away), the pacer waits this long before asking again. */
const STORE_RETRY_MS = 200
/** Why an actor waited before a delivery: its app's pace, or a provider's Retry-After. */
export type PaceCause = 'rate' | 'retry_after'

export class Pacer {
  /** Tokens granted by the shared bucket, not spent yet. */
  #stash = 0
  #tokens: number
  #at: number
  #pausedUntil = 0

  constructor(
    private ratePerMin: number,
    private readonly clock: Clock,
    private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void> = abortableSleep,
    private readonly store?: PaceStore,
    /** Told of every wait (metrics: pacing waits); a wait is already a sleep, so this costs nothing when sending. */
    private readonly onWait: (cause: PaceCause, ms: number) => void = () => {},
  ) {
    this.#tokens = this.#burst()
    this.#at = clock()
  }

  setRate(ratePerMin: number): void {
    this.#refill()
    this.ratePerMin = ratePerMin
    this.#tokens = Math.min(this.#tokens, this.#burst())
  }

  /**
   * A token at once when one is at hand (granted earlier by the shared bucket, or in the local one), without a
   * wait or an ask; false sends the caller to take(). Spares the actor's loop a promise per device.
   */
  tryTake(signal: AbortSignal): boolean {
    if (signal.aborted || this.clock() < this.#pausedUntil) return false
    if (this.store) {
      if (this.#stash === 0) return false
      this.#stash--
      return true
    }
    this.#refill()
    if (this.#tokens < 1) return false
    this.#tokens -= 1
    return true
  }

  /** Waits for a token for a device of `lane`; false when stopped first. */
  async take(signal: AbortSignal, lane: 0 | 1 = 0): Promise<boolean> {
    for (;;) {
      // A token at hand (the shared bucket's stash, or the local bucket just refilled) is taken as tryTake takes it.
      if (this.tryTake(signal)) return true
      if (signal.aborted) return false
      const now = this.clock()
      if (now < this.#pausedUntil) {
        this.onWait('retry_after', this.#pausedUntil - now)
        await this.sleep(this.#pausedUntil - now, signal)
        continue
      }
      if (this.store) {
        // A tenth of a second's worth per ask: few round trips, and little left unspent by an actor that stops.
        const want = Math.max(1, Math.min(500, Math.floor(this.ratePerMin / 600)))
        const r = await this.store.take(this.ratePerMin, want, lane, now).catch(() => ({ granted: 0, waitMs: STORE_RETRY_MS }))
        this.#stash += r.granted
        if (r.granted === 0) {
          this.onWait('rate', Math.max(1, r.waitMs))
          await this.sleep(Math.max(1, r.waitMs), signal)
        }
        continue
      }
      // The local bucket is short of a token: wait until it has one.
      const perMs = this.ratePerMin / 60_000
      const ms = Math.max(1, Math.ceil((1 - this.#tokens) / perMs))
      this.onWait('rate', ms)
      await this.sleep(ms, signal)
    }
  }

  /** A provider asked to slow down: nothing leaves until `ms` have passed. */
  pause(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.clock() + ms)
    this.store?.pause(this.#pausedUntil).catch(() => {})
  }

  #burst(): number {
    return Math.max(1, this.ratePerMin / 60)
  }

  #refill(): void {
    const now = this.clock()
    this.#tokens = Math.min(this.#burst(), this.#tokens + ((now - this.#at) * this.ratePerMin) / 60_000)
    this.#at = now
  }
}

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}
