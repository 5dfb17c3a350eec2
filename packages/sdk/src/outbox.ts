// The durable queue of what the device owes the service: delivery/click receipts (`POST /api/v1/receipts`, one per
// request) and in-app events (`POST /api/v1/inapp/eventos`, up to 50 per request). Every job is written to storage
// BEFORE it is sent, so a process killed mid-request (a service worker is stopped at will) sends it at the next
// `flush()` or `init`; a job leaves storage only when the service answered for it: counted, already counted
// (`duplicado`), or refused for good (a 4xx other than 408/429: kept, it would be refused forever).
//
// Failures the service did not refuse (offline, timeout, 5xx, 429) belong to the path to the service, not to one
// job: they stop the round, and the whole queue waits a backoff that grows with consecutive failed rounds (see
// backoff.ts) and never less than the service's Retry-After. The automatic retry follows the backoff; an explicit
// `flush()` (or a push arriving: proof the network works) tries at once, but never before a Retry-After expires.
// The queue is bounded: past `max` jobs the oldest are dropped, and jobs past the service's acceptance window are
// dropped too, each reported.
import { backoffMs, type RetryPolicy } from './backoff.js'
import type { Store } from './storage.js'
import { call, serviceNow, type Transport } from './transport.js'

export type ReceiptEvent = 'recebido' | 'clique'
export type InappEventName = 'impressao' | 'clique' | 'fechou'

export interface ReceiptJob {
  k: 'r'
  /** `<notification_id>:<evento>`: one job per receipt. */
  id: string
  notificationId: string
  rcpt: string
  evento: ReceiptEvent
  /** The device the push was sent to; null when it was not known yet (resolved when sending). */
  player: string | null
  at: number
}

export interface InappEventJob {
  k: 'e'
  /** `<campanha_id>:<evento>:<ocorrencia_n>`. */
  id: string
  player: string
  campanhaId: string
  prova: string
  evento: InappEventName
  n: number
  /** RFC 3339 instant of the event. */
  em: string
  at: number
}

export type Job = ReceiptJob | InappEventJob

/** What became of a job: counted now, counted before (`duplicado`), still owed, or refused for good. */
export type JobResult = 'sent' | 'duplicate' | 'queued' | 'dropped'

interface State {
  v: 1
  items: Job[]
  /** Consecutive rounds that ended on a failure the service did not refuse. */
  failures: number
  /** The automatic retry waits until then (backoff). */
  next: number
  /** Nothing is sent before then (the service's Retry-After). */
  notBefore: number
}

export interface OutboxOptions {
  appId: string
  store: Store
  transport: Transport
  retry: RetryPolicy
  max: number
  /** Receipts older than this are dropped (the service's acceptance window: 90 days). */
  maxAgeMs: number
  /** In-app events dated before this long ago are dropped (the service takes them up to 7 days back). */
  eventMaxAgeMs: number
  /** Wait before an automatic round sends jobs queued without a failure (lets in-app events form batches). */
  batchDelayMs: number
  /** Schedule automatic rounds (off: only `flush`, `init` and pushes send). */
  autoRetry: boolean
  playerId: () => string | null
  /** Devices this install was before its current token (newest first): a push sent to one of them before the
   *  token changed carries a proof for that device. */
  previousPlayers: () => string[]
  drop: (job: Job, reason: string) => void
  /** The service answered (and counted) a job for a player_id it has no device for: the device was deleted there. */
  unknownPlayer: (player: string) => void
  /** Runs a read-modify-write of the stored queue under a lock other contexts sharing the storage also take. */
  exclusive?: <T>(fn: () => Promise<T>) => Promise<T>
  random?: () => number
}

export interface RoundReport {
  sent: number
  duplicate: number
  dropped: number
  pending: number
  /** Set when the round stopped on a failure: why. */
  error?: string
}

const KEY = 'outbox'
const EVENTS_PER_BATCH = 50
const PARALLEL = 4

const empty = (): State => ({ v: 1, items: [], failures: 0, next: 0, notBefore: 0 })

function sane(s: State | undefined): State {
  if (s?.v !== 1 || !Array.isArray(s.items)) return empty()
  return {
    v: 1,
    items: s.items.filter((j) => j && (j.k === 'r' || j.k === 'e') && typeof j.id === 'string'),
    failures: Number.isFinite(s.failures) ? s.failures : 0,
    next: Number.isFinite(s.next) ? s.next : 0,
    notBefore: Number.isFinite(s.notBefore) ? s.notBefore : 0,
  }
}

/** One request's worth of jobs. */
type Unit = { kind: 'r'; job: ReceiptJob; player: string } | { kind: 'e'; player: string; jobs: InappEventJob[] }

type UnitOutcome =
  | { kind: 'done'; results: Array<[Job, JobResult, string?]> }
  | { kind: 'retry'; retryAfterMs: number | undefined; reason: string }

export class Outbox {
  #lock: Promise<unknown> = Promise.resolve()
  #round: Promise<RoundReport> | null = null
  #timer: ReturnType<typeof setTimeout> | undefined
  #timerAt = 0
  #closed = false
  /** Results of jobs settled by rounds, read once by whoever queued them. */
  readonly #settled = new Map<string, JobResult>()

  constructor(private readonly o: OutboxOptions) {}

  /** Serialises read-modify-write of the stored state within this instance, and across contexts where it can. */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    const ex = this.o.exclusive
    const p = this.#lock.then(ex ? () => ex(fn) : fn)
    this.#lock = p.catch(() => {})
    return p
  }

  #load(): Promise<State> {
    return this.o.store.get<State>(KEY).then(sane)
  }

  #save(s: State): Promise<void> {
    return s.items.length === 0 && s.failures === 0 && s.notBefore === 0 ? this.o.store.remove(KEY) : this.o.store.set(KEY, s)
  }

  /** Adds jobs (a job already queued is not queued twice), trimming the oldest past the bound. */
  enqueue(jobs: Job[]): Promise<void> {
    return this.#locked(async () => {
      const s = await this.#load()
      const ids = new Set(s.items.map((j) => j.id))
      for (const j of jobs) {
        if (ids.has(j.id)) continue
        ids.add(j.id)
        s.items.push(j)
        this.#settled.delete(j.id)
      }
      const over = s.items.length - this.o.max
      if (over > 0)
        for (const j of s.items.splice(0, over)) this.o.drop(j, `fila cheia (${this.o.max} itens): o mais antigo foi descartado`)
      await this.#save(s)
      this.#schedule(s)
    })
  }

  /** Jobs still owed (tests, diagnostics). */
  async pending(): Promise<Job[]> {
    return (await this.#load()).items
  }

  /** What became of a job queued earlier: its result once a round settled it, else 'queued'. */
  resultOf(id: string): JobResult {
    return this.#settled.get(id) ?? 'queued'
  }

  /**
   * Sends what is owed now. `mode` 'auto' (the timer) respects the backoff; 'now' (flush, init, a push) only the
   * service's Retry-After. A round asked for while one runs runs again right after it.
   */
  flush(mode: 'auto' | 'now' = 'now'): Promise<RoundReport> {
    if (this.#round) {
      return this.#round.then(() => this.flush(mode))
    }
    const r = this.#run(mode).finally(() => {
      this.#round = null
    })
    this.#round = r
    return r
  }

  close(): void {
    this.#closed = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #schedule(s: State): void {
    if (!this.o.autoRetry || this.#closed || s.items.length === 0) return
    const now = this.o.transport.now()
    const at = Math.max(s.failures > 0 ? s.next : now + this.o.batchDelayMs, s.notBefore)
    if (this.#timer !== undefined && this.#timerAt <= at) return
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined
        void this.flush('auto').catch(() => {})
      },
      Math.max(0, at - now),
    )
    // In Node, a pending retry must not keep the host process alive.
    ;(this.#timer as unknown as { unref?: () => void }).unref?.()
  }

  async #run(mode: 'auto' | 'now'): Promise<RoundReport> {
    const now = this.o.transport.now()
    const s = await this.#load()
    const report: RoundReport = { sent: 0, duplicate: 0, dropped: 0, pending: s.items.length }
    if (s.items.length === 0) return report
    if (now < s.notBefore || (mode === 'auto' && s.failures > 0 && now < s.next)) {
      this.#schedule(s)
      return report
    }
    const settled = new Map<string, [JobResult, string?]>()
    const serviceNowMs = serviceNow(this.o.transport)
    for (const j of s.items) {
      const old = j.k === 'r' ? j.at < now - this.o.maxAgeMs : Date.parse(j.em) < serviceNowMs - this.o.eventMaxAgeMs
      if (old) settled.set(j.id, ['dropped', 'fora da janela de aceitação do serviço'])
    }
    const units = this.#units(s.items.filter((j) => !settled.has(j.id)))
    let failure: { retryAfterMs: number | undefined; reason: string } | null = null
    let anyAnswer = false
    for (let i = 0; i < units.length && !failure; i += PARALLEL) {
      const outs = await Promise.all(units.slice(i, i + PARALLEL).map((u) => this.#send(u)))
      for (const out of outs) {
        if (out.kind === 'retry') {
          failure ??= out
          continue
        }
        anyAnswer = true
        for (const [j, r, why] of out.results) settled.set(j.id, [r, why])
      }
    }
    // Merge into the stored state as it is now: jobs queued during the round stay.
    return this.#locked(async () => {
      const cur = await this.#load()
      const keep: Job[] = []
      for (const j of cur.items) {
        const r = settled.get(j.id)
        if (!r) {
          keep.push(j)
          continue
        }
        this.#settled.set(j.id, r[0])
        if (r[0] === 'sent') report.sent++
        else if (r[0] === 'duplicate') report.duplicate++
        else {
          report.dropped++
          this.o.drop(j, r[1] ?? 'recusado pelo serviço')
        }
      }
      if (this.#settled.size > 10_000) this.#settled.clear()
      cur.items = keep
      if (failure) {
        cur.failures = anyAnswer ? 1 : cur.failures + 1
        cur.next = now + backoffMs(cur.failures, this.o.retry, this.o.random)
        if (failure.retryAfterMs !== undefined) cur.notBefore = now + failure.retryAfterMs
        report.error = failure.reason
      } else {
        cur.failures = 0
        cur.next = 0
        cur.notBefore = 0
      }
      await this.#save(cur)
      report.pending = keep.length
      this.#schedule(cur)
      return report
    })
  }

  #units(jobs: Job[]): Unit[] {
    const units: Unit[] = []
    const byPlayer = new Map<string, InappEventJob[]>()
    const current = this.o.playerId()
    for (const j of jobs) {
      if (j.k === 'r') {
        const player = j.player ?? current
        if (player) units.push({ kind: 'r', job: j, player }) // no device yet: stays queued until registration
      } else {
        const list = byPlayer.get(j.player) ?? []
        list.push(j)
        byPlayer.set(j.player, list)
      }
    }
    for (const [player, list] of byPlayer)
      for (let i = 0; i < list.length; i += EVENTS_PER_BATCH)
        units.push({ kind: 'e', player, jobs: list.slice(i, i + EVENTS_PER_BATCH) })
    return units
  }

  async #send(u: Unit): Promise<UnitOutcome> {
    if (u.kind === 'r') {
      const j = u.job
      // The proof binds the send to the device it was sent to; when the token changed since, that may be one of
      // the install's previous devices, tried in turn on a refused proof.
      const candidates = [u.player, ...this.o.previousPlayers().filter((p) => p !== u.player)]
      let refused: string | null = null
      for (const player of candidates) {
        const out = await call(this.o.transport, '/api/v1/receipts', {
          method: 'POST',
          body: { app_id: this.o.appId, notification_id: j.notificationId, player_id: player, rcpt: j.rcpt, evento: j.evento },
        })
        if (out.kind === 'retry') return out
        if (out.kind === 'refused') {
          refused ??= out.reason
          if (out.status === 403) continue
          return { kind: 'done', results: [[j, 'dropped', out.reason]] }
        }
        // The proof names the device the push went to, so the receipt counts for it even when the service has
        // deleted that device since; the device itself then registers again (rejoin.ts).
        if (out.unknownDevice) this.o.unknownPlayer(player)
        const dup = (out.body as { duplicado?: unknown } | undefined)?.duplicado === true
        return { kind: 'done', results: [[j, dup ? 'duplicate' : 'sent']] }
      }
      return { kind: 'done', results: [[j, 'dropped', refused ?? 'recusado pelo serviço']] }
    }
    // A malformed item fails the whole request and the answer names it (`explain.campo` = `eventos[i]...`): that
    // item is dropped and the rest sent again, so one bad event never sinks its batch.
    const results: Array<[Job, JobResult, string?]> = []
    let jobs = u.jobs
    while (jobs.length > 0) {
      const out = await call(this.o.transport, '/api/v1/inapp/eventos', {
        method: 'POST',
        body: {
          app_id: this.o.appId,
          player_id: u.player,
          eventos: jobs.map((j) => ({
            campanha_id: j.campanhaId,
            prova: j.prova,
            evento: j.evento,
            ocorrencia_n: j.n,
            em: j.em,
          })),
        },
      })
      if (out.kind === 'retry') return results.length > 0 ? { kind: 'done', results } : out
      if (out.kind === 'refused') {
        const campo = (out.body as { explain?: { campo?: unknown } } | undefined)?.explain?.campo
        const i = typeof campo === 'string' ? Number(/^eventos\[(\d+)\]/.exec(campo)?.[1] ?? Number.NaN) : Number.NaN
        const bad = Number.isInteger(i) ? jobs[i] : undefined
        if (bad && (out.status === 400 || out.status === 422)) {
          results.push([bad, 'dropped', out.reason])
          jobs = jobs.filter((_, k) => k !== i)
          continue
        }
        for (const j of jobs) results.push([j, 'dropped', out.reason])
        break
      }
      if (out.unknownDevice) this.o.unknownPlayer(u.player)
      const verdicts = (out.body as { resultados?: unknown } | undefined)?.resultados
      jobs.forEach((j, k) => {
        const v = Array.isArray(verdicts) ? verdicts[k] : undefined
        if (v === 'aceito') results.push([j, 'sent'])
        else if (v === 'duplicado') results.push([j, 'duplicate'])
        else results.push([j, 'dropped', `evento in-app recusado: ${typeof v === 'string' ? v : 'sem veredito'}`])
      })
      break
    }
    return { kind: 'done', results }
  }
}
