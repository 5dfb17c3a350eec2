// Per-app limits counted in Redis so every instance shares them (spec §Limits): registrations per hour and exports
// per second. Registration counts are batched: all the takes of one event-loop turn become one pipeline with one
// INCRBY (+ EXPIRE) per app, and each request learns its own position in the hour from the new total. That is
// exactly as precise as one INCR per request, at a fraction of the Redis round trips under load.
import { ApiError } from '../errors'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../time'

const HOUR_MS = 3_600_000

interface Take {
  resolve: () => void
  reject: (err: unknown) => void
}

export class DeviceQuotas {
  #pending = new Map<string, Take[]>()
  #scheduled = false

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly registrationsPerHour: number,
    private readonly exportsPerSec: number,
  ) {}

  /** Counts one registration for the app; 429 past the hourly limit (no Retry-After). 0 disables the limit. */
  takeRegistration(appId: string): Promise<void> {
    if (this.registrationsPerHour <= 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const list = this.#pending.get(appId)
      if (list) list.push({ resolve, reject })
      else this.#pending.set(appId, [{ resolve, reject }])
      if (!this.#scheduled) {
        this.#scheduled = true
        setImmediate(() => this.#flush())
      }
    })
  }

  async #flush(): Promise<void> {
    this.#scheduled = false
    const batch = this.#pending
    this.#pending = new Map()
    const hour = Math.floor(this.clock() / HOUR_MS)
    const apps = [...batch.keys()]
    const pipe = this.redis.pipeline()
    for (const app of apps) {
      const key = this.keys.registrations(app, hour)
      pipe.incrby(key, (batch.get(app) as Take[]).length)
      pipe.expire(key, 7_200)
    }
    let results: Array<[Error | null, unknown]>
    try {
      results = ((await pipe.exec()) ?? []) as Array<[Error | null, unknown]>
    } catch (err) {
      for (const list of batch.values()) for (const t of list) t.reject(err)
      return
    }
    apps.forEach((app, i) => {
      const list = batch.get(app) as Take[]
      const [err, total] = results[i * 2] ?? [new Error('redis: no reply'), 0]
      if (err) {
        for (const t of list) t.reject(err)
        return
      }
      // Requests of this turn hold positions total-n+1 … total, in arrival order.
      const first = Number(total) - list.length + 1
      list.forEach((t, j) => {
        if (first + j <= this.registrationsPerHour) t.resolve()
        else t.reject(new ApiError('REGISTRATIONS_RATE_LIMITED', { limite: this.registrationsPerHour }))
      })
    })
  }

  /** Exports per second per app (spec §Limits: 1). The second is the service clock's; the key expires on its own. */
  async takeExport(appId: string): Promise<void> {
    if (this.exportsPerSec <= 0) return
    const key = this.keys.exports(appId, Math.floor(this.clock() / 1000))
    const res = await this.redis.multi().incr(key).pexpire(key, 2_000).exec()
    const [err, n] = res?.[0] ?? [new Error('redis: no reply'), 0]
    if (err) throw err
    if (Number(n) > this.exportsPerSec) throw new ApiError('EXPORT_RATE_LIMITED', { limite: this.exportsPerSec })
  }
}
