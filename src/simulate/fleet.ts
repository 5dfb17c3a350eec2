// The simulated devices of `pombo simulate`: each one a real `@pombo/sdk` instance (registration, receipts and
// clicks go through the SDK's own code and the service's public routes), owning one push token. The provider
// simulators hand every accepted message to the device owning its token, in this process; the device answers with
// a receipt and a click at the configured rates and delays, or holds the push while it is offline (as FCM and APNs
// hold messages for a device that is not connected) and gets it when it comes back.
// Memory: one small object and one SDK instance per device; everything else is counters and fixed-size histograms.
import { createHash } from 'node:crypto'
import { MemoryStorage, Pombo, type PomboError } from '@pombo/sdk'
import { SIMULATOR_PASS_HEADER } from '../core/simulator-pass'
import { httpClient } from '../http/client'
import { type Latency, sampleLatency } from '../simulators/conditions'
import { Histogram, Timeline } from './histogram'

export type Platform = 'android' | 'ios' | 'web'
const DEVICE_TYPE: Record<Platform, 0 | 1 | 5> = { android: 1, ios: 0, web: 5 }
/** FCM and APNs keep at most this many undelivered messages for an offline device (FCM: 100). */
const HELD_MAX = 100
/** Pushes that arrive before their send's POST has answered (the worker can be that fast), kept to be timed. */
const EARLY_MAX = 100_000

export interface FleetOptions {
  baseUrl: string
  appId: string
  devices: number
  platforms: readonly Platform[]
  receiptRate: number
  clickRate: number
  receiptDelay: Latency
  clickDelay: Latency
  offlineRate: number
  offlineFor: Latency
  /** Registrations in flight at once. */
  concurrency: number
  /** HTTP requests to the service in flight at once, for the whole fleet. */
  httpConcurrency: number
  /** Makes this run's tokens unique. */
  runId: string
  /** The fleet pass the instance honours where simulators are allowed (src/core/simulator-pass.ts): every request of
   *  the fleet carries it, so one address registering a thousand devices is not held to the per-IP limit. */
  pass?: string
  random?: () => number
  now?: () => number
}

interface Device {
  token: string
  platform: Platform
  pombo: Pombo | null
  offline: boolean
  backAt: number
  held: Array<{ data: unknown; providerAt: number }> | null
  /** Receipts and clicks scheduled or in flight. */
  busy: number
  /** A receipt or click could not be sent and waits in the SDK's queue. */
  owes: boolean
  /** Ids of queued jobs the SDK gave up on (refused for good). */
  dropped: Set<string> | null
  /** The sends whose push this device received, the latest SEEN_MAX: a push of one of them again is a duplicate. */
  seen: Set<string> | null
}

/** Sends a device remembers having received, to tell a redelivered push from a new one. */
const SEEN_MAX = 64

export interface FleetStats {
  registered: number
  registerFailed: number
  pushesReceived: number
  /** Pushes of a send the device had already received: delivery is at least once, and a provider request that timed
   *  out after its message was accepted is delivered again. Included in pushesReceived. */
  pushesDuplicate: number
  /** Pushes that found their device offline and were delivered when it came back. */
  pushesHeld: number
  /** Pushes dropped because the offline device already had HELD_MAX waiting. */
  pushesDiscarded: number
  /** Accepted messages for a token no simulated device owns (other devices of the app, connection tests). */
  unknownTokens: number
  receiptsSent: number
  receiptsDuplicate: number
  receiptsQueued: number
  receiptsRefused: number
  /** Pushes the device chose not to answer (1 - receipt rate). */
  receiptsSkipped: number
  clicksSent: number
  clicksDuplicate: number
  clicksQueued: number
  clicksRefused: number
  /** Queued receipts and clicks that a later flush settled (the service has them now; it may have counted them at
   *  the first attempt, whose answer the device never saw). */
  receiptsLate: number
  clicksLate: number
  /** Queued receipts and clicks the service refused for good. */
  dropped: number
  offlineNow: number
  offlineTransitions: number
}

export class Fleet {
  readonly stats: FleetStats = {
    registered: 0,
    registerFailed: 0,
    pushesReceived: 0,
    pushesDuplicate: 0,
    pushesHeld: 0,
    pushesDiscarded: 0,
    unknownTokens: 0,
    receiptsSent: 0,
    receiptsDuplicate: 0,
    receiptsQueued: 0,
    receiptsRefused: 0,
    receiptsSkipped: 0,
    clicksSent: 0,
    clicksDuplicate: 0,
    clicksQueued: 0,
    clicksRefused: 0,
    receiptsLate: 0,
    clicksLate: 0,
    dropped: 0,
    offlineNow: 0,
    offlineTransitions: 0,
  }
  /** send accepted → provider accepted; provider accepted → receipt counted; send accepted → receipt counted. */
  readonly sendToProvider = new Histogram()
  readonly providerToReceipt = new Histogram()
  readonly sendToReceipt = new Histogram()
  readonly receiptsOverTime: Timeline
  readonly pushesOverTime: Timeline
  /** Registration failures by reason (at most 20 distinct reasons kept). */
  readonly registerErrors = new Map<string, number>()
  /** Receipts and clicks counted by the service, per send id of this run's own sends. */
  readonly perSend = new Map<string, { receipts: number; clicks: number }>()

  readonly #o: FleetOptions
  readonly #random: () => number
  readonly #now: () => number
  readonly #devices: Device[] = []
  readonly #byToken = new Map<string, Device>()
  readonly #offline = new Set<Device>()
  readonly #acceptedAt = new Map<string, number>()
  readonly #early = new Map<string, number[]>()
  #earlyCount = 0
  #postsInFlight = 0
  #busy = 0
  #idle: Array<() => void> = []
  #churn: NodeJS.Timeout | null = null
  readonly #timers = new Set<NodeJS.Timeout>()
  readonly #gate: Gate
  /** The devices' calls to the service, over kept-alive connections (src/http/client.ts: fetch cost three times the
   *  CPU a call). */
  readonly #http = httpClient()

  constructor(o: FleetOptions) {
    this.#o = o
    this.#random = o.random ?? Math.random
    this.#now = o.now ?? Date.now
    this.#gate = new Gate(o.httpConcurrency)
    this.receiptsOverTime = new Timeline(this.#now())
    this.pushesOverTime = new Timeline(this.#now())
  }

  /** Player ids of the registered devices, in device order. */
  playerIds(): string[] {
    const ids: string[] = []
    for (const d of this.#devices) if (d.pombo?.playerId) ids.push(d.pombo.playerId)
    return ids
  }

  /**
   * Registers the devices through the SDK, `concurrency` at a time. `abort` is asked after each registration: a
   * reason stops the fleet early (the service refuses everyone, e.g. its per-IP limit).
   */
  async register(abort: (s: FleetStats) => string | null = () => null): Promise<void> {
    let next = 0
    let stop: string | null = null
    const worker = async () => {
      while (next < this.#o.devices && stop === null) {
        const i = next++
        await this.#registerOne(i)
        stop = abort(this.stats)
      }
    }
    await Promise.all(Array.from({ length: Math.min(this.#o.concurrency, this.#o.devices) }, worker))
    if (stop !== null) throw new Error(stop)
  }

  async #registerOne(i: number): Promise<void> {
    const platform = this.#o.platforms[i % this.#o.platforms.length] as Platform
    const d: Device = {
      token: tokenFor(platform, this.#o.runId, i),
      platform,
      pombo: null,
      offline: false,
      backAt: 0,
      held: null,
      busy: 0,
      owes: false,
      dropped: null,
      seen: null,
    }
    let lastError: PomboError | null = null
    const gate = this.#gate
    const http = this.#http
    const pass = this.#o.pass
    const withPass = (init: RequestInit): RequestInit =>
      pass ? { ...init, headers: { ...(init.headers as Record<string, string>), [SIMULATOR_PASS_HEADER]: pass } } : init
    const fetchFn = (url: string, init: RequestInit): Promise<Response> =>
      d.offline
        ? Promise.reject(new TypeError('fetch failed (simulated device offline)'))
        : gate.run(() => http.fetch(url, withPass(init)))
    try {
      d.pombo = await Pombo.init({
        baseUrl: this.#o.baseUrl,
        appId: this.#o.appId,
        appVersion: 'pombo-simulate',
        deviceType: DEVICE_TYPE[platform],
        getToken: () => d.token,
        storage: new MemoryStorage(),
        deviceModel: `simulated ${platform}`,
        language: 'en',
        background: true, // no session counting, no in-app feed: a device that only receives pushes
        autoRetry: false, // the fleet retries what is owed itself, so every receipt is accounted for
        fetch: fetchFn,
        onError: (e) => {
          lastError = e
          if (!e.job) return
          d.dropped ??= new Set()
          d.dropped.add(e.job.id)
        },
      })
    } catch (err) {
      lastError = { kind: 'register', message: (err as Error).message } as PomboError
    }
    if (d.pombo?.playerId) {
      this.stats.registered++
      this.#devices.push(d)
      this.#byToken.set(d.token, d)
      return
    }
    d.pombo?.close()
    this.stats.registerFailed++
    const reason = (lastError as PomboError | null)?.message ?? 'no player id'
    if (this.registerErrors.has(reason) || this.registerErrors.size < 20)
      this.registerErrors.set(reason, (this.registerErrors.get(reason) ?? 0) + 1)
  }

  /** A POST of a send is about to go out: pushes of unknown sends are kept to be timed until it answers. */
  sendStarted(): void {
    this.#postsInFlight++
  }

  /** The send's POST answered at `at` (its id may be '' when nobody was reachable). */
  sendAccepted(sendId: string | null, at: number): void {
    this.#postsInFlight = Math.max(0, this.#postsInFlight - 1)
    if (sendId) {
      this.#acceptedAt.set(sendId, at)
      if (!this.perSend.has(sendId)) this.perSend.set(sendId, { receipts: 0, clicks: 0 })
      const early = this.#early.get(sendId)
      if (early) {
        for (const p of early) this.sendToProvider.record(p - at)
        this.#earlyCount -= early.length
        this.#early.delete(sendId)
      }
    }
    if (this.#postsInFlight === 0 && this.#early.size > 0) {
      this.#early.clear() // pushes of sends that are not this run's
      this.#earlyCount = 0
    }
  }

  /** A provider simulator accepted a message for `token` at `providerAt`: hand it to its device. */
  push(token: string, data: unknown, providerAt: number): void {
    const d = this.#byToken.get(token)
    if (!d) {
      this.stats.unknownTokens++
      return
    }
    this.stats.pushesReceived++
    this.pushesOverTime.add(providerAt)
    const sendId = sendIdOf(data)
    if (sendId) {
      d.seen ??= new Set()
      if (d.seen.has(sendId)) this.stats.pushesDuplicate++
      else {
        d.seen.add(sendId)
        if (d.seen.size > SEEN_MAX) d.seen.delete(d.seen.values().next().value as string)
      }
    }
    const accepted = sendId ? this.#acceptedAt.get(sendId) : undefined
    if (accepted !== undefined) this.sendToProvider.record(providerAt - accepted)
    else if (sendId && this.#postsInFlight > 0 && this.#earlyCount < EARLY_MAX) {
      const list = this.#early.get(sendId) ?? []
      list.push(providerAt)
      this.#early.set(sendId, list)
      this.#earlyCount++
    }
    if (d.offline) {
      if ((d.held?.length ?? 0) >= HELD_MAX) {
        this.stats.pushesDiscarded++
        return
      }
      d.held ??= []
      d.held.push({ data, providerAt })
      this.stats.pushesHeld++
      return
    }
    this.#answer(d, data, providerAt)
  }

  /** The device shows the push: maybe a receipt after its delay, then maybe a click after another. */
  #answer(d: Device, data: unknown, providerAt: number): void {
    if (this.#random() >= this.#o.receiptRate) {
      this.stats.receiptsSkipped++
      return
    }
    const clicks = this.#random() < this.#o.clickRate
    this.#work(d, sampleLatency(this.#o.receiptDelay, this.#random), async () => {
      const r = await (d.pombo as Pombo).handlePush(data)
      const at = this.#now()
      const sendId = sendIdOf(data)
      const mine = sendId ? this.perSend.get(sendId) : undefined
      switch (r?.receipt) {
        case 'sent': {
          this.stats.receiptsSent++
          this.receiptsOverTime.add(at)
          this.providerToReceipt.record(at - providerAt)
          const accepted = sendId ? this.#acceptedAt.get(sendId) : undefined
          if (accepted !== undefined) this.sendToReceipt.record(at - accepted)
          if (mine) mine.receipts++
          break
        }
        case 'duplicate':
          this.stats.receiptsDuplicate++
          break
        case 'queued':
          this.stats.receiptsQueued++
          d.owes = true
          break
        default:
          this.stats.receiptsRefused++
      }
      if (r?.receipt !== 'sent' || !clicks) return
      this.#work(d, sampleLatency(this.#o.clickDelay, this.#random), async () => {
        const c = await (d.pombo as Pombo).handleTap(data)
        if (c?.receipt === 'sent') {
          this.stats.clicksSent++
          if (mine) mine.clicks++
        } else if (c?.receipt === 'duplicate') this.stats.clicksDuplicate++
        else if (c?.receipt === 'queued') {
          this.stats.clicksQueued++
          d.owes = true
        } else this.stats.clicksRefused++
      })
    })
  }

  /** Runs fn after delayMs as the device's work; the fleet is idle when no device has work. */
  #work(d: Device, delayMs: number, fn: () => Promise<void>): void {
    d.busy++
    this.#busy++
    const run = () =>
      fn()
        .catch(() => {}) // the SDK never throws into its host; nothing here may stop the fleet either
        .finally(() => {
          d.busy--
          this.#busy--
          if (this.#busy === 0) for (const w of this.#idle.splice(0)) w()
        })
    if (delayMs <= 0) {
      void run()
      return
    }
    const t = setTimeout(() => {
      this.#timers.delete(t)
      void run()
    }, delayMs)
    this.#timers.add(t)
  }

  /** Starts taking devices offline and back so that about `offlineRate` of them are offline at any time, from now
   *  on: the first sends already find that share offline. */
  startChurn(tickMs = 250): void {
    if (this.#o.offlineRate <= 0 || this.#churn) return
    this.#churn = setInterval(() => this.#tick(), tickMs)
    this.#tick()
  }

  #tick(): void {
    const now = this.#now()
    for (const d of this.#offline) if (d.backAt <= now) this.#online(d)
    const target = Math.round(this.#o.offlineRate * this.#devices.length)
    // Only an idle device goes offline, so no receipt is cut in flight: what goes unsent is the provider's to hold.
    for (let tries = 0; this.#offline.size < target && tries < 4 * (target - this.#offline.size) + 8; tries++) {
      const d = this.#devices[Math.floor(this.#random() * this.#devices.length)]
      if (!d || d.offline || d.busy > 0) continue
      d.offline = true
      d.backAt = now + sampleLatency(this.#o.offlineFor, this.#random)
      this.#offline.add(d)
      this.stats.offlineTransitions++
    }
    this.stats.offlineNow = this.#offline.size
  }

  #online(d: Device): void {
    d.offline = false
    this.#offline.delete(d)
    this.stats.offlineNow = this.#offline.size
    const held = d.held
    d.held = null
    if (held) for (const h of held) this.#answer(d, h.data, h.providerAt)
    if (d.owes) this.#flush(d)
  }

  /** Sends what the device's SDK still owes; every job that leaves the queue, except those refused for good, is now
   *  held by the service (sent now, or `duplicado`: counted by an earlier attempt whose answer was lost). */
  #flush(d: Device): void {
    d.owes = false
    this.#work(d, 0, async () => {
      const p = d.pombo as Pombo
      const before = await p.queued()
      const r = await p.flush()
      const still = new Set((await p.queued()).map((j) => j.id))
      for (const j of before) {
        if (still.has(j.id) || j.k !== 'r') continue
        if (d.dropped?.has(j.id)) {
          this.stats.dropped++
          continue
        }
        const mine = this.perSend.get(j.notificationId)
        if (j.evento === 'clique') {
          this.stats.clicksLate++
          if (mine) mine.clicks++
        } else {
          this.stats.receiptsLate++
          this.receiptsOverTime.add(this.#now())
          if (mine) mine.receipts++
        }
      }
      if (r.pending > 0) d.owes = true
    })
  }

  /** Stops the churn and brings every device back (held pushes are answered now). */
  allOnline(): void {
    if (this.#churn) clearInterval(this.#churn)
    this.#churn = null
    for (const d of [...this.#offline]) this.#online(d)
  }

  /** Devices whose receipts or clicks wait in the SDK's queue send them now (one more round). */
  flushOwed(): void {
    for (const d of this.#devices) if (d.owes && !d.offline) this.#flush(d)
  }

  get busy(): number {
    return this.#busy
  }

  /** Resolves once no device has work scheduled or in flight (or after timeoutMs: false). */
  waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.#busy === 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#idle = this.#idle.filter((w) => w !== done)
        resolve(false)
      }, timeoutMs)
      const done = () => {
        clearTimeout(t)
        resolve(true)
      }
      this.#idle.push(done)
    })
  }

  close(): void {
    if (this.#churn) clearInterval(this.#churn)
    for (const t of this.#timers) clearTimeout(t)
    this.#timers.clear()
    for (const d of this.#devices) d.pombo?.close()
    this.#http.close()
  }
}

/** The send id a push carries (`pm_msg_id`), FCM data map or APNs payload alike. */
function sendIdOf(data: unknown): string | null {
  const v = data && typeof data === 'object' ? (data as Record<string, unknown>).pm_msg_id : undefined
  return typeof v === 'string' ? v : null
}

/** A token of the platform's shape, unique to the run and the device: APNs 64 hex characters, FCM a long opaque text. */
export function tokenFor(platform: Platform, runId: string, i: number): string {
  const h = createHash('sha256').update(`${runId}:${i}`).digest()
  if (platform === 'ios') return h.toString('hex')
  return `sim${runId}:${i}:APA91b${h.toString('base64url')}`
}

/** Lets at most `max` calls run at once; the rest wait their turn in order. */
class Gate {
  #running = 0
  readonly #queue: Array<() => void> = []
  constructor(readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running >= this.max) await new Promise<void>((resolve) => this.#queue.push(resolve))
    this.#running++
    try {
      return await fn()
    } finally {
      this.#running--
      this.#queue.shift()?.()
    }
  }
}
