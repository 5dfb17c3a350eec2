// One webhook attempt (the spec, Events): POST of the exact signed bytes over node:https with a keep-alive agent, a
// deadline for the whole attempt, and the address guard. The outcome is a value, never a throw.
import { createHmac, randomUUID } from 'node:crypto'
import { Agent, request } from 'node:https'
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
}

export class WebhookSender {
  readonly #agent: Agent

  constructor(private readonly o: SenderOptions) {
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: o.maxSockets,
      maxFreeSockets: o.maxSockets,
      scheduling: 'lifo',
      // An idle socket is closed by us after 4 s, before the usual 5 s keep-alive timeout of servers (Node's own
      // included): reusing one the server is closing at that moment fails the attempt with "socket hang up". The
      // agent applies this to idle sockets only; a call in flight keeps its own deadline.
      timeout: 4_000,
      ca: o.ca,
      lookup: guardedLookup(o.allowPrivate),
    })
  }

  /** `signal` ends the attempt at once (the dispatcher's lease is lost or about to lapse); its result is then unused. */
  send(a: Attempt, signal?: AbortSignal): Promise<AttemptResult> {
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
        signal?.removeEventListener('abort', abort)
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
      if (signal?.aborted) abort()
      else signal?.addEventListener('abort', abort, { once: true })
      req.end(a.body)
    })
  }

  close(): void {
    this.#agent.destroy()
  }
}
