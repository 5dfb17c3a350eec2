// Group commit: jobs that arrive while the database is busy are gathered and written together (one transaction,
// multi-row statements), and each caller is answered only after its batch commits. At low load a batch is whatever
// arrived in one event-loop turn; under load batches grow to `maxBatch` while `concurrency` writes are in flight.
import { ApiError } from '../errors'

export interface GroupCommitOptions<J = unknown> {
  maxBatch: number
  concurrency: number
  /** Jobs waiting beyond this are refused at once (503): memory stays bounded whatever the load. */
  maxQueue: number
  /**
   * How much work a job is (e.g. its rows) and the most one batch may carry. A batch is one statement on one
   * backend: big jobs written together lose the parallelism of several writers, so they go alone.
   */
  weight?: (job: J) => number
  maxWeight?: number
}

interface Pending<J, R> {
  job: J
  resolve: (r: R) => void
  reject: (err: unknown) => void
}

/** `write` answers one result per job, in order: a value, or an Error for that job alone. */
export type BatchWrite<J, R> = (jobs: J[]) => Promise<Array<R | Error>>

export class GroupCommit<J, R> {
  #queue: Array<Pending<J, R>> = []
  #inflight = 0
  #scheduled = false
  #stopped = false
  #idle: Array<() => void> = []

  constructor(
    private readonly write: BatchWrite<J, R>,
    private readonly o: GroupCommitOptions<J>,
  ) {}

  get queued(): number {
    return this.#queue.length
  }

  submit(job: J): Promise<R> {
    if (this.#stopped || this.#queue.length >= this.o.maxQueue) {
      return Promise.reject(new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'postgres' }))
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, resolve, reject })
      if (!this.#scheduled && this.#inflight < this.o.concurrency) {
        this.#scheduled = true
        setImmediate(() => {
          this.#scheduled = false
          this.#pump()
        })
      }
    })
  }

  /** Refuses new work and resolves once everything accepted has been written. */
  stop(): Promise<void> {
    this.#stopped = true
    if (this.#queue.length === 0 && this.#inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #pump(): void {
    while (this.#inflight < this.o.concurrency && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#batchSize())
      this.#inflight++
      this.#run(batch).finally(() => {
        this.#inflight--
        if (this.#queue.length > 0) this.#pump()
        else if (this.#inflight === 0) for (const f of this.#idle.splice(0)) f()
      })
    }
  }

  /** How many queued jobs the next batch takes: up to maxBatch, and up to maxWeight (at least one job). */
  #batchSize(): number {
    const { weight, maxWeight } = this.o
    const n = Math.min(this.o.maxBatch, this.#queue.length)
    if (!weight || maxWeight === undefined) return n
    let total = 0
    for (let i = 0; i < n; i++) {
      total += weight((this.#queue[i] as Pending<J, R>).job)
      if (total > maxWeight) return Math.max(1, i)
    }
    return n
  }

  async #run(batch: Array<Pending<J, R>>): Promise<void> {
    try {
      const results = await this.write(batch.map((p) => p.job))
      batch.forEach((p, i) => {
        const r = results[i]
        if (r instanceof Error) p.reject(r)
        else p.resolve(r as R)
      })
    } catch (err) {
      for (const p of batch) p.reject(err)
    }
  }
}
