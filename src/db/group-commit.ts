// Group commit: jobs that arrive while the database is busy are gathered and written together (each writer decides
// how: one multi-row statement, or a transaction of a few), and each caller is answered only after its batch commits. At low load a batch is whatever
// arrived in one event-loop turn; under load batches grow to `maxBatch` while `concurrency` writes are in flight.
//
// A batch is its callers' shared fate only for outages. When a write throws for its data (a value the validators
// let through and Postgres refused), the batch is split in halves and each half written again, first half first,
// down to the one guilty job: it alone gets the error, every other job commits, in the order it would have.
// log2(batch) extra statements per guilty job; an outage or a conflict worth retrying is never split.
import { ApiError } from '../core/errors'
import { dependencyOf } from '../core/dependency-errors'
import { isRetryable } from './pool'

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
  /** Told once per split (the writer logs it: a split means a validator missed something). */
  onSplit?: (err: unknown, jobs: number) => void
}

interface Pending<J, R> {
  job: J
  resolve: (r: R) => void
  reject: (err: unknown) => void
}

/** What metrics see of a writer: its queue, its batches in flight, and each batch's size as it starts. */
export interface GroupCommitStats {
  readonly queued: number
  readonly inflight: number
  onBatch: ((jobs: number) => void) | null
}

/** `write` answers one result per job, in order: a value, or an Error for that job alone. */
export type BatchWrite<J, R> = (jobs: J[]) => Promise<Array<R | Error>>

export class GroupCommit<J, R> implements GroupCommitStats {
  /** Told each batch's size as it starts (metrics; set by whoever watches this writer). */
  onBatch: ((jobs: number) => void) | null = null
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

  get inflight(): number {
    return this.#inflight
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
      this.onBatch?.(batch.length)
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
    const results = await this.#isolating(batch.map((p) => p.job))
    batch.forEach((p, i) => {
      const r = results[i]
      if (r instanceof Failure) p.reject(r.err)
      else if (r instanceof Error) p.reject(r)
      else p.resolve(r as R)
    })
  }

  /** Writes `jobs`; a data error is narrowed down by halves to the jobs that cause it. */
  async #isolating(jobs: J[]): Promise<Array<R | Error | Failure>> {
    try {
      return await this.write(jobs)
    } catch (err) {
      if (jobs.length === 1 || !splittable(err)) return jobs.map(() => new Failure(err))
      this.o.onSplit?.(err, jobs.length)
      const mid = jobs.length >>> 1
      const first = await this.#isolating(jobs.slice(0, mid))
      const second = await this.#isolating(jobs.slice(mid))
      return first.concat(second)
    }
  }
}

/** A thrown value carried to each job of a failed write (it need not be an Error). */
class Failure {
  constructor(readonly err: unknown) {}
}

/** Errors of the data, not of the moment: an outage fails every job alike, a deadlock is the writer's to retry. */
function splittable(err: unknown): boolean {
  return !(err instanceof ApiError) && dependencyOf(err) === null && !isRetryable(err)
}
