// One app's delivery: the only owner of the app's pace, its two lanes (transactional drained before marketing),
// its retries. Sends are walked in pages; each device gets one outcome, recorded in batches (outcomes.ts) before
// its send is acknowledged on the stream, so a crash redelivers and never loses.
import type { Logger } from 'pino'
import type { Db } from '../db/pool'
import { type Clock, systemClock } from '../time'
import { type Candidate, expandSegment, listPage, loadSend, markPicked, type SendMeta, segmentPage, setProblem } from './audience'
import { type OutcomeRecorder, type OutcomeRow, STATUS, closeIfDone } from './outcomes'
import { Pacer } from './pacer'
import { proof } from './proof'
import type { Outcome, Provider } from './providers/types'
import { invalidateBadTokens } from './bad-tokens'

export type Platform = 'fcm' | 'apns'

export interface ProviderSource {
  /** The app's provider for a platform; null when the app has no credential for it (deliveries stop at once). */
  get(appId: string, platform: Platform): Promise<Provider | null>
  /** The same answer without waiting when it is at hand; undefined sends the caller to get(). */
  peek?(appId: string, platform: Platform): Provider | null | undefined
}

export interface ActorDeps {
  db: Db
  recorder: OutcomeRecorder
  providers: ProviderSource
  clock?: Clock
  log: Logger
  receiptKey(appId: string): Promise<Buffer>
  ratePerMin(appId: string): Promise<number>
  /** The send's stream entries may be acknowledged: every device of it has a durable outcome. */
  finished(appId: string, sendId: string): void
  maxInflight: number
  pageSize: number
  /** Backoff before the 2nd and 3rd attempts (spec: three attempts in all). */
  retryDelaysMs: readonly number[]
}

export const MAX_ATTEMPTS = 3

interface Retry {
  c: Candidate
  attempts: number
  atMs: number
}

/** A send being delivered: where its walk is, what is in flight, what waits for a retry. */
interface Active {
  meta: SendMeta
  cursor: number
  after: string | null
  exhausted: boolean
  inflight: number
  retries: Retry[]
  /** Fetched, not yet dispatched (a marketing send yields to transactional work between devices). */
  buffer: Array<{ c: Candidate; attempts: number }>
  /** The next page, fetched while the current one is dispatched (the window never drains waiting for Postgres). */
  next: Promise<Array<{ c: Candidate; attempts: number }>> | null
  /** Platforms this send no longer attempts (no credential, credential refused). */
  broken: Set<Platform>
  badTokens: string[]
  apnsAccepted: number
  /** An outcome could not be recorded: the send's stream entry is left unacknowledged for a redelivery. */
  unrecorded: boolean
}

export class AppActor {
  readonly #lanes: [Map<string, Active>, Map<string, Active>] = [new Map(), new Map()]
  readonly #stop = new AbortController()
  #done?: Promise<void>
  #wake: (() => void) | null = null
  #inflight = 0
  #slot: (() => void) | null = null
  #pacer: Pacer | null = null
  /** The app's receipt key once read (it never changes for an app). */
  #receiptKey: Buffer | null = null
  readonly #clock: Clock

  constructor(
    readonly appId: string,
    private readonly d: ActorDeps,
  ) {
    this.#clock = d.clock ?? systemClock
  }

  /** Sends being loaded by add(): an actor with one is not idle, and a duplicate entry does not load it twice. */
  readonly #loading = new Set<string>()

  get idle(): boolean {
    return this.#lanes[0].size === 0 && this.#lanes[1].size === 0 && this.#inflight === 0 && this.#loading.size === 0
  }

  /** Ids of the sends this actor is working on (the worker refreshes their heartbeat). */
  activeSends(): string[] {
    return [...this.#lanes[0].keys(), ...this.#lanes[1].keys()]
  }

  /** A stream entry named this send; duplicates are harmless. */
  async add(sendId: string): Promise<void> {
    if (this.#lanes[0].has(sendId) || this.#lanes[1].has(sendId) || this.#loading.has(sendId)) return
    this.#loading.add(sendId)
    try {
      await this.#add(sendId)
    } finally {
      this.#loading.delete(sendId)
    }
  }

  async #add(sendId: string): Promise<void> {
    const meta = await loadSend(this.d.db, this.appId, sendId)
    if (!meta || meta.completed) {
      this.d.finished(this.appId, sendId)
      return
    }
    await markPicked(this.d.db, this.appId, sendId, new Date(this.#clock()))
    this.#lanes[meta.lane].set(sendId, {
      meta,
      cursor: 1,
      after: null,
      exhausted: false,
      inflight: 0,
      retries: [],
      buffer: [],
      next: null,
      broken: new Set(),
      badTokens: [],
      apnsAccepted: 0,
      unrecorded: false,
    })
    this.start()
    this.#wake?.()
  }

  start(): void {
    this.#done ??= this.#run().catch((err) => this.d.log.error({ err, app: this.appId }, 'actor stopped on an error'))
  }

  /** Stops taking new work and waits for what is in flight (idempotent). */
  async stop(): Promise<void> {
    this.#stop.abort()
    this.#wake?.()
    await this.#done
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal
    this.#pacer = new Pacer(await this.d.ratePerMin(this.appId), this.#clock)
    while (!signal.aborted) {
      const s = this.#next()
      if (!s) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve
          setTimeout(resolve, 250) // retries fall due on time even with no new send
        })
        this.#wake = null
        continue
      }
      if (s.buffer.length === 0) {
        try {
          s.buffer = await this.#take(s)
        } catch (err) {
          // Postgres unreachable for a moment: the actor must outlive it (its sends are heartbeated, so nothing else
          // would pick them up). Try again shortly.
          this.d.log.warn({ err: String(err), app: this.appId, send: s.meta.id }, 'could not read the next page; retrying')
          await new Promise((r) => setTimeout(r, 1_000))
          continue
        }
      }
      if (s.buffer.length === 0) {
        if (s.exhausted && s.retries.length === 0 && s.inflight === 0) await this.#finish(s)
        else await new Promise((r) => setTimeout(r, 20))
        continue
      }
      while (s.buffer.length > 0) {
        // Transactional work overtakes a marketing send between two devices, not after a whole page.
        if (s.meta.lane === 1 && this.#transactionalWaiting()) break
        if (!(await this.#pacer.take(signal))) break
        while (this.#inflight >= this.d.maxInflight) await new Promise<void>((r) => (this.#slot = r))
        const item = s.buffer.shift() as { c: Candidate; attempts: number }
        if (s.buffer.length < this.d.pageSize / 2 && !s.next && !s.exhausted) {
          s.next = this.#page(s)
          s.next.catch(() => {}) // awaited (and its failure handled) by #take
        }
        this.#inflight++
        s.inflight++
        this.#deliver(s, item.c, item.attempts)
          // Only the last attempt's errored record can fail here; the send then stays open in Postgres and the
          // sweeper hands it out again (nothing acknowledged that is not durable).
          .catch((err) => {
            s.unrecorded = true
            this.d.log.error({ err: String(err), app: this.appId, send: s.meta.id }, 'recording an outcome failed')
          })
          .finally(() => {
            this.#inflight--
            s.inflight--
            this.#slot?.()
            this.#slot = null
          })
      }
    }
    while (this.#inflight > 0) await new Promise<void>((r) => (this.#slot = r))
  }

  /** Transactional first; within a lane, the oldest send that has something to do. */
  #next(): Active | undefined {
    for (const lane of this.#lanes) {
      for (const s of lane.values()) if (this.#hasWork(s)) return s
    }
    return undefined
  }

  #hasWork(s: Active): boolean {
    const now = this.#clock()
    const finishable = s.exhausted && s.retries.length === 0 && s.inflight === 0
    return s.buffer.length > 0 || !s.exhausted || s.retries.some((r) => r.atMs <= now) || finishable
  }

  #transactionalWaiting(): boolean {
    for (const s of this.#lanes[0].values()) if (s.buffer.length > 0 || !s.exhausted || s.retries.some((r) => r.atMs <= this.#clock())) return true
    return false
  }

  /** The prefetched page if there is one, else a page fetched now. One #page call per send at a time. */
  async #take(s: Active): Promise<Array<{ c: Candidate; attempts: number }>> {
    if (s.next) {
      const page = await s.next
      s.next = null
      return page
    }
    return this.#page(s)
  }

  async #page(s: Active): Promise<Array<{ c: Candidate; attempts: number }>> {
    const now = this.#clock()
    const due = s.retries.filter((r) => r.atMs <= now)
    if (due.length > 0) {
      s.retries = s.retries.filter((r) => r.atMs > now)
      return due.map((r) => ({ c: r.c, attempts: r.attempts }))
    }
    if (s.exhausted) return []
    const size = this.d.pageSize
    if (s.meta.targetKind === 'segments') {
      if (!s.meta.expansionDone) await expandSegment(this.d.db, s.meta, size, new Date(now))
      const page = await segmentPage(this.d.db, s.meta, s.after, size)
      if (page.length > 0) s.after = (page[page.length - 1] as Candidate).deviceId
      else if (s.meta.expansionDone) s.exhausted = true
      return page.map((c) => ({ c, attempts: 0 }))
    }
    if (s.cursor > s.meta.audienceLength) {
      s.exhausted = true
      return []
    }
    const page = await listPage(this.d.db, s.meta, s.cursor, size)
    s.cursor += size
    return page.map((c) => ({ c, attempts: 0 }))
  }

  async #deliver(s: Active, c: Candidate, attempts: number): Promise<void> {
    const record = (status: OutcomeRow['status'], tries: number, invalidate?: string) =>
      this.d.recorder.record({ appId: this.appId, sendId: s.meta.id, deviceId: c.deviceId, deviceType: c.deviceType, status, attempts: tries, invalidate })
    try {
      // spec: a delivery past its deadline is not attempted (ttl 0 means "now or never" and is left to the provider).
      if (s.meta.ttlS > 0 && this.#clock() > s.meta.startMs + s.meta.ttlS * 1000) return void (await record(STATUS.errored, attempts))
      if (!c.token || !c.valid) return void (await record(STATUS.failed, attempts))
      const platform: Platform = c.transporte === 'apns' ? 'apns' : 'fcm'
      if (s.broken.has(platform)) return void (await record(STATUS.errored, attempts))
      // At thousands of deliveries a second, a wait for an answer already at hand is a measurable cost.
      const known = this.d.providers.peek?.(this.appId, platform)
      const provider = known === undefined ? await this.d.providers.get(this.appId, platform) : known
      if (!provider) {
        s.broken.add(platform)
        await setProblem(this.d.db, this.appId, s.meta.id, `credencial_ausente:${platform}`)
        return void (await record(STATUS.errored, attempts))
      }
      this.#receiptKey ??= await this.d.receiptKey(this.appId)
      const key = this.#receiptKey
      // A late attempt gives the provider only what is left of the send's ttl, never a fresh one.
      const ttlS = s.meta.ttlS > 0 ? Math.max(1, Math.ceil((s.meta.startMs + s.meta.ttlS * 1000 - this.#clock()) / 1000)) : 0
      const outcome = await provider.send(
        { deviceId: c.deviceId, token: c.token, deviceType: c.deviceType },
        { sendId: s.meta.id, message: s.meta.message, proof: proof(key, s.meta.id, c.deviceId), ttlS, lane: s.meta.lane },
      )
      await this.#apply(s, c, attempts + 1, platform, outcome, record)
    } catch (err) {
      // Our own failure (database, decryption): the device is retried like a transient provider failure.
      this.d.log.warn({ err: String(err), app: this.appId, send: s.meta.id }, 'delivery attempt failed locally')
      await this.#retry(s, c, attempts + 1, undefined, record)
    }
  }

  async #apply(
    s: Active,
    c: Candidate,
    attempts: number,
    platform: Platform,
    o: Outcome,
    record: (status: OutcomeRow['status'], tries: number, invalidate?: string) => Promise<boolean>,
  ): Promise<void> {
    switch (o.kind) {
      case 'accepted':
        if (platform === 'apns') s.apnsAccepted++
        await record(STATUS.successful, attempts)
        return
      case 'dead-token':
        await record(STATUS.failed, attempts, o.reason)
        return
      case 'bad-device-token':
        // Invalidated only when the send shows it is not an environment mismatch (decided at the end).
        s.badTokens.push(c.deviceId)
        await record(STATUS.failed, attempts)
        return
      case 'rejected':
        await record(STATUS.failed, attempts)
        return
      case 'credential':
        s.broken.add(platform)
        await setProblem(this.d.db, this.appId, s.meta.id, `credencial_recusada:${platform}:${o.reason}`)
        await record(STATUS.errored, attempts)
        return
      case 'quota':
        // Back-pressure on the whole app; this attempt does not count against the device.
        this.#pacer?.pause(o.retryAfterMs)
        s.retries.push({ c, attempts: attempts - 1, atMs: this.#clock() })
        return
      case 'transient':
        await this.#retry(s, c, attempts, o.retryAfterMs, record)
        return
    }
  }

  /** Schedules another attempt, or records the delivery as errored after the last one (awaited: durable first). */
  async #retry(
    s: Active,
    c: Candidate,
    attempts: number,
    retryAfterMs: number | undefined,
    record: (status: OutcomeRow['status'], tries: number) => Promise<boolean>,
  ): Promise<void> {
    if (attempts >= MAX_ATTEMPTS) {
      await record(STATUS.errored, attempts)
      return
    }
    const delay = Math.max(retryAfterMs ?? 0, this.d.retryDelaysMs[attempts - 1] ?? 1_000)
    s.retries.push({ c, attempts, atMs: this.#clock() + delay })
  }

  async #finish(s: Active): Promise<void> {
    this.#lanes[s.meta.lane].delete(s.meta.id)
    try {
      await this.#close(s)
    } catch (err) {
      // The send stays unfinished in Postgres and stops being heartbeated: the sweeper hands it out again.
      this.d.log.warn({ err: String(err), app: this.appId, send: s.meta.id }, 'could not close a send; the sweeper will retry')
    }
  }

  async #close(s: Active): Promise<void> {
    await invalidateBadTokens(this.d.db, this.appId, s.meta.id, s.badTokens, s.apnsAccepted, new Date(this.#clock()))
    await closeIfDone(this.d.db, this.appId, s.meta.id, new Date(this.#clock()))
    // Acknowledged only when every outcome is durable; otherwise the entry stays pending and the send is handed
    // out again (takeover of pending entries, or the sweeper) and its unrecorded devices delivered again.
    if (!s.unrecorded) this.d.finished(this.appId, s.meta.id)
  }
}
