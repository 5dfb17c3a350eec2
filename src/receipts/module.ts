// The receipts feature of one process: the receipt-key cache and the group-commit writer.
import type { Logger } from 'pino'
import type { Jobs } from '../core/config'
import type { Db } from '../db/pool'
import type { Clock } from '../core/time'
import type { Vault } from '../core/vault'
import { archiveReceipts, ensureDayPartitions } from './archive'
import { ReceiptKeys } from './keys'
import { RECEIPT_WRITER_DEFAULTS, ReceiptWriter, type ReceiptWriterOptions } from './writer'

export class ReceiptsModule {
  readonly keys: ReceiptKeys
  readonly writer: ReceiptWriter
  #timer: NodeJS.Timeout | null = null

  constructor(
    private readonly d: { db: Db; vault: Vault; clock: Clock; log: Logger; appCacheMax?: number },
    o: Partial<ReceiptWriterOptions> = {},
  ) {
    this.keys = new ReceiptKeys(d.db, d.vault, d.appCacheMax)
    this.writer = new ReceiptWriter(d.db, d.clock, d.log.child({ feature: 'receipts' }), { ...RECEIPT_WRITER_DEFAULTS, ...o })
  }

  /** The day-partition and archival job: at start, then every `receiptArchiveEveryMs` (safe on many processes:
   * archival locks, a partition created twice is skipped). */
  startJobs(jobs: Jobs, windowDays?: number): void {
    const run = (): void => {
      this.archiveNow(jobs.receiptArchiveDays, windowDays).catch((err) =>
        this.d.log.warn({ err: String(err) }, 'receipt archival failed'),
      )
    }
    run()
    this.#timer = setInterval(run, jobs.receiptArchiveEveryMs)
    this.#timer.unref()
  }

  /** One pass of the job (tests call it with their own horizon). */
  async archiveNow(
    horizonDays: number,
    windowDays?: number,
  ): Promise<{ before: string; rows: number; dropped: number; created: number }> {
    const now = this.d.clock()
    const created = await ensureDayPartitions(this.d.db, now, this.d.log, windowDays)
    return { ...(await archiveReceipts(this.d.db, horizonDays, now)), created }
  }

  /** Refuses new receipts and resolves once every accepted one is written. */
  stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    return this.writer.stop()
  }
}
