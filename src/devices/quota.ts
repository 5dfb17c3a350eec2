// Per-app limits of the device routes, counted in Redis so every instance shares them (the spec, Limits): registrations
// per hour and exports per second. Both are window counters (src/redis/window-counter.ts): the takes of one
// event-loop turn cost one pipeline, whatever the load.
import { ApiError } from '../core/errors'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { WindowCounter } from '../redis/window-counter'
import type { Clock } from '../core/time'

const HOUR_MS = 3_600_000

export class DeviceQuotas {
  readonly #registrations: WindowCounter
  readonly #exports: WindowCounter

  constructor(redis: RedisClient, keys: Keys, clock: Clock, registrationsPerHour: number, exportsPerSec: number) {
    this.#registrations = new WindowCounter(redis, (a, w) => keys.registrations(a, w), HOUR_MS, registrationsPerHour, clock)
    this.#exports = new WindowCounter(redis, (a, w) => keys.exports(a, w), 1_000, exportsPerSec, clock)
  }

  /** Counts one registration for the app; 429 past the hourly limit (no Retry-After). 0 disables the limit. */
  async takeRegistration(appId: string): Promise<void> {
    if (!(await this.#registrations.take(appId))) {
      throw new ApiError('REGISTRATIONS_RATE_LIMITED', { limite: this.#registrations.limit })
    }
  }

  /** Exports per second per app (the spec, Limits: 1); the second is the service clock's. */
  async takeExport(appId: string): Promise<void> {
    if (!(await this.#exports.take(appId))) throw new ApiError('EXPORT_RATE_LIMITED', { limite: this.#exports.limit })
  }
}
