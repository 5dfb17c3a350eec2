// Providers by platform, and a small cache of them per (app, platform, credential version): the FCM access token and
// the APNs provider token live as long as the credential version does (a new version, e.g. an environment change,
// gets a fresh provider at once; the spec, Delivery credentials "effective immediately"). Past `max` (app, platform)
// pairs the least recently used provider leaves (src/core/lru.ts) and is made again when its app sends again.
import { Lru } from '../core/lru'
import { DEFAULT_LIMITS } from '../core/config'
import { type Clock, systemClock } from '../core/time'
import type { ApnsCredential, FcmCredential, Platform, SimulatorTarget } from './credentials'
import { simulatorTargetRefusal } from './endpoints'
import { ApnsProvider } from './apns'
import { ApnsTokens } from './apns-token'
import { FcmProvider } from './fcm'
import { H2Pool } from '../h2/pool'
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
  /**
   * cfg.allowSimulators (PM_ALLOW_SIMULATORS): simulator credentials are delivered to their simulator through
   * `simulatorPool`. Off (the default), such a credential is refused at use, so no push of any app ever goes to a
   * simulator on an instance that does not allow them.
   */
  allowSimulators?: boolean
  /** The pool for a simulator's address, trusting that simulator's CA (one per CA, owned by the caller). */
  simulatorPool?: (ca: string) => H2Pool
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

/** Why a simulator credential is not honoured here, as a send's pm_problema says it. */
export const SIMULATORS_OFF = 'simulator credential refused: this instance does not allow simulators (PM_ALLOW_SIMULATORS is off)'

/** A provider that answers every send with one credential outcome and calls nobody. */
function refusing(reason: string, apnsEnv?: 'sandbox' | 'production'): Provider {
  return {
    apnsEnv,
    send: () => Promise.resolve({ kind: 'credential', reason }),
    close: () => Promise.resolve(),
  }
}

/** Where a credential's requests go: the configured providers, or, for a simulator credential, its simulator. */
export type ProviderRoute = { pool: H2Pool; fcmBaseUrl: string; apnsBaseUrl: string | null } | { refused: string }

/**
 * The route of a credential. A simulator credential goes to its simulator only where the instance allows simulators
 * and its address is an https loopback URL (src/providers/endpoints.ts); anywhere else it is refused, never sent to
 * the configured providers either (its key is the simulator's). The delivery engine and the connection test both
 * route through here.
 */
export function providerRoute(
  credential: FcmCredential | ApnsCredential,
  deps: Pick<ProviderDeps, 'pool' | 'fcmBaseUrl' | 'apnsBaseUrl' | 'allowSimulators' | 'simulatorPool'>,
): ProviderRoute {
  const target: SimulatorTarget | undefined = credential.simulator
  if (target === undefined) return { pool: deps.pool, fcmBaseUrl: deps.fcmBaseUrl, apnsBaseUrl: deps.apnsBaseUrl }
  if (!deps.allowSimulators || !deps.simulatorPool) return { refused: SIMULATORS_OFF }
  const bad = simulatorTargetRefusal(target.url)
  if (bad || typeof target.ca !== 'string') return { refused: `simulator credential refused: ${bad ?? 'no CA'}` }
  return { pool: deps.simulatorPool(target.ca), fcmBaseUrl: target.url, apnsBaseUrl: target.url }
}

/** One HTTP/2 pool per simulator CA, each trusting that CA besides Node's roots; closed with their owner. The
 *  providers' own pool never trusts a simulator's CA. */
export class SimulatorPools {
  readonly #byCa = new Map<string, H2Pool>()

  constructor(private readonly make: (ca: string) => H2Pool = (ca) => new H2Pool({ ca })) {}

  get = (ca: string): H2Pool => {
    let pool = this.#byCa.get(ca)
    if (!pool) {
      pool = this.make(ca)
      this.#byCa.set(ca, pool)
    }
    return pool
  }

  async close(): Promise<void> {
    const all = [...this.#byCa.values()]
    this.#byCa.clear()
    await Promise.all(all.map((p) => p.close()))
  }
}

export function providerFor(platform: 'fcm', credential: FcmCredential, deps: ProviderDeps): Provider
export function providerFor(platform: 'apns', credential: ApnsCredential, deps: ProviderDeps): Provider
export function providerFor(platform: Platform, credential: FcmCredential | ApnsCredential, deps: ProviderDeps): Provider
export function providerFor(platform: Platform, credential: FcmCredential | ApnsCredential, deps: ProviderDeps): Provider {
  const clock = deps.clock ?? systemClock
  const route = providerRoute(credential, deps)
  if ('refused' in route) return refusing(route.refused, platform === 'apns' ? (credential as ApnsCredential).env : undefined)
  if (platform === 'fcm')
    return new FcmProvider(credential as FcmCredential, { baseUrl: route.fcmBaseUrl, pool: route.pool, clock })
  return new ApnsProvider(credential as ApnsCredential, {
    baseUrl: route.apnsBaseUrl,
    pool: route.pool,
    clock,
    tokens: deps.apnsTokens,
  })
}

export class ProviderCache {
  readonly #byApp: Lru<string, { version: string | number; provider: Provider }>
  readonly #deps: ProviderDeps

  constructor(deps: ProviderDeps) {
    this.#deps = { ...deps, apnsTokens: deps.apnsTokens ?? new ApnsTokens() }
    this.#byApp = new Lru({
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
