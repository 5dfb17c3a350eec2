// Builds the delivery engine of a worker process: the HTTP/2 pool and providers, credentials (cached, dropped on
// change), receipt keys, the outcome recorder and the partition worker with its actors. Its caches are bounded LRUs
// (src/core/lru.ts) sized by the app cache's bound; a credential's freshness is judged here by the clock.
import { Lru } from '../core/lru'
import type { AppDirectory } from '../apps/directory'
import { loadCredential, onCredentialChange } from '../credentials/store'
import type { Infra } from '../infra/infra'
import type { Vault } from '../core/vault'
import type { ProviderSource } from './actor'
import { ApnsAnswers } from './bad-tokens'
import type { Platform } from '../providers/credentials'
import { OutcomeRecorder } from './outcomes'
import { type PaceCause, SharedBucket } from './pacer'
import { SendBatches } from './send-batches'
import { PRUNE_DEFAULTS, pruneDeliveries } from './retention'
import { H2Pool } from '../h2/pool'
import { providerPoolOptions } from '../providers/http2'
import { ProviderCache, type ProviderObserver, SimulatorPools } from '../providers/index'
import type { Provider } from '../providers/types'
import { ReceiptKeys } from '../receipts/keys'
import { DeliveryWorker } from './worker'

export interface DeliveryDeps extends Infra {
  vault: Vault
  dir: AppDirectory
  /** Extra CA for the providers' TLS (tests against the fakes); production trusts Node's roots. */
  ca?: string
  /** Provider answers, for the metrics. */
  observeProvider?: ProviderObserver
  /** Pacing waits of the actors, for the metrics. */
  observePace?: (cause: PaceCause, ms: number) => void
}

interface CredentialEntry {
  at: number
  value: Promise<{ version: number; credential: unknown } | null>
  settled?: { version: number; credential: unknown } | null
}

export class DeliveryModule implements ProviderSource {
  readonly pool: H2Pool
  readonly recorder: OutcomeRecorder
  readonly batches: SendBatches
  readonly worker: DeliveryWorker
  readonly apnsAnswers: ApnsAnswers
  readonly #providers: ProviderCache
  /** Pools of simulator credentials (PM_ALLOW_SIMULATORS), apart from the providers' own pool. */
  readonly #simulatorPools: SimulatorPools
  /** By `app:platform`. */
  readonly #credentials: Lru<string, CredentialEntry>
  readonly #receiptKeys: ReceiptKeys
  #unsubscribe: (() => void) | null = null
  #jobs: NodeJS.Timeout | null = null

  constructor(private readonly d: DeliveryDeps) {
    const { cfg, db, redis, keys, clock, log } = d
    this.pool = new H2Pool({ ca: d.ca, ...providerPoolOptions(cfg) })
    this.#simulatorPools = new SimulatorPools((ca) => new H2Pool({ ca, ...providerPoolOptions(cfg) }))
    this.#credentials = new Lru({ max: 2 * cfg.limits.appCacheMax })
    this.#receiptKeys = new ReceiptKeys(db, d.vault, cfg.limits.appCacheMax)
    this.#providers = new ProviderCache({
      pool: this.pool,
      fcmBaseUrl: cfg.fcmBaseUrl,
      apnsBaseUrl: cfg.apnsBaseUrl,
      allowSimulators: cfg.allowSimulators,
      simulatorPool: this.#simulatorPools.get,
      clock,
      observe: d.observeProvider,
      max: 2 * cfg.limits.appCacheMax,
    })
    this.recorder = new OutcomeRecorder(db, clock, log, {
      maxBatch: cfg.delivery.outcomeBatchMax,
      concurrency: cfg.delivery.outcomeWriters,
      maxQueue: cfg.delivery.outcomeQueueMax,
    })
    this.batches = new SendBatches(db, clock, cfg.delivery.pageSize, cfg.delivery.heartbeatMs, {
      maxBatch: cfg.delivery.sendLoadBatchMax,
      concurrency: cfg.delivery.sendLoadWriters,
      maxQueue: cfg.delivery.sendLoadQueueMax,
    })
    this.recorder.onClosed = (c) => this.batches.closedByOutcomes(c.sendId)
    this.apnsAnswers = new ApnsAnswers(redis, keys, clock, log)
    this.worker = new DeliveryWorker(
      db,
      redis,
      keys,
      {
        partitions: cfg.partitions,
        leaseMs: cfg.delivery.leaseMs,
        readCount: cfg.delivery.readCount,
        maxHeldSends: cfg.delivery.maxHeldSends,
        heartbeatMs: cfg.delivery.heartbeatMs,
        slices: {
          sliceDevices: cfg.delivery.sliceDevices,
          perWorker: cfg.delivery.slicesPerWorker,
          pollMs: cfg.delivery.slicePollMs,
          idlePollMs: cfg.delivery.sliceIdlePollMs,
        },
      },
      {
        db,
        recorder: this.recorder,
        sends: this.batches,
        providers: this,
        clock,
        log,
        receiptKey: (appId) => this.#receiptKey(appId),
        ratePerMin: async (appId) => (await d.dir.app(appId))?.ratePerMin ?? 60_000,
        maxInflight: cfg.delivery.inflightPerApp,
        pageSize: cfg.delivery.pageSize,
        maxAttempts: cfg.delivery.maxAttempts,
        retryDelaysMs: cfg.delivery.retryDelaysMs,
        pace: (appId) => new SharedBucket(redis, keys, appId),
        sliceDevices: cfg.delivery.sliceDevices,
        sliceWatchMs: cfg.delivery.sliceWatchMs,
        maxSlices: cfg.delivery.maxSlices,
        apnsSuspectPercent: cfg.delivery.apnsSuspectPercent,
        apnsAnswers: this.apnsAnswers,
        onPaceWait: d.observePace,
      },
      log,
      clock,
    )
  }

  async start(): Promise<void> {
    this.#unsubscribe = await onCredentialChange(this.d.redis, this.d.keys, (change) => {
      if (change === 'all') {
        this.#credentials.clear()
        return
      }
      this.#credentials.delete(`${change.appId}:${change.platform}`)
      this.#providers.evict(change.appId, change.platform)
    })
    await this.worker.start()
  }

  /** The deliveries retention job: at start, then every `retentionEveryMs` (safe on many processes). */
  startJobs(): void {
    const run = (): void => {
      this.pruneNow(this.d.cfg.jobs.deliveriesRetentionDays)
        .then((r) => {
          if (r.rows > 0) this.d.log.info(r, 'delivery rows of old sends deleted')
        })
        .catch((err) => this.d.log.warn({ err: String(err) }, 'deliveries retention failed'))
    }
    run()
    this.#jobs = setInterval(run, this.d.cfg.jobs.retentionEveryMs)
    this.#jobs.unref()
  }

  /** One pass of the retention job, over every due send (tests call it with their own horizon). */
  async pruneNow(days: number): Promise<{ sends: number; rows: number }> {
    const total = { sends: 0, rows: 0 }
    for (;;) {
      const r = await pruneDeliveries(this.d.db, days, this.d.clock())
      total.sends += r.sends
      total.rows += r.rows
      if (r.sends < PRUNE_DEFAULTS.sends) return total
    }
  }

  async stop(): Promise<void> {
    if (this.#jobs) clearInterval(this.#jobs)
    await this.worker.stop()
    await this.apnsAnswers.stop()
    await this.batches.stop()
    await this.recorder.stop()
    this.#unsubscribe?.()
    await this.#providers.close()
    await this.pool.close()
    await this.#simulatorPools.close()
  }

  /** ProviderSource: null when the app has no credential for the platform (its deliveries stop at once). */
  async get(appId: string, platform: Platform): Promise<Provider | null> {
    const key = `${appId}:${platform}`
    let hit = this.#credentials.get(key)
    if (!hit || this.d.clock() - hit.at > this.d.cfg.delivery.credentialCacheMs) {
      const value = loadCredential(this.d.db, this.d.vault, appId, platform).then((c) =>
        c ? { version: c.updatedAt.getTime(), credential: c.credential } : null,
      )
      const entry: CredentialEntry = { at: this.d.clock(), value }
      hit = entry
      this.#credentials.set(key, entry)
      value.then(
        (v) => {
          entry.settled = v
        },
        () => this.#credentials.delete(key),
      )
    }
    const c = await hit.value
    if (!c) return null
    return this.#providers.get(appId, platform, c.version, c.credential as never)
  }

  /** ProviderSource: get() without waiting, when the credential is already loaded and fresh (undefined otherwise). */
  peek(appId: string, platform: Platform): Provider | null | undefined {
    const hit = this.#credentials.get(`${appId}:${platform}`)
    if (!hit || hit.settled === undefined || this.d.clock() - hit.at > this.d.cfg.delivery.credentialCacheMs) return undefined
    if (!hit.settled) return null
    return this.#providers.get(appId, platform, hit.settled.version, hit.settled.credential as never)
  }

  /** The app's receipt key, opened from the vault once per process. */
  async #receiptKey(appId: string): Promise<Buffer> {
    const k = await this.#receiptKeys.get(appId)
    if (!k) throw new Error(`app ${appId} has no receipt key`)
    return k
  }
}
