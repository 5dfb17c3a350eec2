// A local HTTPS webhook consumer for tests: verifies X-PM-Assinatura over the raw bytes (constant time; 401 when
// it does not match, as the spec asks of a consumer), fails on demand (status codes, delays, silence), and records
// every request in arrival order with the peak number of requests in flight per path.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { testTls } from './tls'

export interface Received {
  path: string
  headers: Record<string, string>
  raw: Buffer
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  json: any
  /** The signature matched the path's secret (false also when no secret was set). */
  signed: boolean
  /** Wall-clock arrival (ms). */
  at: number
  /** What the receiver answered (0: never answered). */
  status: number
}

/** One answer: a status after an optional delay; `hang` never answers (the sender's timeout ends it). */
export interface Behaviour {
  status?: number
  delayMs?: number
  hang?: boolean
}

interface PathState {
  secret?: string
  script: Behaviour[]
  fallback: Behaviour
  inflight: number
  maxInflight: number
}

export class WebhookReceiver {
  readonly requests: Received[] = []
  readonly #paths = new Map<string, PathState>()
  readonly #waiters: Array<() => void> = []
  readonly #hanging = new Set<() => void>()

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(t: { teardown(fn: () => unknown): void }, host = '127.0.0.1'): Promise<WebhookReceiver> {
    const tls = testTls()
    let self: WebhookReceiver | null = null
    const server = createServer({ key: tls.key, cert: tls.cert, keepAlive: true }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () =>
        (self as WebhookReceiver).#handle(req.url ?? '/', req.headers as Record<string, string>, Buffer.concat(chunks), res),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, host, resolve))
    self = new WebhookReceiver(server, (server.address() as AddressInfo).port)
    const me = self
    t.teardown(() => me.close())
    return self
  }

  /** The URL of one path (a destination); `host` may be `localhost` to go through DNS. */
  url(path = '/hook', host = '127.0.0.1'): string {
    return `https://${host}:${this.port}${path}`
  }

  #state(path: string): PathState {
    let s = this.#paths.get(path)
    if (!s) {
      s = { script: [], fallback: { status: 200 }, inflight: 0, maxInflight: 0 }
      this.#paths.set(path, s)
    }
    return s
  }

  /** The secret signatures on this path are checked against. */
  secret(path: string, secret: string): void {
    this.#state(path).secret = secret
  }

  /** Answers for the next requests on this path, in order; then the fallback. */
  script(path: string, behaviours: Behaviour[]): void {
    this.#state(path).script.push(...behaviours)
  }

  /** The answer once the script is spent (default 200). */
  fallback(path: string, b: Behaviour): void {
    this.#state(path).fallback = b
  }

  maxInflight(path: string): number {
    return this.#state(path).maxInflight
  }

  on(path: string): Received[] {
    return this.requests.filter((r) => r.path === path)
  }

  /** Resolves when `n` requests arrived on `path` (any path when omitted); fails after `timeoutMs`. */
  async waitFor(n: number, path?: string, timeoutMs = 15_000): Promise<Received[]> {
    const until = Date.now() + timeoutMs
    for (;;) {
      const got = path ? this.on(path) : this.requests
      if (got.length >= n) return got
      if (Date.now() > until)
        throw new Error(`receiver: ${got.length} of ${n} requests on ${path ?? 'any path'} after ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50)
        this.#waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  #handle(url: string, headers: Record<string, string>, raw: Buffer, res: import('node:http').ServerResponse): void {
    const path = url.split('?')[0] ?? '/'
    const s = this.#state(path)
    const sig = headers['x-pm-assinatura'] ?? ''
    let signed = false
    if (s.secret) {
      const want = Buffer.from(`sha256=${createHmac('sha256', s.secret).update(raw).digest('hex')}`)
      const got = Buffer.from(sig)
      signed = got.length === want.length && timingSafeEqual(got, want)
    }
    let json: unknown
    try {
      json = JSON.parse(raw.toString())
    } catch {}
    const rec: Received = { path, headers, raw, json, signed, at: Date.now(), status: 0 }
    this.requests.push(rec)
    for (const w of this.#waiters.splice(0)) w()
    s.inflight++
    s.maxInflight = Math.max(s.maxInflight, s.inflight)
    const b = s.script.shift() ?? s.fallback
    const finish = () => {
      s.inflight--
      if (res.destroyed) return
      rec.status = s.secret && !signed ? 401 : (b.status ?? 200)
      res.writeHead(rec.status, { 'content-type': 'application/json' })
      res.end('{}')
    }
    if (b.hang) {
      const release = () => {
        s.inflight--
        res.destroy()
      }
      this.#hanging.add(release)
      res.on('close', () => {
        if (this.#hanging.delete(release)) s.inflight--
      })
      return
    }
    if (b.delayMs) setTimeout(finish, b.delayMs)
    else finish()
  }

  async close(): Promise<void> {
    for (const r of this.#hanging) r()
    this.#hanging.clear()
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
