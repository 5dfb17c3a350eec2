// One open `Assinar` call of the confirmation stream (src/confirmations/stream.ts): a loop over Postgres pages after
// its cursor, written under gRPC's back-pressure, that waits for a wake-up or POLL_MS when caught up, and ends at
// once (no further write) when its host ends it or the client goes away.
import { randomUUID } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import type { Logger } from 'pino'
import type { KeyRecord } from '../apps/store'
import { ApiError } from '../core/errors'
import type { Clock } from '../core/time'
import type { Tracked } from './presence'
import type { SubscribeRequest, StreamEvent } from './proto'

export type Call = grpc.ServerWritableStream<SubscribeRequest, StreamEvent>

/** A refusal with its gRPC status (contract: UNAUTHENTICATED / PERMISSION_DENIED / FAILED_PRECONDITION). */
export class Refusal {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
  ) {}
}

export interface EventRow {
  seq: string
  evento: string
  body: Record<string, unknown>
}

/** What a session needs from the server that runs it. */
export interface SessionHost {
  readonly log: Logger
  readonly clock: Clock
  readonly stats: { waitingDrain: number; maxQueued: number }
  /** Events per page, and how often a caught-up stream reads again (PM_GRPC_PAGE, PM_GRPC_POLL_MS). */
  readonly pageSize: number
  readonly pollMs: number
  page(appId: string, cursor: string): Promise<EventRow[]>
  forget(s: Session): void
}

/** One open `Assinar` call. */
export class Session implements Tracked {
  readonly id = randomUUID()
  #closed = false
  #woken = false
  #wake: (() => void) | null = null
  readonly #abort = new AbortController()

  constructor(
    readonly appId: string,
    public key: KeyRecord,
    private readonly call: Call,
    public cursor: string,
    private readonly srv: SessionHost,
  ) {
    // The client went away (cancel, deadline, broken connection): stop at once.
    const gone = (): void => this.#close()
    call.on('cancelled', gone)
    call.on('close', gone)
  }

  wake(): void {
    this.#woken = true
    this.#wake?.()
  }

  /** Streams until the call ends. Page failures (Postgres away) are retried; nothing is skipped. */
  async run(): Promise<void> {
    // `cancelled` also covers a client gone before this session listened for it.
    while (!this.#closed && !this.call.cancelled) {
      this.#woken = false
      let rows: EventRow[]
      try {
        rows = await this.srv.page(this.appId, this.cursor)
      } catch (err) {
        this.srv.log.warn({ err: String(err), app_id: this.appId }, 'confirmation stream: reading events failed; retrying')
        await this.#sleep(this.srv.pollMs)
        continue
      }
      for (const r of rows) {
        if (this.#closed) return
        const more = this.call.write(toStreamEvent(this.appId, r))
        this.cursor = r.seq
        const stats = this.srv.stats
        if (this.call.writableLength > stats.maxQueued) stats.maxQueued = this.call.writableLength
        if (!more) {
          stats.waitingDrain++
          await this.#drained()
        }
      }
      const exp = this.key.expiresAtMs
      if (exp !== null && this.srv.clock() >= exp) this.end(grpc.status.UNAUTHENTICATED, 'Chave de API expirada.')
      if (rows.length < this.srv.pageSize) await this.#sleep(this.srv.pollMs)
    }
  }

  /** Ends the call with a status, at once: no event is written after this. */
  end(code: grpc.status, details: string): void {
    if (this.#closed) return
    this.#close()
    endCall(this.call, code, details)
  }

  #close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#abort.abort()
    this.srv.forget(this)
  }

  #sleep(ms: number): Promise<void> {
    if (this.#woken || this.#closed) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.#wake = null
        this.#abort.signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#wake = done
      this.#abort.signal.addEventListener('abort', done)
    })
  }

  #drained(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        this.call.off('drain', done)
        this.#abort.signal.removeEventListener('abort', done)
        resolve()
      }
      this.call.on('drain', done)
      this.#abort.signal.addEventListener('abort', done)
    })
  }
}

function toStreamEvent(appId: string, r: EventRow): StreamEvent {
  const b = r.body
  const text = (v: unknown): string => (typeof v === 'string' ? v : '')
  return {
    seq: r.seq,
    evento: r.evento,
    app_id: appId,
    notification_id: text(b.notification_id),
    player_id: text(b.player_id),
    quando: text(b.quando),
    canal: text(b.canal) || 'grpc',
    corpo_json: JSON.stringify(b),
  }
}

export function refusalOf(err: unknown): Refusal {
  if (err instanceof Refusal) return err
  if (err instanceof ApiError) {
    if (err.status === 401) return new Refusal(grpc.status.UNAUTHENTICATED, err.texts().erro)
    if (err.status === 403) return new Refusal(grpc.status.PERMISSION_DENIED, err.texts().erro)
    if (err.status === 503) return new Refusal(grpc.status.UNAVAILABLE, err.texts().erro)
    // The per-IP limit on failed authentications (src/apps/auth.ts).
    if (err.status === 429) return new Refusal(grpc.status.RESOURCE_EXHAUSTED, err.texts().erro)
    return new Refusal(grpc.status.INVALID_ARGUMENT, err.texts().erro)
  }
  if ((err as { dependency?: string } | null)?.dependency)
    return new Refusal(grpc.status.UNAVAILABLE, 'Dependência indisponível; tente de novo.')
  return new Refusal(grpc.status.UNAVAILABLE, 'Falha temporária; retome a partir do último seq.')
}

/** Ends a call with a status; the transport sends it after what is already queued. Never throws. */
export function endCall(call: Call, code: grpc.status, details: string): void {
  try {
    call.emit('error', { code, details, metadata: new grpc.Metadata() })
  } catch {
    // the call is already gone
  }
}
