// Cached resolution of apps and keys (the spec, Authentication 6): entries live 60 s; a change anywhere is published on Redis and
// every instance drops the app's entries within milliseconds. Concurrent misses for one id share one query.
// Both caches are bounded LRUs (src/core/lru.ts), and ids that resolved to nothing live in a separate, smaller LRU: a flood
// of random well-formed ids evicts only other misses, never the apps and keys real traffic uses. Freshness is judged
// here by the injected clock (fresh while younger than the ttl; a ttl of 0 keeps nothing): lru-cache's own ttl keeps
// an entry at exactly its ttl and reads 0 as "forever".
//
// A miss is kept a shorter while (PM_KEY_CACHE_MISS_TTL_MS) and dropped, on every instance, by any invalidation of
// any app: the id it names may be a key just created or rotated in (random ids make that practically impossible,
// but a key that works on one instance and not another for a minute would be a bug). So a random well-formed key
// costs one query, then nothing until its entry leaves.
import { Lru } from '../core/lru'
import type { Logger } from 'pino'
import type { Db } from '../db/pool'
import { type RedisClient, subscribe } from '../redis/client'
import type { Keys } from '../redis/keys'
import { type AppRecord, findApp, findKey, type KeyRecord } from './store'

interface Entry<T> {
  value: T
  at: number
}

export interface CacheBounds {
  /** Entries that resolved to a record. */
  max: number
  /** Entries that resolved to nothing (unknown ids). */
  missMax: number
  /** How long such an entry answers (default: the ttl; never longer). */
  missTtlMs?: number
}

export class TtlCache<T extends {}> {
  readonly #hits: Lru<string, Entry<T>>
  /** When the load that found nothing began. */
  readonly #misses: Lru<string, number>
  readonly #loading = new Map<string, Promise<T | null>>()
  /** Bumped by every invalidation: a load that began before one must not store what it read. */
  #generation = 0
  readonly #missTtlMs: number

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
    bounds: CacheBounds,
  ) {
    this.#hits = new Lru({ max: bounds.max })
    this.#misses = new Lru({ max: bounds.missMax })
    this.#missTtlMs = Math.min(ttlMs, bounds.missTtlMs ?? ttlMs)
  }

  /** Entries held (tests check the bounds). */
  get size(): { hits: number; misses: number } {
    return { hits: this.#hits.size, misses: this.#misses.size }
  }

  async get(id: string, load: (id: string) => Promise<T | null>): Promise<T | null> {
    const e = this.#hits.get(id)
    if (e && this.now() - e.at < this.ttlMs) return e.value
    const missAt = this.#misses.get(id)
    if (missAt !== undefined && this.now() - missAt < this.#missTtlMs) return null
    let p = this.#loading.get(id)
    if (!p) {
      const startedAt = this.now()
      const generation = this.#generation
      p = load(id).then(
        (value) => {
          this.#loading.delete(id)
          if (generation !== this.#generation) return value
          if (value === null) {
            this.#hits.delete(id)
            this.#misses.set(id, startedAt)
          } else {
            this.#misses.delete(id)
            this.#hits.set(id, { value, at: startedAt })
          }
          return value
        },
        (err) => {
          this.#loading.delete(id)
          throw err
        },
      )
      this.#loading.set(id, p)
    }
    return p
  }

  delete(id: string): void {
    this.#generation++
    this.#loading.delete(id)
    this.#hits.delete(id)
    this.#misses.delete(id)
  }

  /** Drops every miss (and keeps a load in flight from storing one it began before). */
  clearMisses(): void {
    this.#generation++
    this.#misses.clear()
  }

  deleteWhere(pred: (v: T) => boolean): void {
    this.#generation++
    const dropped: string[] = []
    for (const [id, e] of this.#hits.entries()) if (pred(e.value)) dropped.push(id)
    for (const id of dropped) this.#hits.delete(id)
  }

  clear(): void {
    this.#generation++
    this.#hits.clear()
    this.#misses.clear()
  }
}

export class AppDirectory {
  readonly #apps: TtlCache<AppRecord>
  readonly #keys: TtlCache<KeyRecord>
  #unsubscribe: (() => void) | null = null
  readonly #listeners = new Set<(appId: string | null) => void>()

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly log: Logger,
    ttlMs: number,
    now: () => number,
    bounds: CacheBounds,
  ) {
    this.#apps = new TtlCache(ttlMs, now, bounds)
    this.#keys = new TtlCache(ttlMs, now, bounds)
  }

  /** Entries held by the key cache (tests check its bounds). */
  get keyCacheSize(): { hits: number; misses: number } {
    return this.#keys.size
  }

  /** Subscribes to invalidations on a dedicated connection; on reconnect everything is dropped (messages may be lost). */
  async start(): Promise<void> {
    this.#unsubscribe = await subscribe(
      this.redis,
      [this.keys.invalidations()],
      (_ch, appId) => this.#drop(appId),
      () => {
        this.log.info('invalidation channel reconnected; caches cleared')
        this.clear()
      },
    )
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.()
    this.#unsubscribe = null
  }

  app(id: string): Promise<AppRecord | null> {
    return this.#apps.get(id, (x) => findApp(this.db, x))
  }

  key(kid: string): Promise<KeyRecord | null> {
    return this.#keys.get(kid, (x) => findKey(this.db, x))
  }

  /** Tells every instance (this one included) that an app's keys or state changed. */
  async invalidate(appId: string): Promise<void> {
    this.#drop(appId)
    await this.redis.publish(this.keys.invalidations(), appId)
  }

  clear(): void {
    this.#apps.clear()
    this.#keys.clear()
    this.#notify(null)
  }

  /** Called after an app's entries were dropped here (null: all of them); open confirmation streams re-check. */
  onDrop(listener: (appId: string | null) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #drop(appId: string): void {
    this.#apps.delete(appId)
    this.#keys.deleteWhere((k) => k.appId === appId)
    // A miss does not say whose id it was: a key just created or rotated in may be one of them.
    this.#keys.clearMisses()
    this.#notify(appId)
  }

  #notify(appId: string | null): void {
    for (const l of this.#listeners) l(appId)
  }
}
