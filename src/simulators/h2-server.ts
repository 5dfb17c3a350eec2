// What both provider simulators share: a TLS HTTP/2 server (127.0.0.1, port 0 unless given) with the simulators'
// certificate, its live sessions (for GOAWAY, drops and SETTINGS changes), timers that close() cancels, and a
// recorder callers can wait on.
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session, type SecureServerOptions } from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { Step } from './behaviour'

export type Req = Http2ServerRequest
export type Res = Http2ServerResponse

export interface H2Options {
  /** Server key and certificate, PEM. */
  tls: { key: string; cert: string }
  /** Listening address (default 127.0.0.1, port 0: a free port). */
  host?: string
  port?: number
  allowHTTP1: boolean
  maxConcurrentStreams: number
  onRequest(req: Req, res: Res): void
}

/** Records what a simulator received; `waitFor` resolves once n items are in (counted even when bodies are not kept). */
export class Recorder<T> {
  readonly items: T[] = []
  count = 0
  #waiters: Array<{ n: number; resolve: (items: T[]) => void }> = []
  constructor(readonly keep: boolean) {}

  push(item: T): void {
    this.count++
    if (this.keep) this.items.push(item)
    if (this.#waiters.length === 0) return
    this.#waiters = this.#waiters.filter((w) => {
      if (this.count < w.n) return true
      w.resolve(this.items.slice())
      return false
    })
  }

  waitFor(n: number, timeoutMs: number, what: string): Promise<T[]> {
    if (this.count >= n) return Promise.resolve(this.items.slice())
    return new Promise((resolve, reject) => {
      const w = {
        n,
        resolve: (items: T[]) => {
          clearTimeout(timer)
          resolve(items)
        },
      }
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w)
        reject(new Error(`waited ${timeoutMs} ms for ${n} ${what}, got ${this.count}`))
      }, timeoutMs)
      this.#waiters.push(w)
    })
  }

  clear(): void {
    this.items.length = 0
    this.count = 0
  }
}

export class H2Simulator {
  readonly sessions = new Set<Http2Session>()
  /** Sessions ever accepted: a client that reconnects after GOAWAY shows up here. */
  sessionsOpened = 0
  readonly #sockets = new Set<TLSSocket>()
  readonly #timers = new Set<NodeJS.Timeout>()
  readonly #open = new WeakMap<Http2Session, Set<number>>() // stream ids in flight, per session
  #settings: { maxConcurrentStreams: number }
  #closed?: Promise<void>
  url = ''

  private constructor(
    readonly server: http2.Http2SecureServer,
    maxConcurrentStreams: number,
  ) {
    this.#settings = { maxConcurrentStreams }
  }

  static async start(o: H2Options): Promise<H2Simulator> {
    const { key, cert } = o.tls
    const opts: SecureServerOptions = {
      key,
      cert,
      allowHTTP1: o.allowHTTP1,
      settings: { maxConcurrentStreams: o.maxConcurrentStreams },
    }
    const server = http2.createSecureServer(opts, o.onRequest)
    const fake = new H2Simulator(server, o.maxConcurrentStreams)
    server.on('session', (s: Http2Session) => {
      const open = new Set<number>()
      fake.#open.set(s, open)
      s.on('stream', (st: http2.ServerHttp2Stream) => {
        if (st.id === undefined) return
        const id = st.id
        open.add(id)
        st.on('close', () => open.delete(id))
      })
      fake.sessions.add(s)
      fake.sessionsOpened++
      s.on('close', () => fake.sessions.delete(s))
      s.on('error', () => {}) // a client vanishing mid-stream is normal (tests do it on purpose), not a failure of the simulator
    })
    // A client that did not negotiate h2 by ALPN is cut off (Node would answer it a plain-text 403 instead)
    server.on('unknownProtocol', (sock: TLSSocket) => sock.destroy())
    server.on('secureConnection', (sock: TLSSocket) => {
      fake.#sockets.add(sock)
      sock.on('close', () => fake.#sockets.delete(sock))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve())
    })
    const host = o.host && o.host !== '0.0.0.0' && o.host !== '::' ? o.host : '127.0.0.1'
    fake.url = `https://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`
    return fake
  }

  /** Runs fn after ms unless the simulator closes first. */
  later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t)
      fn()
    }, ms)
    this.#timers.add(t)
  }

  /** Carries out a step: after its delay (or `defaultDelayMs` when it has none), drops the stream or the
   *  connection, hangs, or calls answer(). */
  perform(step: Step, req: Req, res: Res, answer: () => void, defaultDelayMs?: number): void {
    const act = () => {
      if (res.destroyed || res.writableEnded) return
      if (step.name === 'hang') return
      if (step.name === 'drop') return drop(req)
      if (step.name === 'drop-session') return dropSession(req)
      answer()
    }
    const delay = step.delayMs ?? defaultDelayMs
    if (delay) this.later(delay, act)
    else act()
  }

  /** GOAWAY to every live session (RFC 9113 §6.8), with optional debug data, then a graceful close. By default
   *  the last-stream-id covers every stream received, so requests in flight are still answered; with refuseInFlight
   *  it stops below the oldest open stream, and the client sees those refused (REFUSED_STREAM: never processed,
   *  safe to retry elsewhere). A stream 1 still open cannot be refused this way (Node reads 0 as "all received"). */
  goaway(opaque?: Buffer, o: { refuseInFlight?: boolean } = {}): void {
    for (const s of this.sessions) {
      if (s.closed || s.destroyed) continue
      const open = this.#open.get(s)
      const oldest = open && open.size > 0 ? Math.min(...open) : 0
      const last = o.refuseInFlight && oldest > 1 ? oldest - 2 : undefined
      s.goaway(http2.constants.NGHTTP2_NO_ERROR, last, opaque)
      s.close()
    }
  }

  /** New SETTINGS_MAX_CONCURRENT_STREAMS for new and live sessions (a SETTINGS frame is sent on each). */
  setMaxConcurrentStreams(n: number): void {
    this.#settings = { maxConcurrentStreams: n }
    this.server.updateSettings(this.#settings)
    for (const s of this.sessions) if (!s.closed && !s.destroyed) s.settings(this.#settings)
  }

  /** Destroys every connection at once (a crash of the provider's front end). */
  dropAll(): void {
    for (const s of this.sessions) s.destroy()
    for (const sock of this.#sockets) sock.destroy()
  }

  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      for (const t of this.#timers) clearTimeout(t)
      this.#timers.clear()
      this.server.close(() => resolve())
      this.dropAll()
    })
    return this.#closed
  }
}

function drop(req: Req): void {
  if (req.httpVersion === '2.0') req.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR)
  else req.socket.destroy()
}

function dropSession(req: Req): void {
  if (req.httpVersion === '2.0') req.stream.session?.destroy()
  else req.socket.destroy()
}

/** Reads a request body up to a cap; resolves null when it is larger (the caller answers 413/400). */
export function readBody(req: Req, capBytes: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > capBytes) over = true
      else chunks.push(c)
    })
    req.on('end', () => resolve(over ? null : Buffer.concat(chunks)))
    req.on('error', () => resolve(null))
    req.on('aborted', () => resolve(null))
  })
}

/** Writes a JSON answer (or an empty one when body is undefined). */
export function send(res: Res, status: number, headers: Record<string, string>, body?: unknown): void {
  if (res.destroyed || res.writableEnded) return
  const text = body === undefined ? '' : JSON.stringify(body)
  const h: Record<string, string> = { ...headers }
  if (body !== undefined) h['content-type'] = 'application/json; charset=UTF-8'
  res.writeHead(status, h)
  res.end(text)
}
