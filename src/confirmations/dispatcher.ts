// The webhook dispatcher (the spec, Events; docs/design/webhooks.md). Each destination drains the app's events after
// its cursor, one at a time, in seq order; many destinations are worked on at once.
//
// Exclusion between dispatcher processes: a transaction-level advisory lock per app queue, taken with
// pg_try_advisory_xact_lock (a busy destination is skipped, never waited for) by the transaction that carries one
// batch: its attempts, then its cursor write, then COMMIT, which releases the lock. Unlike a Redis lease it cannot
// lapse while an attempt is still in flight (a 10-second timeout, a paused process): it ends only with the
// transaction, or with the connection, and a SIGKILLed process's connection dies with it. It never outlives its
// transaction, so it holds behind PgBouncer in transaction mode, where a session lock would stay on whichever
// server connection took it. Until the batch writes, the transaction has no transaction id, and at READ COMMITTED
// it holds no snapshot between statements: waiting on a destination holds back no vacuum.
//
// Order: an app's events are numbered in commit order (src/confirmations/events.ts), so the cursor can pass every
// event it sees: nothing with a lower seq can commit later. Only `canal = 'webhook'` events are this queue's.
//
// At-least-once: the cursor moves only after a 2xx or an abandon, and is written after the batch; a crash in the
// middle of a batch redelivers that batch's events in order (same X-PM-Evento-Id).
import { LRUCache } from 'lru-cache'
import type { Logger } from 'pino'
import type { Config } from '../core/config'
import { createPool, type Db, query, type Tx, tagPgError } from '../db/pool'
import type { Clock } from '../core/time'
import type { Vault } from '../core/vault'
import { onFailure } from './ladder'
import { pruneEvents, pruneStreamPositions, pruneWebhookAttempts } from './retention'
import { type AttemptResult, WebhookSender } from './sender'
import { QUEUE_LOCK_CLASS, QUEUE_LOCK_KEY, secretAad } from './store'

export interface DispatcherDeps {
  cfg: Config
  log: Logger
  vault: Vault
  clock: Clock
  /** Extra CA for the destinations' TLS (tests' local receiver). */
  ca?: string
  /** Told of every attempt's result (metrics: ok, http, timeout, refused, network). */
  onAttempt?: (result: string) => void
  /** Its pool's share of the process's connection budget (src/db/budget.ts): one per destination at work, plus
   *  one for the look-up. Default: what PM_WEBHOOK_CONCURRENCY needs. */
  poolMax?: number
}

interface DestinationRow {
  id: string
  app_id: string
  url: string
  sealed_secret: Buffer
  last_seq: string
  head_attempts: number
  consecutive_failures: number
}

interface EventRow {
  seq: string
  app_id: string
  evento: string
  body: Record<string, unknown>
}

interface AttemptRecord {
  seq: string
  n: number
  r: AttemptResult
  at: Date
  nextAt: Date | null
}

export class WebhookDispatcher {
  readonly #db: Db
  readonly #sender: WebhookSender
  readonly #running = new Map<string, Promise<void>>()
  /** Opened signing secrets by destination: a destination's secret never changes (a new one is a new destination). */
  readonly #secrets: LRUCache<string, string>
  readonly #stop = new AbortController()
  #loop: Promise<void> | null = null
  #wake: (() => void) | null = null
  #jobs: NodeJS.Timeout | null = null
  /** Destinations worked on at once: PM_WEBHOOK_CONCURRENCY, or fewer when the pool's share is smaller. */
  readonly #concurrency: number

  constructor(private readonly d: DispatcherDeps) {
    const w = d.cfg.webhook
    const poolMax = Math.max(2, d.poolMax ?? w.concurrency + 1)
    this.#concurrency = Math.min(w.concurrency, poolMax - 1)
    if (this.#concurrency < w.concurrency) {
      d.log.info(
        { PM_WEBHOOK_CONCURRENCY: w.concurrency, destinos_simultaneos: this.#concurrency, conexoes: poolMax },
        'webhook dispatcher: fewer destinations at once than PM_WEBHOOK_CONCURRENCY (its share of PM_PG_POOL)',
      )
    }
    // Its own pool: connections held by destinations at work never starve the API's queries.
    this.#db = createPool(d.cfg, poolMax)
    this.#secrets = new LRUCache({ max: d.cfg.limits.appCacheMax })
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
    const run = (): void => {
      this.pruneNow(this.d.cfg.jobs.webhookAttemptsRetentionDays, this.d.cfg.jobs.eventsRetentionDays)
        .then((r) => {
          if (r.attempts > 0 || r.events > 0) this.d.log.info(r, 'old webhook attempts and delivered events deleted')
        })
        .catch((err) => this.d.log.warn({ err: String(err) }, 'webhook attempts retention failed'))
    }
    run()
    this.#jobs = setInterval(run, this.d.cfg.jobs.retentionEveryMs)
    this.#jobs.unref()
  }

  /** One pass of the retention job (tests call it with their own horizons). */
  async pruneNow(attemptDays: number, eventDays: number): Promise<{ attempts: number; events: number }> {
    const attempts = await pruneWebhookAttempts(this.#db, attemptDays, this.d.clock())
    const events = await pruneEvents(this.#db, eventDays, this.d.clock())
    await pruneStreamPositions(this.#db, eventDays, this.d.clock())
    return { attempts, events }
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
      try {
        await this.#tick()
      } catch (err) {
        this.d.log.warn({ err: String(err) }, 'webhook dispatcher: looking for due destinations failed')
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.d.cfg.webhook.pollMs)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  /** Starts a task for each due destination with events after its cursor, up to the concurrency. */
  async #tick(): Promise<void> {
    const free = this.#concurrency - this.#running.size
    if (free <= 0) return
    const due = await query<{ id: string; app_id: string }>(
      this.#db,
      `SELECT d.id, d.app_id FROM webhook_destinations d
        WHERE d.active AND d.disabled_at IS NULL AND d.next_at <= $1
          AND EXISTS (SELECT 1 FROM events e WHERE e.app_id = d.app_id AND e.seq > d.last_seq AND e.canal = 'webhook')
        ORDER BY d.next_at LIMIT $2`,
      [new Date(this.d.clock()), free + this.#running.size],
    )
    for (const { id, app_id } of due.rows) {
      if (this.#running.size >= this.#concurrency) break
      if (this.#running.has(id) || this.#stop.signal.aborted) continue
      const task = this.#work(id, app_id).catch((err) =>
        this.d.log.warn({ err: String(err), destino: id }, 'webhook dispatcher: batch failed; it will be retried'),
      )
      this.#running.set(
        id,
        task.finally(() => this.#running.delete(id)),
      )
    }
  }

  async #work(id: string, appId: string): Promise<void> {
    while (!this.#stop.signal.aborted && (await this.#holdAndDeliver(id, appId))) {}
  }

  /** One batch under the destination's lock; answers whether it should go on at once (more events may wait). */
  async #holdAndDeliver(id: string, appId: string): Promise<boolean> {
    let c: Tx
    try {
      c = await this.#db.connect()
    } catch (err) {
      return tagPgError(err)
    }
    let healthy = true
    try {
      await c.query('BEGIN')
      // Per app, not per destination: a URL change hands the queue over without a second sender beside the first.
      const got = await c.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock($1, ${QUEUE_LOCK_KEY}) AS ok`, [
        QUEUE_LOCK_CLASS,
        appId,
      ])
      if (!got.rows[0]?.ok) {
        await c.query('ROLLBACK') // another dispatcher has it
        return false
      }
      const more = await this.#batch(c, id)
      await c.query('COMMIT')
      return more
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {
        healthy = false
      })
      return tagPgError(err)
    } finally {
      // A connection whose transaction may still be open (and hold the lock) is destroyed, which ends both.
      c.release(healthy ? undefined : true)
    }
  }

  async #batch(c: Tx, id: string): Promise<boolean> {
    const w = this.d.cfg.webhook
    const now = new Date(this.d.clock())
    // Read again under the lock: another dispatcher may have moved the cursor since the look-up.
    const dr = await c.query<DestinationRow>(
      `SELECT id, app_id, url, sealed_secret, last_seq, head_attempts, consecutive_failures FROM webhook_destinations
        WHERE id = $1 AND active AND disabled_at IS NULL AND next_at <= $2`,
      [id, now],
    )
    const dest = dr.rows[0]
    if (!dest) return false
    const er = await c.query<EventRow>(
      `SELECT seq, app_id, evento, body FROM events
        WHERE app_id = $1 AND seq > $2 AND canal = 'webhook'
        ORDER BY seq LIMIT $3`,
      [dest.app_id, dest.last_seq, w.batch],
    )
    if (er.rows.length === 0) return false
    const secret = this.#secret(dest)
    const started = Date.now()
    let cursor = dest.last_seq
    let headAttempts = dest.head_attempts
    let consecutive = dest.consecutive_failures
    let nextAt = now
    let disable = false
    let failed = false
    const attempts: AttemptRecord[] = []
    const abandoned: Array<{ ev: EventRow; attempts: number; reason: string }> = []
    for (const ev of er.rows) {
      if (this.#stop.signal.aborted || Date.now() - started > this.d.cfg.webhook.batchMaxMs) break
      if (ev.body.canal === undefined) ev.body.canal = 'webhook' // spec: inside the signed bytes
      const body = Buffer.from(JSON.stringify(ev.body))
      const r = await this.#sender.send({ url: dest.url, secret, event: ev.evento, eventId: ev.seq, body })
      this.d.onAttempt?.(r.ok ? 'ok' : r.result)
      const at = new Date(this.d.clock())
      const n = headAttempts + 1
      if (r.ok) {
        if (headAttempts > 0) attempts.push({ seq: ev.seq, n, r, at, nextAt: null })
        cursor = ev.seq
        headAttempts = 0
        consecutive = 0
        continue
      }
      consecutive++
      const decision = onFailure(w, { attempts: n, consecutive })
      nextAt = new Date(at.getTime() + decision.delayMs)
      disable = decision.disable
      attempts.push({ seq: ev.seq, n, r, at, nextAt: decision.abandon ? null : nextAt })
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
        abandoned.push({ ev, attempts: n, reason: r.reason })
        cursor = ev.seq
        headAttempts = 0
      } else {
        headAttempts = n
      }
      failed = true
      break
    }
    // In the lock's transaction (committed by the caller): the cursor and the lock end together.
    if (attempts.length > 0) {
      await c.query(
        `INSERT INTO webhook_attempts (destination_id, event_seq, n, attempt_id, result, http_status, reason, at, next_at)
         SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::uuid[], $5::text[], $6::int[], $7::text[], $8::timestamptz[], $9::timestamptz[])`,
        [
          dest.id,
          attempts.map((a) => a.seq),
          attempts.map((a) => a.n),
          attempts.map((a) => a.r.attemptId),
          attempts.map((a) => (a.r.ok ? 'ok' : a.r.result)),
          attempts.map((a) => (a.r.ok ? a.r.status : (a.r.status ?? null))),
          attempts.map((a) => (a.r.ok ? null : a.r.reason)),
          attempts.map((a) => a.at),
          attempts.map((a) => a.nextAt),
        ],
      )
    }
    for (const a of abandoned) {
      await c.query(
        `INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, last_reason, abandoned_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
        [dest.id, a.ev.seq, a.ev.app_id, a.ev.evento, a.ev.body, a.attempts, a.reason, new Date(this.d.clock())],
      )
      this.d.log.error(
        { evento: 'webhook_abandonado', destino: dest.id, app_id: dest.app_id, seq: a.ev.seq, tentativas: a.attempts },
        'webhook event abandoned',
      )
    }
    await c.query(
      `UPDATE webhook_destinations SET last_seq = $2, head_attempts = $3, consecutive_failures = $4, next_at = $5,
              disabled_at = CASE WHEN $6 THEN $7 ELSE disabled_at END
        WHERE id = $1`,
      [dest.id, cursor, headAttempts, consecutive, nextAt, disable, new Date(this.d.clock())],
    )
    if (disable)
      this.d.log.error(
        { evento: 'webhook_desativado', destino: dest.id, app_id: dest.app_id, falhas: consecutive },
        'webhook destination disabled',
      )
    return !failed && !this.#stop.signal.aborted
  }

  #secret(dest: DestinationRow): string {
    let s = this.#secrets.get(dest.id)
    if (!s) {
      s = this.d.vault.open(dest.sealed_secret, secretAad(dest.app_id, dest.id)).toString()
      this.#secrets.set(dest.id, s)
    }
    return s
  }
}
