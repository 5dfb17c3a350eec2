// APNs BadDeviceToken means a dead token, or that the app's tokens are for the other environment (a sandbox build's
// tokens sent with a production credential: Apple then answers BadDeviceToken to every one of them). An app's whole
// iOS base must not be invalidated over an environment problem, and one send is too small a sample to tell the two
// apart (a one-device send to a dead token is 100% BadDeviceToken). So it is judged per app and per credential
// environment over the app's APNs answers of the last WINDOW_H hours, from every worker, kept in Redis in hourly
// buckets (ApnsAnswers); the actor counts each answer in memory and the counts reach Redis in batches.
//
// The rule (docs/design/delivery.md, docs/decisions.md), at the end of a send (or slice) with BadDeviceToken answers:
// its devices are invalidated when the app's window in that environment, this send included, holds at least one
// accepted answer (the environment is confirmed) and BadDeviceToken is under PM_APNS_SUSPECT_PERCENT of it (or is a
// single answer). Otherwise
// nothing is invalidated and the send names the suspected mismatch in `pm_problema`; its tokens stay valid, and the
// first later send judged once the environment is confirmed invalidates those that still answer BadDeviceToken.
import type { Logger } from 'pino'
import { DEFAULT_DELIVERY } from '../core/config'
import { type Db, query } from '../db/pool'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { pipelineBySlot } from '../redis/slots'
import type { Clock } from '../core/time'
import { setProblem } from './audience'

export type ApnsEnv = 'sandbox' | 'production'

/** How far back an app's APNs answers count, in hours (one Redis hash field pair per hour). */
export const WINDOW_H = 24
const HOUR_MS = 3_600_000
/** How often the counts noted in memory are written to Redis, when there are any. */
const FLUSH_MS = 1_000

/** APNs answers of one app in one environment: accepted, and BadDeviceToken. */
export interface ApnsTally {
  ok: number
  bad: number
}

/**
 * KEYS[1] an app's answers in one environment: a hash of `o:<hour>` (accepted) and `b:<hour>` (BadDeviceToken).
 * ARGV[1] the current hour, ARGV[2] hours in the window, ARGV[3] the key's lifetime in ms, then triples from ARGV[4]:
 * hour, accepted and BadDeviceToken to add to it. Deletes the hours before the window and returns {accepted,
 * BadDeviceToken} summed over the window.
 */
const ADD_AND_SUM = `
local oldest = tonumber(ARGV[1]) - tonumber(ARGV[2]) + 1
for i = 4, #ARGV, 3 do
  if tonumber(ARGV[i + 1]) > 0 then redis.call('HINCRBY', KEYS[1], 'o:' .. ARGV[i], ARGV[i + 1]) end
  if tonumber(ARGV[i + 2]) > 0 then redis.call('HINCRBY', KEYS[1], 'b:' .. ARGV[i], ARGV[i + 2]) end
end
local all = redis.call('HGETALL', KEYS[1])
local ok, bad = 0, 0
for i = 1, #all, 2 do
  local hour = tonumber(string.sub(all[i], 3)) or 0
  if hour < oldest then redis.call('HDEL', KEYS[1], all[i])
  elseif string.sub(all[i], 1, 1) == 'o' then ok = ok + tonumber(all[i + 1])
  else bad = bad + tonumber(all[i + 1]) end
end
if #all > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {ok, bad}`

/** Counts of one app and environment not written yet, by the hour they were answered in. */
interface Pending {
  appId: string
  env: ApnsEnv
  hours: Map<number, ApnsTally>
}

/** The app's recent APNs answers, shared by every worker through Redis; counted in memory, written in batches. */
export class ApnsAnswers {
  #pending = new Map<string, Pending>()
  #timer: NodeJS.Timeout | null = null

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** One APNs answer (no round trip: written with the next batch, or with the app's next judgement). */
  note(appId: string, env: ApnsEnv, accepted: boolean): void {
    this.#add(appId, env, Math.floor(this.clock() / HOUR_MS), accepted ? 1 : 0, accepted ? 0 : 1)
  }

  #add(appId: string, env: ApnsEnv, hour: number, ok: number, bad: number): void {
    const k = `${appId}:${env}`
    let p = this.#pending.get(k)
    if (!p) {
      p = { appId, env, hours: new Map() }
      this.#pending.set(k, p)
    }
    const h = p.hours.get(hour)
    if (h) {
      h.ok += ok
      h.bad += bad
    } else p.hours.set(hour, { ok, bad })
    this.#timer ??= setTimeout(() => {
      this.#timer = null
      this.flush().catch((err) => this.log.warn({ err: String(err) }, 'APNs answer counts not written; kept for the next try'))
    }, FLUSH_MS).unref()
  }

  /** The app's answers in `env` over the window, with this worker's counts not yet written added first (one round trip). */
  async recent(appId: string, env: ApnsEnv): Promise<ApnsTally> {
    const k = `${appId}:${env}`
    const p = this.#pending.get(k)
    this.#pending.delete(k)
    try {
      const [ok, bad] = (await this.redis.eval(ADD_AND_SUM, 1, ...this.#args(appId, env, p))) as [number, number]
      return { ok: Number(ok), bad: Number(bad) }
    } catch (err) {
      if (p) this.#restore(p)
      throw err
    }
  }

  /** Writes every count noted so far: one script per app and environment, pipelined (per cluster slot). */
  async flush(): Promise<void> {
    const batch = [...this.#pending.values()]
    this.#pending.clear()
    if (batch.length === 0) return
    try {
      const replies = await pipelineBySlot(
        this.redis,
        batch,
        (p) => this.keys.apnsAnswers(p.appId, p.env),
        (pipe, p) => {
          pipe.eval(ADD_AND_SUM, 1, ...this.#args(p.appId, p.env, p))
        },
      )
      replies.forEach((r, i) => {
        if (r[0]?.[0]) this.#restore(batch[i] as Pending)
      })
    } catch (err) {
      for (const p of batch) this.#restore(p)
      throw err
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    await this.flush().catch((err) => this.log.warn({ err: String(err) }, 'APNs answer counts lost at stop'))
  }

  #args(appId: string, env: ApnsEnv, p: Pending | undefined): Array<string | number> {
    const args: Array<string | number> = [
      this.keys.apnsAnswers(appId, env),
      Math.floor(this.clock() / HOUR_MS),
      WINDOW_H,
      (WINDOW_H + 1) * HOUR_MS,
    ]
    for (const [hour, t] of p?.hours ?? []) args.push(hour, t.ok, t.bad)
    return args
  }

  /** Counts whose write failed go back to be written with the next ones. */
  #restore(p: Pending): void {
    for (const [hour, t] of p.hours) this.#add(p.appId, p.env, hour, t.ok, t.bad)
  }
}

/**
 * Whether the answers point to an environment mismatch rather than dead tokens: no success confirms the environment,
 * or BadDeviceToken reaches `suspectPercent` of them. A lone BadDeviceToken in a confirmed environment is a dead token
 * whatever its share (an app that delivered to one device and has one dead token is at 50%): a mismatch fails every
 * token of the other build, and one device is never the app's base.
 */
export function environmentSuspected(t: ApnsTally, suspectPercent: number): boolean {
  if (t.ok === 0) return true
  return t.bad > 1 && t.bad * 100 >= suspectPercent * (t.ok + t.bad)
}

export interface BadTokens {
  appId: string
  sendId: string
  env: ApnsEnv
  /** Devices of the send (or slice) that answered BadDeviceToken. */
  bad: readonly string[]
  /** The send's accepted APNs answers. */
  accepted: number
}

/**
 * At the end of a send with BadDeviceToken answers: invalidates its devices, or names the suspected environment
 * problem. Without Redis the send's own answers are all the evidence there is, judged by the same rule.
 */
export async function invalidateBadTokens(
  d: { db: Db; answers?: ApnsAnswers; log: Logger },
  b: BadTokens,
  now: Date,
  suspectPercent: number = DEFAULT_DELIVERY.apnsSuspectPercent,
): Promise<'none' | 'invalidated' | 'environment'> {
  if (b.bad.length === 0) return 'none'
  const own: ApnsTally = { ok: b.accepted, bad: b.bad.length }
  let app: ApnsTally | null = null
  if (d.answers) {
    app = await d.answers.recent(b.appId, b.env).catch((err) => {
      d.log.warn(
        { err: String(err), app: b.appId, send: b.sendId },
        "the app's recent APNs answers could not be read; judged on the send's own",
      )
      return null
    })
  }
  const t = app ?? own
  if (environmentSuspected(t, suspectPercent)) {
    await setProblem(
      d.db,
      b.appId,
      b.sendId,
      `apns_ambiente_suspeito:BadDeviceToken em ${own.bad} de ${own.bad + own.ok} respostas do envio; ` +
        (app ? `nas últimas ${WINDOW_H} h o app teve ${app.ok} aceitas e ${app.bad} BadDeviceToken (${b.env})` : `(${b.env})`),
    )
    return 'environment'
  }
  await query(
    d.db,
    `UPDATE devices SET invalid_identifier = true, invalid_reason = 'BadDeviceToken', updated_at = $3
      WHERE app_id = $1 AND id = ANY($2::uuid[])`,
    [b.appId, b.bad, now],
  )
  return 'invalidated'
}
