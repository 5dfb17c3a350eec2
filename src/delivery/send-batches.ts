// What a worker does once per send, done once per batch of sends: a typical sender's sends are one device
// each, so per-send statements, not deliveries, were the worker's cost. Sends of every app of the process arriving
// in one event-loop turn (or while the previous batch is in Postgres) are taken together:
//  - load: their meta, marked picked (unless just queued), and the first page of each list send (one statement);
//  - close: completed_at and the notification.completed event of every send done (one statement), skipped for the
//    sends the outcome batch already closed (most of them: it closes a send whose last device it records).
// Each caller is answered after its batch, as if it had run the statement alone.
import { DEFAULT_DELIVERY } from '../core/config'
import { GroupCommit } from '../db/group-commit'
import { type Db, retryingConflicts } from '../db/pool'
import type { Clock } from '../core/time'
import { loadSends, type SendRef } from './audience'
import type { LoadedSend } from '../handoff/send'
import { closeIfDone } from './outcomes'

export class SendBatches {
  readonly #load: GroupCommit<SendRef, LoadedSend | null>
  readonly #close: GroupCommit<SendRef, boolean>
  /** What was done, and in how many batches (tests and the bench read it). */
  readonly counts = { loaded: 0, loadBatches: 0, closeAsked: 0, closeBatches: 0 }
  /** Sends the outcome recorder closed, not yet asked about (bounded: a dropped actor never asks). */
  readonly #closedByOutcomes = new Set<string>()

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    readonly pageSize: number,
    /** The worker's heartbeat: a send queued more recently than this is not stamped picked at load (loadSends). */
    private readonly freshMs = 0,
    batch: { maxBatch: number; concurrency: number; maxQueue: number } = {
      maxBatch: DEFAULT_DELIVERY.sendLoadBatchMax,
      concurrency: DEFAULT_DELIVERY.sendLoadWriters,
      maxQueue: DEFAULT_DELIVERY.sendLoadQueueMax,
    },
  ) {
    const o = batch
    this.#load = new GroupCommit((refs) => this.#loadBatch(refs), o)
    this.#close = new GroupCommit((refs) => this.#closeBatch(refs), o)
  }

  /** The send's meta and first page; null when it no longer exists. */
  load(ref: SendRef): Promise<LoadedSend | null> {
    return this.#load.submit(ref)
  }

  /** Closes the send if its counters cover its audience; true when it is closed now. */
  close(ref: SendRef): Promise<boolean> {
    this.counts.closeAsked++
    if (this.#closedByOutcomes.delete(ref.sendId)) return Promise.resolve(true)
    return this.#close.submit(ref)
  }

  /** The outcome recorder closed this send (its completed_at and event are written): close() need not ask again. */
  closedByOutcomes(sendId: string): void {
    if (this.#closedByOutcomes.size >= 100_000) this.#closedByOutcomes.clear()
    this.#closedByOutcomes.add(sendId)
  }

  async stop(): Promise<void> {
    await Promise.all([this.#load.stop(), this.#close.stop()])
  }

  async #loadBatch(refs: SendRef[]): Promise<Array<LoadedSend | null>> {
    this.counts.loadBatches++
    this.counts.loaded += refs.length
    const loaded = await retryingConflicts(() => loadSends(this.db, refs, new Date(this.clock()), this.freshMs, this.pageSize))
    return refs.map((r) => {
      const l = loaded.get(r.sendId)
      return l && l.meta.appId === r.appId ? l : null
    })
  }

  async #closeBatch(refs: SendRef[]): Promise<boolean[]> {
    this.counts.closeBatches++
    const closed = await retryingConflicts(() => closeIfDone(this.db, refs, new Date(this.clock())))
    return refs.map((r) => closed.has(r.sendId))
  }
}
