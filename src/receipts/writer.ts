// Group commit of receipts (docs/design/receipts.md): requests whose proof verified are gathered and written in one
// statement per batch; each request is answered after its batch commits. Identical receipts inside one batch are
// merged first; the first request carrying a row that turned out new is answered `{ok: true}`, the others
// `duplicado`. A deadlock between concurrent batches (hot sends, devices) rolls the whole statement back and is
// retried, so nothing is counted twice.
import type { Logger } from 'pino'
import { DEFAULT_LIMITS } from '../core/config'
import { GroupCommit, type GroupCommitStats } from '../db/group-commit'
import { type Db, retryingConflicts } from '../db/pool'
import { ApiError } from '../core/errors'
import { type Clock, DAY_MS, isoWithOffset } from '../core/time'
import { KIND_ARRIVAL, KIND_CLICK, type ReceiptRow, writeBatch } from './store'
import type { ReceiptInput } from './validate'

/** `late`: counted now, through the archive (the spec, Receipts `tardio`). */
export type ReceiptOutcome = 'counted' | 'late' | 'duplicate'

/** A receipt's outcome, and whether its device is one the app no longer has (deleted since the push left). */
export interface ReceiptResult {
  outcome: ReceiptOutcome
  unknownDevice: boolean
}

export interface ReceiptWriterOptions {
  maxBatch: number
  concurrency: number
  maxQueue: number
  /** the spec, Receipts: acceptance window, counted from when the send was due (send_after, else queued_at). */
  windowMs: number
}

export const RECEIPT_WRITER_DEFAULTS: ReceiptWriterOptions = {
  maxBatch: DEFAULT_LIMITS.receiptBatchMax,
  concurrency: DEFAULT_LIMITS.receiptWriters,
  maxQueue: DEFAULT_LIMITS.receiptQueueMax,
  windowMs: DEFAULT_LIMITS.receiptWindowDays * DAY_MS,
}

export class ReceiptWriter {
  readonly #gc: GroupCommit<ReceiptInput, ReceiptResult>
  /** Its group commit as metrics see it (queue depth, batches). */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }
  /** Statements written and receipts they carried (tests and the bench read them). */
  readonly stats = { statements: 0, receipts: 0 }

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly o: ReceiptWriterOptions = RECEIPT_WRITER_DEFAULTS,
  ) {
    this.#gc = new GroupCommit((jobs) => this.#write(jobs), {
      ...o,
      onSplit: (err, receipts) => this.log.error({ err, receipts }, 'receipt batch refused by Postgres; isolating the receipt'),
    })
  }

  /** Resolves once the receipt is durable: counted now, or already counted. A send unknown to the app or past the
   * window rejects with the same 403 as a wrong proof. */
  submit(r: ReceiptInput): Promise<ReceiptResult> {
    return this.#gc.submit(r)
  }

  stop(): Promise<void> {
    return this.#gc.stop()
  }

  async #write(jobs: ReceiptInput[]): Promise<Array<ReceiptResult | Error>> {
    this.stats.statements++
    this.stats.receipts += jobs.length
    const distinct = new Map<string, ReceiptRow>()
    for (const j of jobs) {
      const k = `${j.appId}:${j.sendId}:${j.deviceId}:${j.event}`
      if (!distinct.has(k))
        distinct.set(k, { appId: j.appId, sendId: j.sendId, deviceId: j.deviceId, click: j.event === 'clique' })
    }
    const rows = [...distinct.values()]
    const nowMs = this.clock()
    const now = new Date(nowMs)
    const horizon = new Date(nowMs - this.o.windowMs)
    const res = await retryingConflicts(
      () => writeBatch(this.db, rows, now, horizon, isoWithOffset(now)),
      (err, attempt) =>
        this.log.warn({ code: (err as { code?: string }).code, attempt, receipts: rows.length }, 'receipt batch retried'),
    )
    const owned = new Set<string>()
    return jobs.map((j) => {
      if (!res.valid.has(`${j.appId}:${j.sendId}`)) return new ApiError('RECEIPT_PROOF_INVALID')
      const kinds = j.event === 'clique' ? [KIND_ARRIVAL, KIND_CLICK] : [KIND_ARRIVAL]
      let out: ReceiptOutcome = 'duplicate'
      for (const kind of kinds) {
        const k = `${j.sendId}:${j.deviceId}:${kind}`
        if (res.fresh.has(k) && !owned.has(k)) {
          owned.add(k)
          out = res.late.has(k) ? 'late' : 'counted'
        }
      }
      return { outcome: out, unknownDevice: res.gone.has(`${j.appId}:${j.deviceId}`) }
    })
  }
}
