// What the package needs to know about a device (audience membership), cached per process for a minute so a warm
// poll costs no database round trip. Misses of one event-loop turn are loaded with one query per app; an unknown
// device is remembered for a shorter time (a device that registers right after polling is seen soon). Past
// `maxEntries` devices the least recently polled leave first (src/core/lru.ts); freshness is judged here by the clock.
import { Lru } from '../core/lru'
import { DEFAULT_LIMITS } from '../core/config'
import { type Db, query } from '../db/pool'
import type { Clock } from '../core/time'
import { MEMBERSHIPS_SQL } from './audience'

export interface Profile {
  externalUserId: string | null
  /** The device's in-app segments as audience.ts computes them (0 = outside the base). */
  memberships: number
}

interface Entry {
  p: Profile | null
  at: number
}

export class DeviceProfiles {
  readonly #map: Lru<string, Entry>
  #pending = new Map<string, Map<string, Array<(p: Profile | null) => void>>>()
  #failures = new Map<string, Array<(e: unknown) => void>>()
  #scheduled = false

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    maxEntries: number = DEFAULT_LIMITS.inappProfileCacheMax,
    private readonly ttlMs = 60_000,
    private readonly unknownTtlMs = 10_000,
  ) {
    this.#map = new Lru({ max: maxEntries })
  }

  /** The cached profile (null: no such device), or undefined when it must be loaded. */
  peek(appId: string, id: string): Profile | null | undefined {
    return this.peekEntry(appId, id)?.p
  }

  /** The cached profile and until when it holds, or undefined when it must be loaded. */
  peekEntry(appId: string, id: string): { p: Profile | null; until: number } | undefined {
    const e = this.#map.get(appId + id)
    if (!e) return undefined
    const until = e.at + (e.p ? this.ttlMs : this.unknownTtlMs)
    return this.clock() < until ? { p: e.p, until } : undefined
  }

  load(appId: string, id: string): Promise<Profile | null> {
    return new Promise((resolve, reject) => {
      let app = this.#pending.get(appId)
      if (!app) {
        app = new Map()
        this.#pending.set(appId, app)
      }
      const waiters = app.get(id) ?? []
      waiters.push(resolve)
      app.set(id, waiters)
      const f = this.#failures.get(appId) ?? []
      f.push(reject)
      this.#failures.set(appId, f)
      if (!this.#scheduled) {
        this.#scheduled = true
        setImmediate(() => this.#flush())
      }
    })
  }

  #flush(): void {
    this.#scheduled = false
    const pending = this.#pending
    const failures = this.#failures
    this.#pending = new Map()
    this.#failures = new Map()
    for (const [appId, ids] of pending) {
      const at = this.clock()
      query<{ id: string; external_user_id: string | null; memberships: number }>(
        this.db,
        `SELECT d.id, d.external_user_id, ${MEMBERSHIPS_SQL} AS memberships FROM devices d WHERE d.app_id = $1 AND d.id = ANY($2::uuid[])`,
        [appId, [...ids.keys()]],
      ).then(
        (r) => {
          const found = new Map<string, Profile>()
          for (const d of r.rows) found.set(d.id, { externalUserId: d.external_user_id, memberships: d.memberships })
          for (const [id, waiters] of ids) {
            const p = found.get(id) ?? null
            this.#map.set(appId + id, { p, at })
            for (const w of waiters) w(p)
          }
        },
        (err) => {
          for (const f of failures.get(appId) ?? []) f(err)
        },
      )
    }
  }
}
