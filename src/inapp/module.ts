// The in-app feature of one process: the campaign service, the package and device caches, the two writers.
import type { AppDirectory } from '../apps/directory'
import type { Infra } from '../infra'
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

const KEYS_MAX = 100_000

export class InappModule {
  readonly packages: PackageCache
  readonly profiles: DeviceProfiles
  readonly served: ServedWriter
  readonly events: EventWriter
  readonly campaigns: CampaignService
  /** Proof keys (the apps' receipt keys), resolved: a warm poll reads them synchronously. */
  readonly proofKeys: { peek(appId: string): Buffer | undefined; get(appId: string): Promise<Buffer | null> }

  constructor(d: InappDeps) {
    const log = d.log.child({ feature: 'inapp' })
    this.packages = new PackageCache(d.db, d.redis, d.keys, d.clock, log, d.cfg.limits.keyCacheTtlMs)
    this.profiles = new DeviceProfiles(d.db, d.clock)
    this.served = new ServedWriter(d.db, d.clock, log, { maxBatch: d.cfg.limits.inappServedBatchMax, concurrency: d.cfg.limits.inappServedWriters })
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
    const resolved = new Map<string, Buffer>()
    this.proofKeys = {
      peek: (appId) => resolved.get(appId),
      get: async (appId) => {
        const k = await d.receiptKeys.get(appId)
        if (k) {
          if (resolved.size >= KEYS_MAX) resolved.clear()
          resolved.set(appId, k)
        }
        return k
      },
    }
  }

  start(): Promise<void> {
    return this.packages.start()
  }

  async stop(): Promise<void> {
    this.packages.stop()
    await this.served.stop()
    await this.events.stop()
  }
}
