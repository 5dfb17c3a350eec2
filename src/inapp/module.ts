// The in-app feature of one process: the campaign service, the package and device caches, the two writers.
import type { AppDirectory } from '../apps/directory'
import type { Infra } from '../infra/infra'
import type { ReceiptKeys } from '../receipts/keys'
import { DeviceProfiles } from './device-profiles'
import { EventWriter } from './events-writer'
import { PackageCache } from './packages'
import { ServedWriter } from './served-writer'
import { CampaignService } from './service'

export interface InappDeps extends Infra {
  dir: AppDirectory
  receiptKeys: ReceiptKeys
}

export class InappModule {
  readonly packages: PackageCache
  readonly profiles: DeviceProfiles
  readonly served: ServedWriter
  readonly events: EventWriter
  readonly campaigns: CampaignService
  readonly #unlisten: () => void
  /** Proof keys (the apps' receipt keys): a warm poll reads them synchronously (peek). */
  readonly proofKeys: ReceiptKeys

  constructor(d: InappDeps) {
    const log = d.log.child({ feature: 'inapp' })
    const lim = d.cfg.limits
    this.packages = new PackageCache(d.db, d.redis, d.keys, d.clock, log, lim.keyCacheTtlMs, lim.appCacheMax)
    // An app dropped by this instance's directory (paused, keys changed) is dropped from its packages at once; the
    // Redis message that tells the other instances arrives here too, a few milliseconds later, and changes nothing.
    this.#unlisten = d.dir.onDrop((appId) => (appId === null ? this.packages.clear() : this.packages.drop(appId)))
    this.profiles = new DeviceProfiles(d.db, d.clock, lim.inappProfileCacheMax)
    this.served = new ServedWriter(d.db, d.clock, log, {
      maxBatch: lim.inappServedBatchMax,
      concurrency: lim.inappServedWriters,
      maxQueue: lim.inappServedQueueMax,
      seenMax: lim.inappServedSeenMax,
    })
    this.events = new EventWriter(d.db, d.clock, log, {
      maxBatch: d.cfg.limits.inappEventBatchMax,
      concurrency: d.cfg.limits.inappEventWriters,
      maxQueue: d.cfg.limits.inappEventQueueMax,
    })
    this.campaigns = new CampaignService(
      d.db,
      d.clock,
      (appId) => this.packages.invalidate(appId),
      (appId) => d.dir.invalidate(appId), // the package caches listen on the apps' channel too
      d.cfg.limits,
    )
    this.proofKeys = d.receiptKeys
  }

  start(): Promise<void> {
    return this.packages.start()
  }

  async stop(): Promise<void> {
    this.#unlisten()
    this.packages.stop()
    await this.served.stop()
    await this.events.stop()
  }
}
