// One app's delivery: the only owner of the app's pace, its two lanes (transactional drained before marketing),
// its retries. Each device gets one outcome, recorded in batches (outcomes.ts) before its send is acknowledged on
// the stream, so a crash redelivers and never loses. Sends are taken and closed in batches across sends and apps
// (send-batches.ts); a small send arrives with its whole audience and never waits for a page here.
//
// The parts, each named below:
//  - PageCursor: one send's walk through its audience (or through one slice of it), the next page read while the
//    current one is dispatched; SliceWatch stands in for it on a sliced send, whose devices are walked by slices;
//  - RetryQueue: one send's devices waiting for another attempt, each with the time it falls due;
//  - InflightWindow: the app's provider requests in flight, bounded (a slot is given back at the provider's answer),
//    and a second one over the deliveries whose outcome is not durable yet (given back once it is);
//  - Lane (lane.ts): each lane's sends with work, oldest first, picked without walking those already gone;
//  - the loop (#run): takes the next ready device, transactional first, and waits in one place only (#sleep) when
//    nothing is ready or a bound is full; anything that can make work ready (a new send, a page read, a request
//    answered, a retry falling due) wakes it. The pace (Pacer) is the other wait: a token per device.
import type { Logger } from 'pino'
import { DEFAULT_DELIVERY } from '../core/config'
import type { Db } from '../db/pool'
import { type Clock, systemClock } from '../core/time'
import { expandSegment, listPage, segmentPage, setProblem } from './audience'
import type { Candidate, SendMeta } from '../handoff/send'
import { type OutcomeRecorder, type OutcomeRow, STATUS } from './outcomes'
import { abortableSleep, type PaceCause, Pacer, type PaceStore } from './pacer'
import { proof } from '../message/proof'
import type { Outcome, Provider } from '../providers/types'
import { type ApnsAnswers, type ApnsEnv, invalidateBadTokens } from './bad-tokens'
import { Lane } from './lane'
import type { Platform } from '../providers/credentials'
import type { LoadedSend } from '../handoff/send'
import { expandSlice, planSlices, type SliceLease, sliceCount, sliceKey, sliceProgress } from './slices'

export interface ProviderSource {
  /** The app's provider for a platform; null when the app has no credential for it (deliveries stop at once). */
  get(appId: string, platform: Platform): Promise<Provider | null>
  /** The same answer without waiting when it is at hand; undefined sends the caller to get(). */
  peek?(appId: string, platform: Platform): Provider | null | undefined
}

/** Taking and closing sends, batched across sends (SendBatches in the worker). */
export interface SendSource {
  load(ref: { appId: string; sendId: string }): Promise<LoadedSend | null>
  close(ref: { appId: string; sendId: string }): Promise<boolean>
}

export interface ActorDeps {
  db: Db
  recorder: OutcomeRecorder
  sends: SendSource
  providers: ProviderSource
  clock?: Clock
  log: Logger
  receiptKey(appId: string): Promise<Buffer>
  ratePerMin(appId: string): Promise<number>
  /** The send's stream entries may be acknowledged: every device of it has a durable outcome. */
  finished(appId: string, sendId: string): void
  maxInflight: number
  pageSize: number
  /** Attempts of one delivery in all before it is errored (the spec: three; PM_DELIVERY_MAX_ATTEMPTS). */
  maxAttempts: number
  /** Backoff before the 2nd, 3rd … attempt (the last one repeats for any further attempt). */
  retryDelaysMs: readonly number[]
  /** The app's shared pace (absent: a bucket local to this actor). */
  pace?: (appId: string) => PaceStore
  /** A segment send estimated above this many devices is cut into slices (absent: never). */
  sliceDevices?: number
  /** How often the actor of a sliced send reads how far its slices are. */
  sliceWatchMs?: number
  /** A send never has more slices than this. */
  maxSlices?: number
  /** Percent of the app's recent APNs answers being BadDeviceToken at which an environment mismatch is suspected. */
  apnsSuspectPercent?: number
  /** The app's recent APNs answers across workers (absent: each send is judged on its own answers). */
  apnsAnswers?: ApnsAnswers
  /** A slice's walk is over: `complete` when every device of it has a durable outcome. */
  sliceFinished?(lease: SliceLease, complete: boolean): Promise<void>
  /** A send was just cut into slices: this process looks for slices to lease now. */
  slicesPlanned?(): void
  /** Told of every pacing wait (metrics). */
  onPaceWait?: (cause: PaceCause, ms: number) => void
}

/** A device to attempt, and how many attempts it has had. */
interface Item {
  c: Candidate
  attempts: number
}

/** After a failed page read, the cursor waits this long before reading again (Postgres away for a moment). */
const PAGE_RETRY_MS = 1_000
/** Proofs computed together, ahead of the deliveries that use them (#proveAhead). */
const PROOFS_AHEAD = 64
/** The loop looks again at least this often even if nothing wakes it. */
const IDLE_TICK_MS = 250
/** How often an actor held back only by the worker's full outcome queue looks again (no slot of its own wakes it). */
const SATURATED_TICK_MS = 20
/**
 * Answered deliveries whose outcome is not durable yet, per slot of the provider's window: the window is given back
 * at the provider's answer, so the outcome write never holds it, and this bounds how far delivering runs ahead of
 * recording.
 */
const UNRECORDED_PER_SLOT = 4

/** What the loop asks of a send's walk (PageCursor, SliceWatch). */
interface Cursor {
  readonly buffered: number
  readonly done: boolean
  shift(): Item | undefined
  /** Calls f with up to n of the devices buffered next, in order, leaving them in place. */
  eachAhead(n: number, f: (item: Item) => void): void
  ask(): void
  /** Walks nothing more (its slice was taken over). */
  abandon(): void
}

/**
 * One send's walk through its audience in pages (bounded memory whatever the audience). List sends walk their
 * `audience` array by position; segments are expanded into placeholder rows page by page and walked by device id.
 * The next page is read while the current one is dispatched, so the window never drains waiting for Postgres.
 */
export class PageCursor implements Cursor {
  #buffer: Item[] = []
  #head = 0
  #reading = false
  #retryAt = 0
  /** No page is left to read. */
  #walked = false
  #position = 1
  #after: string | null = null

  constructor(
    private readonly meta: SendMeta,
    private readonly db: Db,
    private readonly pageSize: number,
    private readonly clock: Clock,
    /** A page arrived (or failed): the actor looks again. */
    private readonly changed: (err?: unknown) => void,
    firstPage: Candidate[] | null,
    /** Walk only this slice of a segment send (its own expansion, its own range). */
    private readonly slice?: SliceLease,
  ) {
    if (firstPage) {
      this.#buffer = firstPage.map((c) => ({ c, attempts: 0 }))
      this.#position = 1 + pageSize
      this.#walked = this.#position > meta.audienceLength
    }
    if (slice) this.#after = slice.lo
  }

  abandon(): void {
    this.#walked = true
    this.#buffer = []
    this.#head = 0
  }

  get buffered(): number {
    return this.#buffer.length - this.#head
  }

  /** Nothing buffered, nothing being read, nothing left to read. */
  get done(): boolean {
    return this.#walked && !this.#reading && this.buffered === 0
  }

  eachAhead(n: number, f: (item: Item) => void): void {
    const end = Math.min(this.#buffer.length, this.#head + n)
    for (let i = this.#head; i < end; i++) f(this.#buffer[i] as Item)
  }

  /** The next device, or undefined while a page is on its way (one is then asked for). */
  shift(): Item | undefined {
    const item = this.#buffer[this.#head]
    if (item) {
      this.#buffer[this.#head++] = undefined as unknown as Item
      if (this.#head === this.#buffer.length) {
        this.#buffer = []
        this.#head = 0
      }
    }
    if (this.buffered < this.pageSize / 2) this.ask()
    return item
  }

  /** Starts reading the next page unless one is on its way, none is left, or the last read failed just now. */
  ask(): void {
    if (this.#walked || this.#reading || this.clock() < this.#retryAt) return
    this.#reading = true
    this.#page().then(
      (page) => {
        this.#reading = false
        if (page.length > 0) {
          if (this.#head > 0) {
            this.#buffer = this.#buffer.slice(this.#head)
            this.#head = 0
          }
          for (const c of page) this.#buffer.push({ c, attempts: 0 })
        }
        this.changed()
      },
      (err) => {
        // Postgres unreachable for a moment: the actor outlives it (its sends are heartbeated, so nothing else
        // would pick them up); the read is tried again shortly.
        this.#reading = false
        this.#retryAt = this.clock() + PAGE_RETRY_MS
        this.changed(err)
      },
    )
  }

  async #page(): Promise<Candidate[]> {
    const m = this.meta
    const size = this.pageSize
    const l = this.slice
    if (l) {
      if (!l.expansionDone) await expandSlice(this.db, m, l, size, new Date(this.clock()))
      const page = await segmentPage(this.db, m, this.#after, size, l.hi)
      if (page.length > 0) this.#after = (page[page.length - 1] as Candidate).deviceId
      else if (l.expansionDone) this.#walked = true
      return page
    }
    if (m.targetKind === 'segments') {
      if (!m.expansionDone) await expandSegment(this.db, m, size, new Date(this.clock()))
      const page = await segmentPage(this.db, m, this.#after, size)
      if (page.length > 0) this.#after = (page[page.length - 1] as Candidate).deviceId
      else if (m.expansionDone) this.#walked = true
      return page
    }
    if (this.#position > m.audienceLength) {
      this.#walked = true
      return []
    }
    const page = await listPage(this.db, m, this.#position, size)
    this.#position += size
    if (this.#position > m.audienceLength) this.#walked = true
    return page
  }
}

/**
 * The walk of a sliced send as its own actor sees it: nothing to deliver here (workers lease its slices), done once
 * every slice is done (or the send is closed), read every `watchMs`.
 */
export class SliceWatch implements Cursor {
  readonly buffered = 0
  #done = false
  #reading = false
  #next = 0

  constructor(
    private readonly meta: SendMeta,
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly changed: (err?: unknown) => void,
    private readonly watchMs: number,
  ) {}

  get done(): boolean {
    return this.#done
  }

  shift(): Item | undefined {
    this.ask()
    return undefined
  }

  eachAhead(): void {}

  ask(): void {
    if (this.#done || this.#reading || this.clock() < this.#next) return
    this.#reading = true
    sliceProgress(this.db, this.meta.appId, this.meta.id).then(
      (p) => {
        this.#reading = false
        this.#next = this.clock() + this.watchMs
        if (p.open === 0 || p.completed) this.#done = true
        this.changed()
      },
      (err) => {
        this.#reading = false
        this.#next = this.clock() + this.watchMs
        this.changed(err)
      },
    )
  }

  abandon(): void {}
}

/** One send's devices waiting for another attempt, each with the time it falls due. */
export class RetryQueue {
  #items: Array<Item & { atMs: number }> = []

  get size(): number {
    return this.#items.length
  }

  push(c: Candidate, attempts: number, atMs: number): void {
    this.#items.push({ c, attempts, atMs })
  }

  /** The first retry due at `now`, taken out of the queue. */
  takeDue(now: number): Item | undefined {
    const i = this.#items.findIndex((r) => r.atMs <= now)
    if (i < 0) return undefined
    const [r] = this.#items.splice(i, 1)
    return r
  }

  clear(): void {
    this.#items = []
  }

  /** When the next retry falls due (Infinity when none waits). */
  nextAt(): number {
    let at = Number.POSITIVE_INFINITY
    for (const r of this.#items) if (r.atMs < at) at = r.atMs
    return at
  }
}

/** An app's provider requests in flight, at most `size`. */
export class InflightWindow {
  #used = 0
  #drained: Array<() => void> = []

  constructor(
    readonly size: number,
    /** A slot was given back: the actor looks again. */
    private readonly freed: () => void,
  ) {}

  get used(): number {
    return this.#used
  }

  get full(): boolean {
    return this.#used >= this.size
  }

  take(): void {
    this.#used++
  }

  give(): void {
    this.#used--
    if (this.#used === 0) for (const f of this.#drained.splice(0)) f()
    this.freed()
  }

  /** Resolves once nothing is in flight. */
  drained(): Promise<void> {
    if (this.#used === 0) return Promise.resolve()
    return new Promise((r) => this.#drained.push(r))
  }
}

/** A send (or one slice of it) being delivered: its cursor, its retries, its requests in flight. */
interface Active {
  /** The send id, or send#slice for a slice. */
  key: string
  meta: SendMeta
  cursor: Cursor
  /** The leased slice this walks (absent: the whole send, owned through its stream entry). */
  slice?: SliceLease
  /** The slice was taken over by another worker: it walks nothing more and is not marked done here. */
  lost?: boolean
  retries: RetryQueue
  inflight: number
  /** Its close is under way (or done): it takes no more work. */
  finishing: boolean
  /** Platforms this send no longer attempts (no credential, credential refused). */
  broken: Set<Platform>
  badTokens: string[]
  apnsAccepted: number
  /** The APNs credential's environment its answers came from (the last one, should it change mid-send). */
  apnsEnv: ApnsEnv
  /** An outcome could not be recorded: the send's stream entry is left unacknowledged for a redelivery. */
  unrecorded: boolean
}

export class AppActor {
  /** Sends with work to do or retries to wait for, oldest first: transactional [0], marketing [1]. */
  readonly #lanes: [Lane<Active>, Lane<Active>] = [new Lane(), new Lane()]
  /** Every send this actor holds, including those only waiting for their last answers or their close. */
  readonly #sends = new Map<string, Active>()
  /** Sends being loaded by add(): an actor with one is not idle, and a duplicate entry does not load it twice. */
  readonly #loading = new Set<string>()
  readonly #closing = new Set<Promise<void>>()
  /** Provider requests in flight. */
  readonly #window: InflightWindow
  /** Deliveries not yet durable: taken with the provider's slot, given back once the outcome is recorded. */
  readonly #unrecorded: InflightWindow
  readonly #stop = new AbortController()
  #done?: Promise<void>
  #wake: (() => void) | null = null
  #pacer: Pacer | null = null
  /** The app's receipt key once read (it never changes for an app). */
  #receiptKey: Buffer | null = null
  readonly #clock: Clock

  constructor(
    readonly appId: string,
    private readonly d: ActorDeps,
  ) {
    this.#clock = d.clock ?? systemClock
    this.#window = new InflightWindow(d.maxInflight, () => this.#nudge())
    this.#unrecorded = new InflightWindow(d.maxInflight * UNRECORDED_PER_SLOT, () => this.#nudge())
  }

  get idle(): boolean {
    return this.#sends.size === 0 && this.#loading.size === 0 && this.#unrecorded.used === 0 && this.#closing.size === 0
  }

  /** Ids of the sends this actor is working on (the worker refreshes their heartbeat). */
  activeSends(): string[] {
    return [...new Set([...this.#sends.values()].map((s) => s.meta.id))]
  }

  /**
   * A stream entry named this send; duplicates are harmless. `carried`: the send as its fresh entry carried it
   * (carried.ts), which spares its load.
   */
  async add(sendId: string, carried: LoadedSend | null = null): Promise<void> {
    if (this.#sends.has(sendId) || this.#loading.has(sendId)) return
    this.#loading.add(sendId)
    try {
      const loaded = carried ?? (await this.d.sends.load({ appId: this.appId, sendId }))
      if (!loaded || loaded.meta.completed) {
        this.d.finished(this.appId, sendId)
        return
      }
      const { meta } = loaded
      const k = this.d.sliceDevices ? sliceCount(meta, this.d.sliceDevices, this.d.maxSlices) : 1
      if (k > 1) {
        await planSlices(this.d.db, meta, k)
        meta.sliced = true
        this.d.slicesPlanned?.()
      }
      this.#begin(sendId, meta, (changed) =>
        meta.sliced
          ? new SliceWatch(meta, this.d.db, this.#clock, changed, this.d.sliceWatchMs ?? DEFAULT_DELIVERY.sliceWatchMs)
          : new PageCursor(meta, this.d.db, this.d.pageSize, this.#clock, changed, loaded.firstPage),
      )
    } finally {
      this.#loading.delete(sendId)
    }
  }

  /** A leased slice of one of the app's sends: walked here, marked done (or given back) at its end. */
  addSlice(meta: SendMeta, lease: SliceLease): void {
    const key = sliceKey(meta.id, lease.slice)
    if (this.#sends.has(key)) return
    const s = this.#begin(
      key,
      meta,
      (changed) => new PageCursor(meta, this.d.db, this.d.pageSize, this.#clock, changed, null, lease),
    )
    s.slice = lease
  }

  /** Slices taken over by another worker: their walks stop here (what is in flight finishes and is recorded). */
  abandon(keys: readonly string[]): void {
    for (const key of keys) {
      const s = this.#sends.get(key)
      if (!s) continue
      s.lost = true
      s.cursor.abandon()
      s.retries.clear()
      this.#settle(s)
    }
    this.#nudge()
  }

  #begin(key: string, meta: SendMeta, cursor: (changed: (err?: unknown) => void) => Cursor): Active {
    const s: Active = {
      key,
      meta,
      cursor: cursor((err) => {
        if (err) this.d.log.warn({ err: String(err), app: this.appId, send: meta.id }, 'could not read the next page; retrying')
        this.#settle(s)
        this.#nudge()
      }),
      retries: new RetryQueue(),
      inflight: 0,
      finishing: false,
      broken: new Set(),
      badTokens: [],
      apnsAccepted: 0,
      apnsEnv: 'production',
      unrecorded: false,
    }
    this.#sends.set(key, s)
    this.#lanes[meta.lane].add(s)
    this.start()
    this.#settle(s)
    this.#nudge()
    return s
  }

  start(): void {
    this.#done ??= this.#run().catch((err) => this.d.log.error({ err, app: this.appId }, 'actor stopped on an error'))
  }

  /** Stops taking new work and waits for what is in flight and the closes under way (idempotent). */
  async stop(): Promise<void> {
    this.#stop.abort()
    this.#nudge()
    await this.#done
    await this.#unrecorded.drained()
    await Promise.allSettled([...this.#closing])
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal
    this.#pacer = new Pacer(
      await this.d.ratePerMin(this.appId),
      this.#clock,
      abortableSleep,
      this.d.pace?.(this.appId),
      this.d.onPaceWait,
    )
    while (!signal.aborted) {
      if (this.#full() || !this.#anyReady()) {
        await this.#sleep()
        continue
      }
      const pacer = this.#pacer
      if (!pacer.tryTake(signal) && !(await pacer.take(signal, this.#lanes[0].size > 0 ? 0 : 1))) break
      // Picked after the token: a transactional device that arrived meanwhile goes first (lanes, between devices).
      const pick = this.#nextReady()
      if (!pick) continue
      const { s, item } = pick
      this.#window.take()
      this.#unrecorded.take()
      s.inflight++
      let answered = false
      const release = () => {
        if (answered) return
        answered = true
        this.#window.give()
      }
      this.#deliver(s, item.c, item.attempts, release)
        // Only the last attempt's errored record can fail here; the send then stays open in Postgres, its entry is
        // not acknowledged, and it is handed out again (nothing acknowledged that is not durable).
        .catch((err) => {
          s.unrecorded = true
          this.d.log.error({ err: String(err), app: this.appId, send: s.meta.id }, 'recording an outcome failed')
        })
        .finally(() => {
          s.inflight--
          this.#settle(s)
          release()
          this.#unrecorded.give()
        })
      this.#settle(s)
    }
  }

  /**
   * The loop's one wait: until something may have become ready (#nudge), the next retry, or a tick. With a window
   * full only a slot given back (which always nudges) or stop can let the loop on, so no timer is set.
   */
  async #sleep(): Promise<void> {
    if (this.#window.full || this.#unrecorded.full) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve
      })
      this.#wake = null
      return
    }
    // The outcome queue drains without telling this actor: it looks again soon.
    let ms = this.d.recorder.saturated ? SATURATED_TICK_MS : IDLE_TICK_MS
    const now = this.#clock()
    for (const lane of this.#lanes)
      lane.forEach((s) => {
        ms = Math.min(ms, Math.max(1, s.retries.nextAt() - now))
      })
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms)
      this.#wake = done
      function done() {
        clearTimeout(timer)
        resolve()
      }
    })
    this.#wake = null
  }

  /** No device may start: the provider's window is full, or too many answered deliveries await their record (of
   *  this app, or half the worker's outcome queue). */
  #full(): boolean {
    return this.#window.full || this.#unrecorded.full || this.d.recorder.saturated
  }

  #nudge(): void {
    this.#wake?.()
  }

  #anyReady(): boolean {
    const now = this.#clock()
    for (const lane of this.#lanes) {
      const ready = lane.first((s) => {
        if (s.cursor.buffered > 0 || s.retries.nextAt() <= now) return true
        s.cursor.ask() // nothing buffered: a page is asked for (a no-op while one is on its way)
        return undefined
      })
      if (ready) return true
    }
    return false
  }

  /** Transactional first; within a lane, the oldest send with a device ready (a due retry before a new device). */
  #nextReady(): { s: Active; item: Item } | undefined {
    const now = this.#clock()
    for (const lane of this.#lanes) {
      const pick = lane.first((s) => {
        const item = s.retries.takeDue(now) ?? s.cursor.shift()
        return item ? { s, item } : undefined
      })
      if (pick) return pick
    }
    return undefined
  }

  /**
   * Where a send belongs after a change: in its lane while it has devices to walk or retries to wait for; out of
   * it once only answers are awaited; closed once the last answer is durable.
   */
  #settle(s: Active): void {
    if (s.finishing) return
    const lane = this.#lanes[s.meta.lane]
    if (!s.cursor.done || s.retries.size > 0) {
      lane.add(s)
      return
    }
    lane.delete(s.key)
    if (s.inflight === 0) this.#finish(s)
  }

  /** `answered`: called when the provider has answered, so its window slot is free before the record is durable (a
   *  delivery that never asks the provider gives its slot back when it ends). */
  async #deliver(s: Active, c: Candidate, attempts: number, answered: () => void): Promise<void> {
    let providerAnswered = false
    const record = (status: OutcomeRow['status'], tries: number, reason?: string, invalidate?: string) =>
      this.d.recorder.record({
        appId: this.appId,
        sendId: s.meta.id,
        deviceId: c.deviceId,
        deviceType: c.deviceType,
        status,
        attempts: tries,
        invalidate,
        reason,
        markReal: status === STATUS.successful && c.proven !== true,
      })
    try {
      // spec: a delivery past its deadline is not attempted (ttl 0 means "now or never" and is left to the provider).
      if (s.meta.ttlS > 0 && this.#clock() > s.meta.startMs + s.meta.ttlS * 1000)
        return void (await record(STATUS.errored, attempts, 'expired'))
      if (!c.token || !c.valid) return void (await record(STATUS.failed, attempts, 'invalid_token'))
      const platform: Platform = c.transport === 'apns' ? 'apns' : 'fcm'
      if (s.broken.has(platform)) return void (await record(STATUS.errored, attempts, `credential:${platform}`))
      // At thousands of deliveries a second, a wait for an answer already at hand is a measurable cost.
      const known = this.d.providers.peek?.(this.appId, platform)
      const provider = known === undefined ? await this.d.providers.get(this.appId, platform) : known
      if (!provider) {
        s.broken.add(platform)
        await setProblem(this.d.db, this.appId, s.meta.id, `credencial_ausente:${platform}`)
        return void (await record(STATUS.errored, attempts, `no_credential:${platform}`))
      }
      this.#receiptKey ??= await this.d.receiptKey(this.appId)
      if (c.proof === undefined) this.#proveAhead(s, this.#receiptKey, c)
      // A late attempt gives the provider only what is left of the send's ttl, never a fresh one.
      const ttlS = s.meta.ttlS > 0 ? Math.max(1, Math.ceil((s.meta.startMs + s.meta.ttlS * 1000 - this.#clock()) / 1000)) : 0
      const outcome = await provider.send(
        { deviceId: c.deviceId, token: c.token, deviceType: c.deviceType },
        { sendId: s.meta.id, message: s.meta.message, proof: c.proof as string, ttlS, lane: s.meta.lane },
      )
      answered()
      providerAnswered = true
      if (platform === 'apns') this.#countApns(s, provider.apnsEnv ?? 'production', outcome)
      await this.#apply(s, c, attempts + 1, platform, outcome, record)
    } catch (err) {
      if (providerAnswered) {
        // The provider answered but its outcome could not be written (conflicts are retried by the recorder, so
        // Postgres is failing): sending the push again now would deliver it twice. The send's entry stays
        // unacknowledged, as for any outcome not made durable, and the send is handed out again later.
        s.unrecorded = true
        this.d.log.error({ err: String(err), app: this.appId, send: s.meta.id }, 'recording an outcome failed')
        return
      }
      // Our own failure before the provider was asked (database, decryption): the device is retried like a
      // transient provider failure.
      this.d.log.warn({ err: String(err), app: this.appId, send: s.meta.id }, 'delivery attempt failed locally')
      await this.#retry(s, c, attempts + 1, undefined, 'local_error', record)
    }
  }

  /**
   * The proof of this device and of the next ones buffered, in one loop: its send's next devices, then (a send of one
   * device has none) those of the sends after it in its lane. An HMAC costs ~3 µs in a tight loop and ~10 µs alone
   * between deliveries, whose work evicts OpenSSL's code and tables from the CPU's caches; in a loop of 64 they stay
   * warm. A device skipped later wasted one.
   */
  #proveAhead(s: Active, key: Buffer, c: Candidate): void {
    c.proof = proof(key, s.meta.id, c.deviceId)
    let left = PROOFS_AHEAD
    const ahead = (o: Active) =>
      o.cursor.eachAhead(left, (item) => {
        left--
        if (item.c.proof === undefined && item.c.token && item.c.valid) item.c.proof = proof(key, o.meta.id, item.c.deviceId)
      })
    ahead(s)
    if (left <= 0) return
    this.#lanes[s.meta.lane].first((o) => {
      if (o !== s) ahead(o)
      return left > 0 ? undefined : true
    })
  }

  /** An APNs answer that tells whether the credential's environment is right: counted for the app (bad-tokens.ts). */
  #countApns(s: Active, env: ApnsEnv, o: Outcome): void {
    if (o.kind !== 'accepted' && o.kind !== 'bad-device-token') return
    s.apnsEnv = env
    this.d.apnsAnswers?.note(this.appId, env, o.kind === 'accepted')
  }

  async #apply(
    s: Active,
    c: Candidate,
    attempts: number,
    platform: Platform,
    o: Outcome,
    record: (status: OutcomeRow['status'], tries: number, reason?: string, invalidate?: string) => Promise<boolean>,
  ): Promise<void> {
    switch (o.kind) {
      case 'accepted':
        if (platform === 'apns') s.apnsAccepted++
        await record(STATUS.successful, attempts)
        return
      case 'dead-token':
        await record(STATUS.failed, attempts, `dead_token:${o.reason}`, o.reason)
        return
      case 'bad-device-token':
        // Invalidated only when the app's recent answers show it is not an environment mismatch (decided at the end).
        s.badTokens.push(c.deviceId)
        await record(STATUS.failed, attempts, `bad_device_token:${o.reason}`)
        return
      case 'rejected':
        await record(STATUS.failed, attempts, `rejected:${o.reason}`)
        return
      case 'credential':
        s.broken.add(platform)
        await setProblem(this.d.db, this.appId, s.meta.id, `credencial_recusada:${platform}:${o.reason}`)
        await record(STATUS.errored, attempts, `credential:${o.reason}`)
        return
      case 'quota':
        // Back-pressure on the whole app; this attempt does not count against the device.
        this.#pacer?.pause(o.retryAfterMs)
        s.retries.push(c, attempts - 1, this.#clock())
        return
      case 'transient':
        await this.#retry(s, c, attempts, o.retryAfterMs, o.reason, record)
        return
    }
  }

  /** Schedules another attempt, or records the delivery as errored after the last one (awaited: durable first). */
  async #retry(
    s: Active,
    c: Candidate,
    attempts: number,
    retryAfterMs: number | undefined,
    reason: string,
    record: (status: OutcomeRow['status'], tries: number, reason?: string) => Promise<boolean>,
  ): Promise<void> {
    if (attempts >= this.d.maxAttempts) {
      await record(STATUS.errored, attempts, `provider_error:${reason}`)
      return
    }
    const delay = Math.max(retryAfterMs ?? 0, this.d.retryDelaysMs[Math.min(attempts, this.d.retryDelaysMs.length) - 1] ?? 1_000)
    s.retries.push(c, attempts, this.#clock() + delay)
  }

  /** Closes the send (batched with others) and lets the worker acknowledge it; the loop does not wait for it. */
  #finish(s: Active): void {
    s.finishing = true
    const p = this.#close(s)
      .catch((err) => {
        // The send stays unfinished in Postgres and stops being heartbeated: the sweeper hands it out again. A slice
        // is given back (its lease no longer renewed here, so it lapses even if this cannot be written).
        this.d.log.warn({ err: String(err), app: this.appId, send: s.meta.id }, 'could not close a send; the sweeper will retry')
        if (s.slice) this.d.sliceFinished?.(s.slice, false).catch(() => {})
      })
      .finally(() => {
        this.#sends.delete(s.key)
        this.#closing.delete(p)
      })
    this.#closing.add(p)
  }

  async #close(s: Active): Promise<void> {
    await invalidateBadTokens(
      { db: this.d.db, answers: this.d.apnsAnswers, log: this.d.log },
      { appId: this.appId, sendId: s.meta.id, env: s.apnsEnv, bad: s.badTokens, accepted: s.apnsAccepted },
      new Date(this.#clock()),
      this.d.apnsSuspectPercent,
    )
    if (s.slice) {
      // The send is closed by its own actor once every slice is done; a slice taken over is the new owner's to finish.
      if (!s.lost) await this.d.sliceFinished?.(s.slice, !s.unrecorded)
      return
    }
    await this.d.sends.close({ appId: this.appId, sendId: s.meta.id })
    // Acknowledged only when every outcome is durable; otherwise the entry stays pending and the send is handed
    // out again (takeover of pending entries, or the sweeper) and its unrecorded devices delivered again.
    if (!s.unrecorded) this.d.finished(this.appId, s.meta.id)
  }
}
