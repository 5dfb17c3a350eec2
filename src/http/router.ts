// Routes on uWS's own router (static segments win over parameters, so /notifications/stats beats /notifications/:id).
// Each request runs one straight pipeline: request id → per-IP limit → malformed-id check → handler → reply.
// Handlers read top to bottom (credential → body → act → answer); the body streams in meanwhile, capped.
import type { Logger } from 'pino'
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js'
import { ApiError } from '../errors'
import type { ProxyTrust } from './client-ip'
import { dependencyOf } from './dependency-errors'
import type { IpLimiter } from './ip-limit'
import { errorReply, malformedIdReply, type Reply, write } from './reply'
import { Request, RequestAborted } from './request'

export type Handler = (req: Request) => Promise<Reply> | Reply
export type Method = 'get' | 'post' | 'put' | 'patch' | 'del'

export interface RouteOptions {
  /** Body cap in bytes (spec §Limits); a route without one reads no body. */
  bodyLimit?: number
  /** The per-IP limiter that counts this route (public routes). */
  ipLimit?: IpLimiter
  /** Path parameters that must be UUIDs; a malformed one is a 400 outside the envelope (spec §Apps). */
  uuidParams?: boolean
  /** Request headers the handler reads besides Authorization (lower case). */
  headers?: readonly string[]
}

/** Headers every route may read; a route adds its own through RouteOptions.headers. */
const BASE_HEADERS = ['authorization', 'content-length']

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && s.length === 36 && UUID_RE.test(s)
}

export class Router {
  #inflight = 0
  #idle: Array<() => void> = []

  constructor(
    private readonly app: TemplatedApp,
    private readonly log: Logger,
    private readonly proxies: ProxyTrust,
  ) {}

  get inflight(): number {
    return this.#inflight
  }

  get(path: string, opts: RouteOptions, h: Handler): void {
    this.#add('get', path, opts, h)
  }
  post(path: string, opts: RouteOptions, h: Handler): void {
    this.#add('post', path, opts, h)
  }
  put(path: string, opts: RouteOptions, h: Handler): void {
    this.#add('put', path, opts, h)
  }
  patch(path: string, opts: RouteOptions, h: Handler): void {
    this.#add('patch', path, opts, h)
  }
  del(path: string, opts: RouteOptions, h: Handler): void {
    this.#add('del', path, opts, h)
  }

  /** Everything no route matched: a 404 in the envelope. Call after every route is added. */
  fallback(): void {
    this.app.any('/*', (res, req) => {
      const r = new Request(res, req, 0, null, [], null)
      res.onAborted(() => r.markAborted())
      write(res, r, errorReply(new ApiError('ROUTE_NOT_FOUND', { metodo: r.method, caminho: r.path }), r.id))
    })
  }

  /** Resolves once no request is in flight (graceful shutdown). */
  drained(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #add(method: Method, path: string, opts: RouteOptions, handler: Handler): void {
    const paramCount = (path.match(/\/:/g) ?? []).length
    const bodyLimit = opts.bodyLimit ?? null
    const proxies = this.proxies.active ? this.proxies : null
    const headerNames = [...BASE_HEADERS, ...(proxies ? ['x-forwarded-for'] : []), ...(opts.headers ?? [])]
    this.app[method](path, (res, uReq) => {
      const req = new Request(res, uReq, paramCount, bodyLimit, headerNames, proxies)
      res.onAborted(() => req.markAborted())
      this.#inflight++
      let out: Reply | Promise<Reply>
      try {
        out = this.#precheck(req, opts) ?? handler(req)
      } catch (err) {
        out = this.#fromError(err, req)
      }
      // Synchronous handlers answer in the same tick: no promise and no copying on the cheapest routes.
      if (out instanceof Promise) {
        req.detach()
        out.then(
          (reply) => this.#finish(res, req, reply),
          (err) => this.#finish(res, req, this.#fromError(err, req)),
        )
      } else {
        this.#finish(res, req, out)
      }
    })
  }

  #precheck(req: Request, opts: RouteOptions): Reply | null {
    if (opts.ipLimit && !opts.ipLimit.take(req.ip)) throw new ApiError('IP_RATE_LIMITED', { limite: opts.ipLimit.limit })
    if (opts.uuidParams && !req.params.every(isUuid)) return malformedIdReply()
    return null
  }

  #finish(res: HttpResponse, req: Request, reply: Reply): void {
    const streaming = write(res, req, reply)
    // A streamed file stays in flight until its last byte is handed over (graceful shutdown waits for it).
    if (streaming) {
      streaming.then(
        () => this.#done(),
        (err) => {
          this.log.error({ request_id: req.id, err }, 'streamed answer failed')
          if (!req.aborted) res.close()
          this.#done()
        },
      )
    } else {
      this.#done()
    }
  }

  #done(): void {
    if (--this.#inflight === 0 && this.#idle.length > 0) for (const f of this.#idle.splice(0)) f()
  }

  #fromError(err: unknown, req: Request): Reply {
    if (err instanceof ApiError) return errorReply(err, req.id)
    if (err instanceof RequestAborted) return { status: 400 }
    const dep = dependencyOf(err)
    if (dep) {
      this.log.warn({ request_id: req.id, dependencia: dep, err: String(err) }, 'dependency unavailable')
      return errorReply(new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: dep }), req.id)
    }
    this.log.error({ request_id: req.id, method: req.method, path: req.path, err }, 'unhandled error')
    return errorReply(new ApiError('INTERNAL'), req.id)
  }
}
