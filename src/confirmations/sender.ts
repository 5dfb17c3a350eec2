// One webhook attempt (the spec, Events): POST of the exact signed bytes over node:https with a keep-alive agent, a
// deadline for the whole attempt, and the address guard. The outcome is a value, never a throw.
import { createHmac, randomUUID } from 'node:crypto'
import { Agent, request } from 'node:https'
import type { Socket } from 'node:net'
import { checkLiteral, guardedLookup, hostOf, RefusedAddressError } from './address'

export interface Attempt {
  url: string
  secret: string
  /** The event's name (X-PM-Evento). */
  event: string
  /** Stable for every attempt of one event: the consumer's deduplication key (X-PM-Evento-Id). */
  eventId: string
  body: Buffer
}

export type AttemptResult =
  | { ok: true; attemptId: string; status: number }
  | { ok: false; attemptId: string; result: 'http' | 'timeout' | 'refused' | 'network'; status?: number; reason: string }

export function signature(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

export interface SenderOptions {
  timeoutMs: number
  allowPrivate: boolean
  /** Extra CA (tests' local receiver); production trusts Node's roots plus NODE_EXTRA_CA_CERTS. */
  ca?: string
  /** Connections per origin: destinations on one host each have one request in flight (the concurrency). */
  maxSockets: number
  /** An idle keep-alive connection is closed after this long (default 3.5 s; see IdleSweeper). */
  idleMs?: number
}

/** A call the dispatcher may end early: `cancel` is set while the call is in flight, and the lease calls it when it is
 *  lost (a plain slot, not an AbortSignal: one listener added and removed per call cost more than the call's own
 *  bookkeeping at thousands of calls a second). */
export interface Cancellable {
  cancel: (() => void) | null
}

const IDLE_SINCE = Symbol('idleSince')

/**
 * Closes keep-alive connections that have been idle for `idleMs`, checked every quarter of it. Servers close idle
 * connections after about 5 s (Node's own default included); reusing one the server is closing at that moment fails
 * the attempt with "socket hang up", so ours go first. The agent's own `timeout` option does the same but arms a timer
 * on the socket at every request and every release, on the hot path; one sweep over the free sockets costs nothing
 * per call.
 */
class IdleSweeper {
  readonly #timer: NodeJS.Timeout

  constructor(agent: Agent, idleMs: number) {
    agent.on('free', (socket: Socket & { [IDLE_SINCE]?: number }) => {
      socket[IDLE_SINCE] = performance.now()
    })
    this.#timer = setInterval(
      () => {
        const before = performance.now() - idleMs
        for (const list of Object.values(agent.freeSockets)) {
          for (const socket of [...(list ?? [])] as Array<Socket & { [IDLE_SINCE]?: number }>) {
            if ((socket[IDLE_SINCE] ?? 0) <= before) socket.destroy()
          }
        }
      },
      Math.max(10, Math.floor(idleMs / 4)),
    )
    this.#timer.unref()
  }

  stop(): void {
    clearInterval(this.#timer)
  }
}

export class WebhookSender {
  readonly #agent: Agent
  readonly #sweeper: IdleSweeper

  constructor(private readonly o: SenderOptions) {
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: o.maxSockets,
      maxFreeSockets: o.maxSockets,
      scheduling: 'lifo',
      ca: o.ca,
      lookup: guardedLookup(o.allowPrivate),
    })
    this.#sweeper = new IdleSweeper(this.#agent, o.idleMs ?? 3_500)
  }

  /** Keep-alive connections open now, idle or busy (tests). */
  get openConnections(): number {
    const count = (m: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(m).reduce((n, l) => n + (l?.length ?? 0), 0)
    return count(this.#agent.sockets) + count(this.#agent.freeSockets)
  }

  /** `call.cancel()` ends the attempt at once (the dispatcher's lease is lost or about to lapse); its result is then
   *  unused. */
  send(a: Attempt, call?: Cancellable): Promise<AttemptResult> {
    const attemptId = randomUUID()
    let url: URL
    try {
      url = new URL(a.url)
      if (url.protocol !== 'https:') throw new Error('not https')
      checkLiteral(hostOf(url), this.o.allowPrivate)
    } catch (err) {
      const refused = err instanceof RefusedAddressError
      return Promise.resolve({ ok: false, attemptId, result: refused ? 'refused' : 'network', reason: (err as Error).message })
    }
    return new Promise((resolve) => {
      let settled = false
      const done = (r: AttemptResult) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (call) call.cancel = null
        resolve(r)
      }
      const abort = () => {
        done({ ok: false, attemptId, result: 'network', reason: 'interrompida pelo despachante' })
        req.destroy()
      }
      const req = request(
        url,
        {
          method: 'POST',
          agent: this.#agent,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': String(a.body.length),
            'X-PM-Evento': a.event,
            'X-PM-Evento-Id': a.eventId,
            'X-PM-Entrega-Id': attemptId,
            'X-PM-Canal': 'webhook',
            'X-PM-Assinatura': signature(a.secret, a.body),
            'User-Agent': 'pombo-webhook/1',
          },
        },
        (res) => {
          const status = res.statusCode ?? 0
          // The answer's body is not read for meaning; draining it lets the socket go back to the pool.
          res.resume()
          res.on('end', () => {
            if (status >= 200 && status < 300) done({ ok: true, attemptId, status })
            else done({ ok: false, attemptId, result: 'http', status, reason: `HTTP ${status}` })
          })
          res.on('error', (err) => done({ ok: false, attemptId, result: 'network', status, reason: err.message }))
        },
      )
      // One deadline for the whole attempt (connect, TLS, request, answer), spec: 10 seconds.
      const timer = setTimeout(() => {
        done({ ok: false, attemptId, result: 'timeout', reason: `sem resposta em ${this.o.timeoutMs} ms` })
        req.destroy()
      }, this.o.timeoutMs)
      req.on('error', (err) => {
        const refused = err instanceof RefusedAddressError
        done({ ok: false, attemptId, result: refused ? 'refused' : 'network', reason: err.message.slice(0, 300) })
      })
      if (call) call.cancel = abort
      req.end(a.body)
    })
  }

  close(): void {
    this.#sweeper.stop()
    this.#agent.destroy()
  }
}
