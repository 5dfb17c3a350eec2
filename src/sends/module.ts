// Builds the sends feature for one process: the group-commit writer, the hand-off and its sweeper, the free-plan
// gate and its measurement job, the per-app counters (sends and reads per second, across instances).
import type { Infra } from '../infra/infra'
import { WindowCounter } from '../redis/window-counter'
import { Handoff } from '../handoff/stream'
import { MauGate } from './mau'
import { SendService } from './service'
import { SendWriter } from './writer'

export type SendsDeps = Infra

export class SendsModule {
  readonly writer: SendWriter
  readonly handoff: Handoff
  readonly mau: MauGate
  readonly readQuota: WindowCounter
  readonly service: SendService

  constructor(private readonly d: SendsDeps) {
    const { cfg, db, redis, keys, clock, log } = d
    this.writer = new SendWriter(
      db,
      {
        maxBatch: cfg.limits.sendBatchMax,
        concurrency: cfg.limits.sendWriters,
        maxQueue: cfg.limits.sendQueueMax,
        onSplit: (err, sends) => log.error({ err, sends }, 'send batch refused by Postgres; isolating the send'),
      },
      cfg.jobs.handoffCarryDevices,
    )
    this.handoff = new Handoff(
      db,
      redis,
      keys,
      {
        partitions: cfg.partitions,
        graceMs: cfg.jobs.handoffGraceMs,
        sweepEveryMs: cfg.jobs.sweepEveryMs,
        streamMaxLen: cfg.jobs.streamMaxLen,
      },
      clock,
      log,
    )
    this.mau = new MauGate(
      db,
      redis,
      keys.job('mau'),
      { freeMau: cfg.limits.freeMau, maxAgeMs: cfg.limits.mauMaxAgeMs, intervalMs: cfg.jobs.mauEveryMs, proPrice: cfg.proPrice },
      clock,
      log,
    )
    const quota = new WindowCounter(redis, (a, w) => keys.sends(a, w), 1_000, cfg.limits.sendsPerSec, clock)
    this.readQuota = new WindowCounter(redis, (a, w) => keys.reads(a, w), 1_000, cfg.limits.readsPerSec, clock)
    this.service = new SendService(db, redis, keys, this.writer, this.handoff, quota, this.mau, clock, cfg.limits)
  }

  /** The periodic jobs (one instance at a time does the work, through Redis locks). */
  startJobs(): void {
    this.handoff.start(this.d.keys.job('sweep'))
    this.mau.start()
  }

  async stop(): Promise<void> {
    this.mau.stop()
    await this.handoff.stop()
    await this.writer.stop()
  }
}
