// The receipts feature of one process: the receipt-key cache and the group-commit writer.
import type { Logger } from 'pino'
import type { Db } from '../db/pool'
import type { Clock } from '../time'
import type { Vault } from '../vault'
import { ReceiptKeys } from './keys'
import { RECEIPT_WRITER_DEFAULTS, ReceiptWriter, type ReceiptWriterOptions } from './writer'

export class ReceiptsModule {
  readonly keys: ReceiptKeys
  readonly writer: ReceiptWriter

  constructor(d: { db: Db; vault: Vault; clock: Clock; log: Logger }, o: Partial<ReceiptWriterOptions> = {}) {
    this.keys = new ReceiptKeys(d.db, d.vault)
    this.writer = new ReceiptWriter(d.db, d.clock, d.log.child({ feature: 'receipts' }), { ...RECEIPT_WRITER_DEFAULTS, ...o })
  }

  /** Refuses new receipts and resolves once every accepted one is written. */
  stop(): Promise<void> {
    return this.writer.stop()
  }
}
