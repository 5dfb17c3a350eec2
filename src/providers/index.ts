// Providers by platform, and a small cache of them per (app, platform, credential version): the FCM access token and
// the APNs provider token live as long as the credential version does (a new version, e.g. an environment change,
// gets a fresh provider at once; the spec, Delivery credentials "effective immediately"). Past `max` (app, platform)
// pairs the least recently used provider leaves (lru-cache) and is made again when its app sends again.
import { LRUCache } from 'lru-cache'
import { DEFAULT_LIMITS } from '../core/config'
import { type Clock, systemClock } from '../core/time'
import type { ApnsCredential, FcmCredential, Platform } from './credentials'
import { ApnsProvider } from './apns'
import { ApnsTokens } from './apns-token'
import { FcmProvider } from './fcm'
import type { H2Pool } from '../h2/pool'
import type { Outcome, Provider } from './types'

export interface ProviderDeps {
  pool: H2Pool
  /** cfg.fcmBaseUrl */
  fcmBaseUrl: string
  /** cfg.apnsBaseUrl (null: Apple's host by the credential's environment) */
  apnsBaseUrl: string | null
  clock?: Clock
  /** One provider token per APNs signing key across apps; providerFor makes one per call when absent. */
  apnsTokens?: ApnsTokens
  /** Told of every provider answer with its duration (metrics); ProviderCache wraps its providers with it. */
  observe?: ProviderObserver
  /** ProviderCache: (app, platform) pairs kept; default two per app of the app cache's bound. */
  max?: number
}

export type ProviderObserver = (platform: Platform, outcome: Outcome, seconds: number) => void

/** A provider whose every answer is timed and told to `observe` (a throw from the observer is not the send's). */
export function observed(platform: Platform, p: Provider, observe: ProviderObserver): Provider {
  return {
    apnsEnv: p.apnsEnv,
    async send(target, push) {
      const t0 = performance.now()
      const outcome = await p.send(target, push)
      try {
        observe(platform, outcome, (performance.now() - t0) / 1000)
      } catch {}
      return outcome
    },
    close: () => p.close(),
  }
}

export function providerFor(platform: 'fcm', credential: FcmCredential, deps: ProviderDeps): Provider
export function providerFor(platform: 'apns', credential: ApnsCredential, deps: ProviderDeps): Provider
export function providerFor(platform: Platform, credential: FcmCredential | ApnsCredential, deps: ProviderDeps): Provider
export function providerFor(platform: Platform, credential: FcmCredential | ApnsCredential, deps: ProviderDeps): Provider {
  const clock = deps.clock ?? systemClock
  if (platform === 'fcm')
    return new FcmProvider(credential as FcmCredential, { baseUrl: deps.fcmBaseUrl, pool: deps.pool, clock })
  return new ApnsProvider(credential as ApnsCredential, {
    baseUrl: deps.apnsBaseUrl,
    pool: deps.pool,
    clock,
    tokens: deps.apnsTokens,
  })
}

export class ProviderCache {
  readonly #byApp: LRUCache<string, { version: string | number; provider: Provider }>
  readonly #deps: ProviderDeps

  constructor(deps: ProviderDeps) {
    this.#deps = { ...deps, apnsTokens: deps.apnsTokens ?? new ApnsTokens() }
    this.#byApp = new LRUCache({
      max: deps.max ?? 2 * DEFAULT_LIMITS.appCacheMax,
      dispose: (held, _key, reason) => {
        if (reason === 'evict') void held.provider.close()
      },
    })
  }

  /** The provider for this credential version; an older version of the same (app, platform) is closed. */
  get(appId: string, platform: Platform, version: string | number, credential: FcmCredential | ApnsCredential): Provider {
    const key = `${appId}:${platform}`
    const hit = this.#byApp.get(key)
    if (hit?.version === version) return hit.provider
    if (hit) void hit.provider.close()
    const made = providerFor(platform, credential, this.#deps)
    const provider = this.#deps.observe ? observed(platform, made, this.#deps.observe) : made
    this.#byApp.set(key, { version, provider })
    return provider
  }

  /** The credential was deleted (or the app went away): forget its provider(s). */
  evict(appId: string, platform?: Platform): void {
    for (const p of platform ? [platform] : (['fcm', 'apns'] as const)) {
      const hit = this.#byApp.peek(`${appId}:${p}`)
      if (!hit) continue
      this.#byApp.delete(`${appId}:${p}`)
      void hit.provider.close()
    }
  }

  async close(): Promise<void> {
    const all = [...this.#byApp.values()]
    this.#byApp.clear()
    await Promise.all(all.map((h) => h.provider.close()))
  }
}
