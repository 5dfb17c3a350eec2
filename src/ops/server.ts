// The operations port (docs/spec/contract.md "Operations", PM_OPS_PORT) of every process, whatever its roles: GET /metrics
// (Prometheus text), GET /healthz (the process lives and its event loop turns), GET /readyz (Postgres and Redis
// answer, and the process is not draining). Plain node:http: it is scraped every few seconds, never on a hot path,
// and it must answer while the API's uWS server is closing.
//
// /metrics costs a Postgres query and two Redis commands per partition to compute, so it answers the text computed at
// most PM_OPS_METRICS_CACHE_MS ago, and one scrape at a time computes it (the others wait for that one): a flood of
// scrapes costs what one scrape every few seconds does. With PM_OPS_TOKEN it answers only that bearer token; the
// probes stay open (a load balancer's or an orchestrator's health check carries no token).
import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import type { Metrics } from './metrics'
import { succeedsWithin } from './within'

export interface Readiness {
  /** Each resolves when the dependency answered (the check bounds the wait); a rejection means "not ready". */
  postgres(): Promise<unknown>
  redis(): Promise<unknown>
}

export interface OpsOptions {
  /** PM_OPS_METRICS_CACHE_MS: how old the /metrics text may be; 0 computes it for every scrape (one at a time). */
  metricsCacheMs?: number
  /** PM_OPS_TOKEN: the bearer token /metrics asks for; null or absent: /metrics is open. */
  token?: string | null
  /** Wall-clock milliseconds (the cache's age; never a test's fake business clock). */
  now?: () => number
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest()

export class OpsServer {
  readonly #server: Server
  readonly #cacheMs: number
  readonly #tokenHash: Buffer | null
  readonly #now: () => number
  /** The last text, and when its computation ended. */
  #text: { body: string; at: number } | null = null
  /** The computation in progress: scrapes that arrive meanwhile wait for it instead of starting their own. */
  #computing: Promise<string> | null = null
  #waiting = 0
  #draining = false
  /** False while the process starts (migrations, listeners): not ready yet. */
  #up = false
  port = 0

  constructor(
    private readonly metrics: Metrics,
    private readonly ready: Readiness,
    private readonly log: Logger,
    /** `/readyz` never waits longer than this for a dependency (PM_OPS_CHECK_TIMEOUT_MS; a load balancer's probe
     *  times out at ~1-5 s). */
    private readonly checkTimeoutMs = 1_000,
    o: OpsOptions = {},
  ) {
    this.#cacheMs = o.metricsCacheMs ?? 0
    this.#tokenHash = o.token ? sha256(o.token) : null
    this.#now = o.now ?? Date.now
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        this.log.error({ err, path: 'ops' }, 'ops request failed')
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    // Probes are short requests; a client that holds a socket open must not keep the process from exiting.
    this.#server.keepAliveTimeout = 5_000
    this.#server.on('clientError', (_err, socket) => socket.destroy())
  }

  /** /metrics requests waiting for their text now (diagnostics, tests: scrapes that share one computation). */
  get metricsWaiting(): number {
    return this.#waiting
  }

  /** True from the start of a graceful stop: /readyz answers 503 so load balancers stop sending first. */
  get draining(): boolean {
    return this.#draining
  }

  drain(): void {
    this.#draining = true
  }

  /** Every role listens: ready as soon as the dependencies answer. */
  up(): void {
    this.#up = true
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject)
        this.port = (this.#server.address() as AddressInfo).port
        resolve(this.port)
      })
    })
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve())
      this.#server.closeAllConnections()
    })
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only the three paths; a query string is ignored (Prometheus may add one), anything else is a 404.
    const path = (req.url ?? '').split('?')[0]
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, { erro: 'método não permitido' })
    switch (path) {
      case '/metrics': {
        if (!this.#authorized(req)) {
          res.writeHead(401, {
            'content-type': 'application/json; charset=utf-8',
            'cache-control': 'no-store',
            'www-authenticate': 'Bearer realm="pombo-ops"',
          })
          res.end(JSON.stringify({ erro: 'token de operações ausente ou inválido' }))
          return
        }
        let text: string
        this.#waiting++
        try {
          text = await this.#metricsText()
        } finally {
          this.#waiting--
        }
        res.writeHead(200, { 'content-type': this.metrics.registry.contentType })
        res.end(req.method === 'HEAD' ? undefined : text)
        return
      }
      case '/healthz':
        return answer(res, 200, { ok: true })
      case '/readyz': {
        const [postgres, redis] = await Promise.all([
          succeedsWithin(() => this.ready.postgres(), this.checkTimeoutMs),
          succeedsWithin(() => this.ready.redis(), this.checkTimeoutMs),
        ])
        const draining = this.#draining
        const starting = !this.#up && !draining
        return answer(res, postgres && redis && !draining && !starting ? 200 : 503, { postgres, redis, draining, starting })
      }
      default:
        return answer(res, 404, { erro: 'não encontrado' })
    }
  }

  /** True when no token is set, or the request carries it (compared as digests: equal lengths, constant time). */
  #authorized(req: IncomingMessage): boolean {
    if (!this.#tokenHash) return true
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')
    return m !== null && timingSafeEqual(sha256(m[1] as string), this.#tokenHash)
  }

  #metricsText(): Promise<string> {
    const cached = this.#text
    if (cached && this.#now() - cached.at < this.#cacheMs) return Promise.resolve(cached.body)
    this.#computing ??= this.metrics.render().then(
      (body) => {
        this.#text = { body, at: this.#now() }
        this.#computing = null
        return body
      },
      (err) => {
        this.#computing = null
        throw err
      },
    )
    return this.#computing
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}
