// The devices feature as other parts of the process see it: registration (quota, then group commit), the PUT
// update, the read shape, and the exporter. Built once per process by src/service/service.ts.
import type { Infra } from '../infra/infra'
import { type Db, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import { type Clock, epochSeconds } from '../core/time'
import { Exporter } from './export'
import { DeviceQuotas } from './quota'
import { applyUpdate, countUserDevices, type DeviceRow, findDevice, lockAll, lockDevice, lockKey } from './store'
import type { DeviceUpdate, RegistrationRow } from './validate'
import { RegistrationWriter } from './writer'

export type DeviceServiceDeps = Infra

/** the spec, Device read shape; playtime, session_count and device_os are shape constants. */
export function readShape(d: DeviceRow): Record<string, unknown> {
  return {
    id: d.id,
    identifier: d.identifier,
    device_type: d.device_type,
    notification_types: d.notification_types,
    invalid_identifier: d.invalid_identifier,
    external_user_id: d.external_user_id,
    app_version: d.app_version,
    device_model: d.device_model,
    tags: d.tags ?? {},
    last_active: epochSeconds(d.last_active),
    created_at: epochSeconds(d.created_at),
    playtime: 0,
    session_count: 0,
    device_os: null,
    language: d.language,
    timezone: d.timezone,
  }
}

export class DeviceService {
  readonly writer: RegistrationWriter
  readonly quotas: DeviceQuotas
  readonly exporter: Exporter
  readonly #db: Db
  readonly #clock: Clock
  readonly #devicesPerUser: number

  constructor(d: DeviceServiceDeps) {
    const l = d.cfg.limits
    this.#db = d.db
    this.#clock = d.clock
    this.#devicesPerUser = l.devicesPerExternalUser
    this.writer = new RegistrationWriter(d.db, d.clock, d.log.child({ mod: 'registrations' }), {
      maxBatch: l.registrationBatchMax,
      concurrency: l.registrationWriters,
      maxQueue: l.registrationQueueMax,
      devicesPerUser: l.devicesPerExternalUser,
    })
    this.quotas = new DeviceQuotas(d.redis, d.keys, d.clock, l.registrationsPerHour, l.exportsPerSec)
    this.exporter = new Exporter(
      d.db,
      d.cfg.exportDir,
      d.cfg.publicBaseUrl,
      l.exportValidityH,
      d.clock,
      d.log.child({ mod: 'export' }),
      d.cfg.exports,
    )
    this.exporter.startSweeping()
  }

  /** Counts the registration against the app's hour (429), then resolves with the player_id once durable. */
  async register(row: RegistrationRow): Promise<string> {
    await this.quotas.takeRegistration(row.app_id)
    return this.writer.submit(row)
  }

  /**
   * PUT (the spec, Devices): 404 when the device is not in the app; the per-user cap is checked only when the binding
   * changes to a new user. The user's advisory lock is taken before the row lock, in the writer's order.
   */
  async update(appId: string, playerId: string, u: DeviceUpdate): Promise<void> {
    await tx(this.#db, async (c) => {
      const login = typeof u.external_user_id === 'string' ? u.external_user_id : null
      if (login !== null) await lockAll(c, [lockKey(appId, 'user', login)])
      const cur = await lockDevice(c, appId, playerId)
      if (!cur) throw new ApiError('PLAYER_NOT_FOUND')
      if (login !== null && cur.external_user_id !== login) {
        if ((await countUserDevices(c, appId, login, playerId)) >= this.#devicesPerUser) {
          throw new ApiError('EXTERNAL_USER_DEVICE_LIMIT', { limite: this.#devicesPerUser })
        }
      }
      await applyUpdate(c, appId, playerId, u, new Date(this.#clock()))
    })
  }

  async read(appId: string, playerId: string): Promise<Record<string, unknown> | null> {
    const row = await findDevice(this.#db, appId, playerId)
    return row ? readShape(row) : null
  }

  /** Finishes every accepted registration, then stops exports. Call after the HTTP servers have drained. */
  async stop(): Promise<void> {
    await this.writer.stop()
    await this.exporter.stop()
  }
}
