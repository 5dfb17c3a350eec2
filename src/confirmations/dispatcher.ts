// The webhook dispatcher (the spec, Events; docs/design/webhooks.md). Each destination drains the app's events after
// its cursor, one at a time, in seq order; many destinations are worked on at once.
//
// Turns, not transactions: a turn claims the app's queue with a lease (one statement: a lease id and an expiry on
// the database's clock, and the next events), makes its calls with no transaction or lock open, and records their
// outcome in one statement that writes only while the lease is still its own (src/confirmations/lease.ts). A slow
// destination holds no connection, no transaction and no lock. The lease is renewed while a call is in flight; a
// dispatcher that dies stops renewing and another takes the queue over once the lease has expired, from the last
// recorded cursor. A turn whose lease was lost (taken over after it expired) writes nothing: the turn that holds
// the queue now has the say, and no attempt is counted twice.
//
// Fair shares: one call in flight per app (the queue is serial, and the lease makes it one turn at a time across
// processes); a turn is bounded (PM_WEBHOOK_BATCH events, PM_WEBHOOK_BATCH_MAX_MS) and then the app goes to the back
// of the line (due destinations are taken oldest next_at first); destinations whose last turn had a call slower
// than PM_WEBHOOK_SLOW_MS (or timed out) share at most half of PM_WEBHOOK_CONCURRENCY, so endpoints that answer in
// time always find a free slot.
//
// Order: an app's events are numbered in commit order (src/confirmations/events.ts), so the cursor can pass every
// event it sees: nothing with a lower seq can commit later. Only `canal = 'webhook'` events are this queue's.
//
// At-least-once: the cursor moves only after a 2xx or an abandon, and is written at the end of the turn; a crash in
// the middle of a turn redelivers that turn's events in order (same X-PM-Evento-Id).
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Config } from '../core/config'
import type { Clock } from '../core/time'
import type { Vault } from '../core/vault'
import { createPool, type Db, query } from '../db/pool'
import { onFailure } from './ladder'
import { type AttemptRecord, type Claim, claim, DUE, HeldLease, record, release, type TurnOutcome } from './lease'
import { expiringStreamTotal, pruneEvents, pruneStreamPositions, pruneWebhookAttempts } from './retention'
import { WebhookSecrets } from './secrets'
import { WebhookSender } from './sender'

export interface DispatcherDeps {
  cfg: Config
  log: Logger
  vault: Vault
  clock: Clock
  /** Extra CA for the destinations' TLS (tests' local receiver). */
  ca?: string
  /** Told of every attempt's result (metrics: ok, http, timeout, refused, network). */
  onAttempt?: (result: string) => void
  /** Told after each retention pass: unread stream confirmations deleted by it, and those going within
   *  PM_STREAM_WARN_H (metrics: pombo_confirmations_expired_total, pombo_confirmations_expiring). */
  onStreamRetention?: (r: { expired: number; expiring: number }) => void
  /** Its pool's share of the process's connection budget (src/db/budget.ts). Turns use a connection only for their
   *  short statements (claim, renewals, record), so it bounds no number of calls. Default: PM_WEBHOOK_CONCURRENCY + 1. */
  poolMax?: number
}

export class WebhookDispatcher {
  readonly #db: Db
  readonly #sender: WebhookSender
  readonly #secrets: WebhookSecrets
  /** Destinations with a turn in this process; each turn makes one call at a time (the per-app cap). */
  readonly #running = new Map<string, Promise<void>>()
  /** Of those, the ones slow when their turn began (webhook_destinations.slow: the last turn had a call slower
   *  than PM_WEBHOOK_SLOW_MS, or one that timed out). */
  readonly #runningSlow = new Set<string>()
  readonly #stop = new AbortController()
  #loop: Promise<void> | null = null
  #wake: (() => void) | null = null
  /** A turn ended while the loop was looking for work, or slow destinations were passed over: look again at once. */
  #again = false
  #jobs: NodeJS.Timeout | null = null
  /** Calls in flight at once (PM_WEBHOOK_CONCURRENCY), and how many of them known-slow destinations may hold. */
  readonly #concurrency: number
  readonly #slowSlots: number

  constructor(private readonly d: DispatcherDeps) {
    const w = d.cfg.webhook
    this.#concurrency = w.concurrency
    this.#slowSlots = Math.max(1, Math.floor(w.concurrency / 2))
    // Its own pool: the dispatcher's statements never wait behind the API's queries, nor the reverse.
    this.#db = createPool(d.cfg, Math.max(2, d.poolMax ?? w.concurrency + 1))
    this.#secrets = new WebhookSecrets(d.vault, d.cfg.limits.appCacheMax)
    this.#sender = new WebhookSender({
      timeoutMs: w.timeoutMs,
      allowPrivate: d.cfg.webhookAllowPrivate,
      ca: d.ca,
      maxSockets: this.#concurrency,
    })
  }

  start(): void {
    this.#loop ??= this.#run()
  }

  /** The dispatcher's own Postgres pool (metrics: connections in use and waiting). */
  get pool(): Db {
    return this.#db
  }

  /** The attempts and events retention job: at start, then with the other retention jobs (safe on many processes). */
  startJobs(): void {
    const j = this.d.cfg.jobs
    const run = (): void => {
      this.pruneNow(j.webhookAttemptsRetentionDays, j.eventsRetentionDays, j.streamKeepDays)
        .then((r) => {
          if (r.attempts > 0 || r.events > 0) this.d.log.info(r, 'old webhook attempts and delivered events deleted')
        })
        .catch((err) => this.d.log.warn({ err: String(err) }, 'webhook attempts retention failed'))
    }
    run()
    this.#jobs = setInterval(run, j.retentionEveryMs)
    this.#jobs.unref()
  }

  /** One pass of the retention job (tests call it with their own horizons; `streamDays`: PM_STREAM_KEEP_DAYS). */
  async pruneNow(attemptDays: number, eventDays: number, streamDays = eventDays): Promise<{ attempts: number; events: number }> {
    const now = this.d.clock()
    const attempts = await pruneWebhookAttempts(this.#db, attemptDays, now)
    const events = await pruneEvents(this.#db, eventDays, now, 10_000, streamDays)
    await pruneStreamPositions(this.#db, streamDays, now)
    if (events.unread > 0)
      this.d.log.warn(
        { confirmations: events.unread },
        'stream confirmations deleted unread (no reader within PM_STREAM_KEEP_DAYS)',
      )
    const expiring = await expiringStreamTotal(this.#db, streamDays, this.d.cfg.jobs.streamWarnH * 3_600_000, now)
    this.d.onStreamRetention?.({ expired: events.unread, expiring })
    return { attempts, events: events.events }
  }

  /** Stops looking for work, lets attempts in flight end (each within the timeout) and writes their outcome. */
  async stop(): Promise<void> {
    if (this.#jobs) clearInterval(this.#jobs)
    this.#stop.abort()
    this.#wake?.()
    await this.#loop
    await Promise.all(this.#running.values())
    this.#sender.close()
    await this.#db.end()
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      this.#again = false
      try {
        await this.#tick()
      } catch (err) {
        this.d.log.warn({ err: String(err) }, 'webhook dispatcher: looking for due destinations failed')
      }
      if (this.#again) continue
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          this.#wake = null
          resolve()
        }
        const timer = setTimeout(done, this.d.cfg.webhook.pollMs)
        this.#wake = done
      })
    }
  }

  /** A slot was freed by a turn that worked: the next due destination need not wait for the poll. */
  #kick(): void {
    this.#again = true
    this.#wake?.()
  }

  /** Starts a turn for due destinations nobody holds, oldest next_at first, up to the free slots. */
  async #tick(): Promise<void> {
    const free = this.#concurrency - this.#running.size
    if (free <= 0 || this.#stop.signal.aborted) return
    // Once the slow destinations' share is taken, the look-up leaves them out: however many of them are due, the
    // destinations that answer in time are found.
    const slowFree = this.#runningSlow.size < this.#slowSlots
    const due = await query<{ id: string; app_id: string; slow: boolean }>(this.#db, DUE, [
      new Date(this.d.clock()),
      free,
      slowFree,
    ])
    for (const { id, app_id: appId, slow } of due.rows) {
      if (this.#running.size >= this.#concurrency || this.#stop.signal.aborted) break
      if (this.#running.has(id)) continue
      if (slow && this.#runningSlow.size >= this.#slowSlots) {
        this.#again = true // their share filled up in this pass: look again for the others
        continue
      }
      if (slow) this.#runningSlow.add(id)
      let worked = false
      const task = this.#turn(appId, id)
        .then((w) => {
          worked = w
        })
        .catch((err) => this.d.log.warn({ err: String(err), destino: id }, 'webhook dispatcher: turn failed; it will be retried'))
        .finally(() => {
          this.#running.delete(id)
          this.#runningSlow.delete(id)
          if (worked) this.#kick()
        })
      this.#running.set(id, task)
    }
  }

  /** One turn: lease, calls, record. Answers whether it claimed the queue. */
  async #turn(appId: string, id: string): Promise<boolean> {
    const w = this.d.cfg.webhook
    const sentAt = performance.now()
    const got = await claim(this.#db, appId, id, new Date(this.d.clock()), randomUUID(), w.leaseMs, w.batch)
    if (!got) return false
    const lease = new HeldLease(this.#db, got, w.leaseMs, sentAt)
    let out: { outcome: TurnOutcome; calls: number }
    try {
      out = await this.#calls(got, lease)
    } finally {
      lease.end()
    }
    const { outcome, calls } = out
    if (!lease.held || (calls > 0 && !(await record(this.#db, outcome)))) {
      this.d.log.warn(
        { evento: 'webhook_lease_perdido', destino: id, app_id: got.dest.app_id, tentativas: calls },
        'webhook turn lost its lease; the dispatcher holding the queue now records instead',
      )
      return true
    }
    if (calls === 0) {
      await release(this.#db, appId, id, got.leaseId)
      return true
    }
    const ab = outcome.abandoned
    if (ab)
      this.d.log.error(
        { evento: 'webhook_abandonado', destino: id, app_id: got.dest.app_id, seq: ab.ev.seq, tentativas: ab.attempts },
        'webhook event abandoned',
      )
    if (outcome.disable)
      this.d.log.error(
        { evento: 'webhook_desativado', destino: id, app_id: got.dest.app_id, falhas: outcome.consecutive },
        'webhook destination disabled',
      )
    return true
  }

  /** The turn's calls, in seq order, with no transaction open: until a failure, the turn's bound, or a lost lease. */
  async #calls(c: Claim, lease: HeldLease): Promise<{ outcome: TurnOutcome; calls: number }> {
    const w = this.d.cfg.webhook
    const { dest } = c
    const now = new Date(this.d.clock())
    const secret = this.#secrets.get(dest)
    const started = performance.now()
    const o: TurnOutcome = {
      appId: dest.app_id,
      destinationId: dest.id,
      leaseId: c.leaseId,
      cursor: dest.last_seq,
      headAttempts: dest.head_attempts,
      consecutive: dest.consecutive_failures,
      nextAt: now,
      disable: false,
      slow: false,
      at: now,
      attempts: [] as AttemptRecord[],
      abandoned: null,
    }
    let calls = 0
    for (const ev of c.events) {
      const t0 = performance.now()
      if (this.#stop.signal.aborted || !lease.held || t0 - started > w.batchMaxMs) break
      if (ev.body.canal === undefined) ev.body.canal = 'webhook' // spec: inside the signed bytes
      const body = Buffer.from(JSON.stringify(ev.body))
      const r = await this.#sender.send({ url: dest.url, secret, event: ev.evento, eventId: ev.seq, body }, lease)
      if (!lease.held) break // cancelled or lost during the call: this result is not ours to record
      calls++
      if (performance.now() - t0 >= w.slowMs || (!r.ok && r.result === 'timeout')) o.slow = true
      this.d.onAttempt?.(r.ok ? 'ok' : r.result)
      if (r.ok) {
        if (o.headAttempts > 0)
          o.attempts.push({ seq: ev.seq, n: o.headAttempts + 1, r, at: new Date(this.d.clock()), nextAt: null })
        o.cursor = ev.seq
        o.headAttempts = 0
        o.consecutive = 0
        continue
      }
      const at = new Date(this.d.clock())
      o.at = at
      const n = o.headAttempts + 1
      o.consecutive++
      const decision = onFailure(w, { attempts: n, consecutive: o.consecutive })
      o.nextAt = new Date(at.getTime() + decision.delayMs)
      o.disable = decision.disable
      o.attempts.push({ seq: ev.seq, n, r, at, nextAt: decision.abandon ? null : o.nextAt })
      this.d.log.warn(
        {
          evento: 'webhook_falhou',
          destino: dest.id,
          app_id: dest.app_id,
          seq: ev.seq,
          tentativa: n,
          resultado: r.result,
          status: r.status,
          motivo: r.reason,
        },
        'webhook attempt failed',
      )
      if (decision.abandon) {
        o.abandoned = { ev, attempts: n, reason: r.reason }
        o.cursor = ev.seq
        o.headAttempts = 0
      } else {
        o.headAttempts = n
      }
      break
    }
    // A turn that ends without a failure ended its last call just now (a failure set `at` and ended the turn).
    if (calls > 0 && o.consecutive === 0) o.at = new Date(this.d.clock())
    return { outcome: o, calls }
  }
}
