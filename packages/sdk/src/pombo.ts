// The SDK's entry point. `Pombo.init` registers the device (never asking for permission) and sends what the last
// run still owed; `handlePush` turns a push into what to draw and proves its arrival; `handleTap` proves the click;
// `flush` sends what is queued; `inapp` is the in-app feed. A device the service deleted registers again as soon as
// an answer says so (rejoin.ts). Nothing here throws into the host's handlers: failures become results and `onError`
// reports.
import { DEFAULT_RETRY, type RetryPolicy, backoffMs } from './backoff.js'
import { detectLanguage } from './device-info.js'
import { type ErrorHandler, messageOf, type PomboError, reporter } from './errors.js'
import { crossContextLock, sharedWithServiceWorker, writeWorkerSettings } from './handoff.js'
import { InappFeed } from './inapp/feed.js'
import { type Job, type JobResult, Outbox, type ReceiptEvent, type ReceiptJob, type RoundReport } from './outbox.js'
import { type ParsedPush, type PushDisplay, parsePush } from './push.js'
import {
  fingerprint,
  type IdentityOptions,
  installId,
  REGISTRATION_KEY,
  register,
  registrationBody,
  SESSIONS_KEY,
  type Stored,
} from './registration.js'
import { Rejoin } from './rejoin.js'
import { MemoryStorage, type StorageAdapter, Store } from './storage.js'
import type { FetchLike, Transport } from './transport.js'

export interface PomboOptions extends IdentityOptions {
  /** The service's address, e.g. `https://push.example.com` (required: there is no default host). */
  baseUrl: string
  /** Answers the current push token (FCM registration token, APNs device token, web push token); null when none. */
  getToken: () => string | null | undefined | Promise<string | null | undefined>
  /** Durable storage (localStorage-like, sync or async); in memory when absent. */
  storage?: StorageAdapter
  /** A run without UI (service worker, notification extension): counts no session and runs no in-app feed. */
  background?: boolean
  /**
   * Default true. False: this instance never registers; it sends receipts for the device another instance sharing
   * its storage registered (a service worker beside its page), reading that registration from storage each time.
   */
  registers?: boolean
  /** Told about everything that went wrong; the SDK itself never throws into the host after `init`. */
  onError?: (err: PomboError) => void
  /** The fetch to use (default: the global one). */
  fetch?: FetchLike
  /** Per-request timeout (ms, default 10 000). */
  timeoutMs?: number
  /** Backoff of the automatic retries (ms). */
  retry?: Partial<RetryPolicy>
  /** Most receipts/events kept while the service cannot be reached (default 500). */
  maxQueue?: number
  /** Retry queued work on timers (default true); off, only `flush`, `init` and pushes send. */
  autoRetry?: boolean
  /** Register again after this long even when nothing changed (ms, default 24 h). */
  refreshRegistrationMs?: number
  /** In-app: how often to ask for the package while the feed runs (ms, default 5 min; 0 = only at start/refresh). */
  inappPollMs?: number
  /** In-app: wait before sending queued events so they travel in batches (ms, default 1 000). */
  batchDelayMs?: number
  /** The clock (tests). */
  now?: () => number
}

/** What `handlePush` answers: the display block, and what became of the delivery receipt. */
export type PushResult = PushDisplay & { receipt: JobResult }

export interface TapResult {
  notificationId: string
  url?: string
  data: Record<string, unknown>
  receipt: JobResult
}

export type FlushReport = RoundReport

const RECEIPT_WINDOW_MS = 90 * 86_400_000
/** In-app events are taken up to 7 days back; an hour of margin for the time in the queue and clocks. */
const EVENT_WINDOW_MS = 7 * 86_400_000 - 3_600_000
/** Previous devices of the install remembered for late pushes. */
const PREVIOUS_MAX = 3
const LAST_SESSION_KEY = 'last_session'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DEVICE_TYPES = new Set([0, 1, 5, 7, 8])

export class Pombo {
  readonly appId: string
  readonly inapp: InappFeed
  readonly #o: PomboOptions
  readonly #store: Store
  readonly #t: Transport
  readonly #outbox: Outbox
  readonly #report: ErrorHandler
  readonly #now: () => number
  readonly #retry: RetryPolicy
  readonly #rejoin: Rejoin
  #install = ''
  #reg: Stored | null = null
  #registering: Promise<void> | null = null
  #regFailures = 0
  #regTimer: ReturnType<typeof setTimeout> | undefined
  #sessions = 0
  #closed = false

  private constructor(o: PomboOptions, previousSession: number | null, sessionStart: number, store: Store, report: ErrorHandler) {
    this.#o = o
    this.appId = o.appId.toLowerCase()
    this.#report = report
    this.#now = o.now ?? Date.now
    this.#store = store
    this.#retry = { ...DEFAULT_RETRY, ...o.retry }
    const f = o.fetch ?? (globalThis.fetch ? (url: string, init: RequestInit) => globalThis.fetch(url, init) : undefined)
    this.#t = {
      fetch: f ?? (() => Promise.reject(new Error('fetch indisponível neste ambiente'))),
      baseUrl: o.baseUrl.replace(/\/+$/, ''),
      timeoutMs: o.timeoutMs ?? 10_000,
      now: this.#now,
      serverAt: null,
    }
    this.#rejoin = new Rejoin({
      current: () => this.playerId,
      register: (unknown) => this.#registerAgain(unknown),
      retry: this.#retry,
      now: this.#now,
    })
    const unknownPlayer = (player: string): void => void this.#rejoin.unknown(player)
    this.#outbox = new Outbox({
      appId: this.appId,
      store,
      transport: this.#t,
      retry: this.#retry,
      max: Math.max(1, o.maxQueue ?? 500),
      maxAgeMs: RECEIPT_WINDOW_MS,
      eventMaxAgeMs: EVENT_WINDOW_MS,
      batchDelayMs: o.batchDelayMs ?? 1_000,
      autoRetry: o.autoRetry ?? true,
      playerId: () => this.playerId,
      previousPlayers: () => this.#reg?.previous ?? [],
      drop: (job, reason) => this.#dropped(job, reason),
      unknownPlayer,
      exclusive: crossContextLock(`pombo:${this.appId}:outbox`),
    })
    this.inapp = new InappFeed({
      appId: this.appId,
      store,
      transport: this.#t,
      outbox: this.#outbox,
      playerId: () => this.playerId,
      language: o.language ?? detectLanguage(),
      now: this.#now,
      report,
      sessionStart,
      previousSession,
      pollIntervalMs: o.inappPollMs ?? 5 * 60_000,
      enabled: !o.background,
      unknownPlayer,
    })
  }

  /**
   * Registers the device and sends what earlier runs still owed. Rejects only for options that can never work
   * (no `baseUrl`, a malformed `appId`, no `getToken`...); a service that cannot be reached is retried later.
   */
  static async init(o: PomboOptions): Promise<Pombo> {
    checkOptions(o)
    const report = reporter(o.onError)
    const store = new Store(o.storage ?? new MemoryStorage(), `pombo:${o.appId.toLowerCase()}:`, (err, what) =>
      report({ kind: 'storage', message: `${what}: ${messageOf(err)}`, cause: err }),
    )
    const now = (o.now ?? Date.now)()
    let previous: number | null = null
    if (!o.background) {
      const last = await store.get<number>(LAST_SESSION_KEY)
      previous = typeof last === 'number' && Number.isFinite(last) ? last : null
      await store.set(LAST_SESSION_KEY, now)
    }
    const p = new Pombo(o, previous, now, store, report)
    if (!o.background && o.registers !== false && sharedWithServiceWorker(o.storage)) {
      // The service worker of this origin learns here where its pushes' receipts go (handoff.ts).
      try {
        await writeWorkerSettings(o.storage as StorageAdapter, {
          baseUrl: p.#t.baseUrl,
          appId: p.appId,
          appVersion: o.appVersion,
          deviceType: o.deviceType,
        })
      } catch (err) {
        report({ kind: 'storage', message: `configuração do service worker: ${messageOf(err)}`, cause: err })
      }
    }
    await p.#start()
    return p
  }

  async #start(): Promise<void> {
    this.#install = await installId(this.#store)
    await this.#loadRegistration()
    const sessions = await this.#store.get<number>(SESSIONS_KEY)
    this.#sessions = Number.isInteger(sessions) && (sessions as number) > 0 ? (sessions as number) : 0
    if (!this.#o.background) {
      this.#sessions++
      await this.#store.set(SESSIONS_KEY, this.#sessions)
    }
    await this.#ensureRegistered(false)
    try {
      await this.#outbox.flush('now')
    } catch (err) {
      this.#report({ kind: 'receipt', message: messageOf(err), cause: err })
    }
  }

  async #loadRegistration(): Promise<void> {
    const reg = await this.#store.get<Stored>(REGISTRATION_KEY)
    if (reg && typeof reg.playerId === 'string' && typeof reg.token === 'string') this.#reg = reg
  }

  /** The device's `player_id` on the service; null until a registration succeeded (ever, on this install). */
  get playerId(): string | null {
    return this.#reg?.playerId ?? null
  }

  /** The install id sent as `instalacao_id`. */
  get installId(): string {
    return this.#install
  }

  /** The push token of the current registration. */
  get token(): string | null {
    return this.#reg?.token ?? null
  }

  /**
   * Reads the token again (call it when the platform says the token changed) and registers when it, or anything
   * sent at registration, changed. Answers the player id.
   */
  async refreshToken(): Promise<string | null> {
    await this.#ensureRegistered(false)
    return this.playerId
  }

  /**
   * Handles a push: answers what to draw (null when the push is not the service's), and sends the delivery
   * receipt with the push's proof (queued when it cannot be sent now).
   */
  async handlePush(data: unknown): Promise<PushResult | null> {
    return this.#receipt(data, 'recebido', (p, receipt) => ({ ...p.display, receipt }))
  }

  /** Handles a tap on a notification: sends the click receipt. */
  async handleTap(data: unknown): Promise<TapResult | null> {
    return this.#receipt(data, 'clique', (p, receipt) => {
      const r: TapResult = { notificationId: p.notificationId, data: p.display.data, receipt }
      if (p.display.url !== undefined) r.url = p.display.url
      return r
    })
  }

  /** Sends everything queued now (only a Retry-After from the service delays it). Registers first if still owed. */
  async flush(): Promise<FlushReport> {
    try {
      if (this.#o.registers === false) await this.#loadRegistration()
      await this.#rejoin.idle()
      if (!this.#reg || this.#regFailures > 0) await this.#ensureRegistered(true)
      await this.inapp.idle() // events of displays, clicks and closes already reported are queued first
      return await this.#outbox.flush('now')
    } catch (err) {
      this.#report({ kind: 'receipt', message: messageOf(err), cause: err })
      return { sent: 0, duplicate: 0, dropped: 0, pending: -1, error: messageOf(err) }
    }
  }

  /** Receipts and in-app events still owed to the service. */
  async queued(): Promise<Job[]> {
    try {
      return await this.#outbox.pending()
    } catch {
      return []
    }
  }

  /** Stops timers (retries, in-app polling). Queued work stays in storage for the next `init`. */
  close(): void {
    this.#closed = true
    this.#outbox.close()
    this.inapp.close()
    if (this.#regTimer !== undefined) clearTimeout(this.#regTimer)
  }

  async #receipt<R>(data: unknown, evento: ReceiptEvent, answer: (p: ParsedPush, r: JobResult) => R): Promise<R | null> {
    let parsed: ParsedPush | null = null
    try {
      parsed = parsePush(data)
      if (!parsed) return null
      // The registering instance may have changed the device since (a new token): its word is in storage.
      if (this.#o.registers === false) await this.#loadRegistration()
      const now = this.#now()
      const job: ReceiptJob = {
        k: 'r',
        id: `${parsed.notificationId}:${evento}`,
        notificationId: parsed.notificationId,
        rcpt: parsed.rcpt,
        evento,
        player: this.playerId,
        at: now,
      }
      await this.#outbox.enqueue([job])
      await this.#outbox.flush('now')
      return answer(parsed, this.#outbox.resultOf(job.id))
    } catch (err) {
      this.#report({ kind: 'push', message: messageOf(err), cause: err })
      return parsed ? answer(parsed, 'queued') : null
    }
  }

  #dropped(job: Job, reason: string): void {
    const status = /^(\d{3}):/.exec(reason)?.[1]
    this.#report({ kind: job.k === 'r' ? 'receipt' : 'inapp', message: reason, job, status: status ? Number(status) : undefined })
  }

  /**
   * The service said it has no device `unknown` (deleted in the dashboard): registers the token again, which makes a
   * new device. A registration already under way decides first; a retry already scheduled on the registration's
   * own backoff is left to do it.
   */
  async #registerAgain(unknown: string): Promise<boolean> {
    await this.#registering
    if (this.playerId !== unknown) return true
    if (this.#regTimer !== undefined || this.#closed) return false
    await this.#ensureRegistered(true)
    return this.playerId !== unknown
  }

  #ensureRegistered(force: boolean): Promise<void> {
    if (this.#o.registers === false) return Promise.resolve()
    this.#registering ??= this.#registerOnce(force).finally(() => {
      this.#registering = null
    })
    return this.#registering
  }

  async #registerOnce(force: boolean): Promise<void> {
    try {
      let token: string | null | undefined
      try {
        token = await this.#o.getToken()
      } catch (err) {
        this.#report({ kind: 'token', message: `getToken: ${messageOf(err)}`, cause: err })
        return
      }
      if (typeof token !== 'string' || token === '') {
        this.#report({ kind: 'token', message: 'getToken não devolveu um token: o dispositivo não foi registrado' })
        return
      }
      const body = await registrationBody(this.#o, token, this.#install)
      const fp = fingerprint(body)
      const now = this.#now()
      const fresh = now - (this.#reg?.at ?? 0) < (this.#o.refreshRegistrationMs ?? 86_400_000)
      if (!force && this.#reg && this.#reg.token === token && this.#reg.fingerprint === fp && fresh) return
      if (this.#sessions > 0) body.sessoes = this.#sessions
      const out = await register(this.#t, body)
      if (out.kind === 'registered') {
        this.#regFailures = 0
        const old = this.#reg
        const previous = old && old.playerId !== out.playerId ? [old.playerId, ...(old.previous ?? [])] : (old?.previous ?? [])
        this.#reg = { token, playerId: out.playerId, fingerprint: fp, at: now, previous: previous.slice(0, PREVIOUS_MAX) }
        await this.#store.set(REGISTRATION_KEY, this.#reg)
        // A new device (token changed) or the first one: the in-app package is per device.
        if (old?.playerId !== out.playerId) await this.inapp.deviceChanged()
        return
      }
      this.#report({ kind: 'register', message: out.reason, status: out.status ?? undefined })
      if (out.kind === 'refused') return
      this.#regFailures++
      const wait = Math.max(backoffMs(this.#regFailures, this.#retry), out.retryAfterMs ?? 0)
      if ((this.#o.autoRetry ?? true) && !this.#closed) {
        if (this.#regTimer !== undefined) clearTimeout(this.#regTimer)
        this.#regTimer = setTimeout(() => {
          this.#regTimer = undefined
          void this.#ensureRegistered(true).then(() => (this.#regFailures === 0 ? this.#outbox.flush('now') : undefined))
        }, wait)
        ;(this.#regTimer as unknown as { unref?: () => void }).unref?.()
      }
    } catch (err) {
      this.#report({ kind: 'register', message: messageOf(err), cause: err })
    }
  }
}

function checkOptions(o: PomboOptions): void {
  if (!o || typeof o !== 'object') throw new TypeError('Pombo.init: opções ausentes')
  if (typeof o.baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(o.baseUrl))
    throw new TypeError('Pombo.init: baseUrl é obrigatório (o endereço do serviço, ex.: https://push.exemplo.com)')
  if (typeof o.appId !== 'string' || !UUID.test(o.appId)) throw new TypeError('Pombo.init: appId deve ser o UUID do app')
  if (typeof o.appVersion !== 'string' || o.appVersion === '') throw new TypeError('Pombo.init: appVersion é obrigatório')
  if (typeof o.getToken !== 'function') throw new TypeError('Pombo.init: getToken deve ser uma função')
  if (!DEVICE_TYPES.has(o.deviceType)) throw new TypeError('Pombo.init: deviceType deve ser 0, 1, 5, 7 ou 8')
}
