// The free plan's monthly-active-user allowance (the spec, Limits): measured per organisation by a periodic job, read
// at send time from a short cache. A missing or too-old measurement allows the send (spec: the gate never blocks on
// a measurement it does not have).
import type { Logger } from 'pino'
import type { AppRecord } from '../apps/store'
import { atBusinessZone } from '../core/business-time'
import { type Db, query } from '../db/pool'
import { ApiError } from '../core/errors'
import type { RedisClient } from '../redis/client'
import type { Clock } from '../core/time'

export interface MauSettings {
  freeMau: number
  /** A measurement older than this is ignored (the send is allowed). */
  maxAgeMs: number
  /** How often the job measures. */
  intervalMs: number
  /** Shown in the refusal: what leaving the free plan costs. */
  proPrice: string
}

interface Measurement {
  month: string
  mau: number
  measuredAtMs: number
}

const LOCAL_NOW = atBusinessZone('$1::timestamptz')

/**
 * A device is active in a month when it showed a sign of life in it (registration/session or receipt), and counts only
 * once it has shown it is real: a provider accepted a push to its token (`push_accepted_at`, written by the outcome
 * batch) or it returned a delivery receipt (`last_receipt_at`). A registration alone proves nothing (anyone may post
 * any token to an app's public app_id), so registrations alone can never spend an organisation's allowance
 * (docs/decisions.md, "Monthly active users: only devices shown to be real"). Months are the business zone's
 * (src/core/business-time.ts): they turn at the instant the statistics' days do.
 */
export async function measureMau(db: Db, now: Date): Promise<number> {
  const r = await query(
    db,
    `INSERT INTO org_mau (org_id, month, mau, measured_at)
     SELECT o.id, to_char(${LOCAL_NOW}, 'YYYY-MM'), count(d.id)::int, $1
       FROM orgs o
       LEFT JOIN apps a ON a.org_id = o.id
       LEFT JOIN devices d ON d.app_id = a.id AND NOT d.sandbox
                          AND d.last_active >= ${atBusinessZone(`date_trunc('month', ${LOCAL_NOW})`)}
                          AND (d.push_accepted_at IS NOT NULL OR d.last_receipt_at IS NOT NULL)
      GROUP BY o.id
     ON CONFLICT (org_id) DO UPDATE SET month = excluded.month, mau = excluded.mau, measured_at = excluded.measured_at`,
    [now],
  )
  return r.rowCount ?? 0
}

export class MauGate {
  readonly #cache = new Map<string, { m: Measurement | null; at: number }>()
  #timer: NodeJS.Timeout | null = null

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly lockKey: string,
    private readonly s: MauSettings,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** 422 when the app's organisation is on the free plan and its fresh measurement is above the allowance. */
  async check(app: AppRecord): Promise<void> {
    if (app.plan !== 'free') return
    let m: Measurement | null
    try {
      m = await this.#measurement(app.orgId)
    } catch {
      return // spec: with no database the gate allows (the send itself then reports the outage)
    }
    if (!m) return
    const ageMs = this.clock() - m.measuredAtMs
    if (ageMs > this.s.maxAgeMs || m.mau <= this.s.freeMau) return
    throw new ApiError('MAU_EXCEEDED', {
      mau_gratis: this.s.freeMau,
      mau: m.mau,
      medido_ha_s: Math.max(0, Math.floor(ageMs / 1000)),
      mes_medido: m.month,
      preco_plano_pro: this.s.proPrice,
    })
  }

  async #measurement(orgId: string): Promise<Measurement | null> {
    const hit = this.#cache.get(orgId)
    if (hit && this.clock() - hit.at < 30_000) return hit.m
    const r = await query<{ month: string; mau: number; measured_at: Date }>(
      this.db,
      'SELECT month, mau, measured_at FROM org_mau WHERE org_id = $1',
      [orgId],
    )
    const row = r.rows[0]
    const m = row ? { month: row.month, mau: row.mau, measuredAtMs: row.measured_at.getTime() } : null
    this.#cache.set(orgId, { m, at: this.clock() })
    return m
  }

  /** Drops cached measurements (after a measurement, or in tests). */
  forget(): void {
    this.#cache.clear()
  }

  /** Measures now (one instance at a time: a Redis lock), and drops the cache. */
  async measureNow(): Promise<void> {
    const ok = await this.redis.set(this.lockKey, '1', 'PX', Math.max(1_000, this.s.intervalMs - 1_000), 'NX')
    if (ok) await measureMau(this.db, new Date(this.clock()))
    this.#cache.clear()
  }

  start(): void {
    const tick = () => {
      this.measureNow().catch((err) => this.log.warn({ err: String(err) }, 'MAU measurement failed'))
    }
    tick()
    this.#timer = setInterval(tick, this.s.intervalMs)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }
}
