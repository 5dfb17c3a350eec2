// Routes on uWS's own router (static segments win over parameters, so /notifications/stats beats /notifications/:id).
// Each request runs one straight pipeline: request id → per-IP limit → malformed-id check → handler → reply.
// Handlers read top to bottom (credential → body → act → answer); the body streams in meanwhile, capped.
// Nothing thrown in a route reaches uWS: an exception escaping a uWS callback would end the whole process, so the
// whole callback (copying the request out included) runs inside one boundary that turns it into that request's answer.
import type { Logger } from 'pino'
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js'
import { ApiError } from '../errors'
import type { ProxyTrust } from './client-ip'
import { dependencyOf } from './dependency-errors'
import type { IpLimiter } from './ip-limit'
import { errorReply, malformedIdReply, type Reply, write } from './reply'
import { Request, RequestAborted, type RouteShape } from './request'

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

export interface RouterOptions {
  /** Nesting allowed in a JSON body (PM_JSON_MAX_DEPTH). */
  jsonMaxDepth: number
}

export class Router {
  #inflight = 0
  #idle: Array<() => void> = []

  constructor(
    private readonly app: TemplatedApp,
    private readonly log: Logger,
    private readonly proxies: ProxyTrust,
    private readonly o: RouterOptions,
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
    const shape: RouteShape = { paramCount: 0, bodyLimit: null, headerNames: [], proxies: null, jsonMaxDepth: this.o.jsonMaxDepth }
    this.app.any('/*', (res, uReq) => {
      const req = new Request(res, uReq, shape)
      res.onAborted(() => req.markAborted())
      this.#guarded(res, req, '/*', () => errorReply(new ApiError('ROUTE_NOT_FOUND', { metodo: req.method, caminho: req.path }), req.id))
    })
  }

  /** Resolves once no request is in flight (graceful shutdown). */
  drained(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #add(method: Method, path: string, opts: RouteOptions, handler: Handler): void {
    const proxies = this.proxies.active ? this.proxies : null
    const shape: RouteShape = {
      paramCount: (path.match(/\/:/g) ?? []).length,
      bodyLimit: opts.bodyLimit ?? null,
      headerNames: [...BASE_HEADERS, ...(proxies ? ['x-forwarded-for'] : []), ...(opts.headers ?? [])],
      proxies,
      jsonMaxDepth: this.o.jsonMaxDepth,
    }
    this.app[method](path, (res, uReq) => {
      let req: Request
      try {
        req = new Request(res, uReq, shape)
        res.onAborted(() => req.markAborted())
      } catch (err) {
        // Only a bug can land here (nothing of the request has been read yet); the connection is dropped.
        this.log.error({ err, route: path }, 'request setup failed')
        res.close()
        return
      }
      this.#guarded(res, req, path, () => this.#precheck(req, opts) ?? handler(req))
    })
  }

  /** Runs `run` and writes what it answers; any exception becomes this request's error answer. */
  #guarded(res: HttpResponse, req: Request, route: string, run: () => Reply | Promise<Reply>): void {
    this.#inflight++
    let out: Reply | Promise<Reply>
    try {
      out = run()
    } catch (err) {
      out = this.#fromError(err, req, route)
    }
    // Synchronous handlers answer in the same tick: no promise and no copying on the cheapest routes.
    if (out instanceof Promise) {
      try {
        req.detach()
      } catch (err) {
        // A bug; the handler's later reads of the request then fail inside its own promise, answered below.
        this.log.error({ request_id: req.id, route, err }, 'request could not be detached')
      }
      out.then(
        (reply) => this.#finish(res, req, reply, route),
        (err) => this.#finish(res, req, this.#fromError(err, req, route), route),
      )
    } else {
      this.#finish(res, req, out, route)
    }
  }

  #precheck(req: Request, opts: RouteOptions): Reply | null {
    // A disabled limiter (PM_LIMIT_IP_PER_MIN=0) needs no address: the peer is not even read.
    if (opts.ipLimit && opts.ipLimit.limit > 0 && !opts.ipLimit.take(req.ip)) throw new ApiError('IP_RATE_LIMITED', { limite: opts.ipLimit.limit })
    if (opts.uuidParams && !req.params.every(isUuid)) return malformedIdReply()
    return null
  }

  #finish(res: HttpResponse, req: Request, reply: Reply, route: string): void {
    let streaming: void | Promise<void>
    try {
      streaming = write(res, req, reply)
    } catch (err) {
      // A reply that cannot be written (a bug: a body JSON.stringify refuses) still answers, once.
      this.log.error({ request_id: req.id, route, err }, 'answer could not be written')
      try {
        if (!req.aborted) write(res, req, errorReply(new ApiError('INTERNAL'), req.id))
      } catch {
        if (!req.aborted) res.close()
      }
      this.#done()
      return
    }
    // A streamed file stays in flight until its last byte is handed over (graceful shutdown waits for it).
    if (streaming) {
      streaming.then(
        () => this.#done(),
        (err) => {
          this.log.error({ request_id: req.id, route, err }, 'streamed answer failed')
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

  /**
   * The answer for an exception. Logs name the route's pattern, never the path: a path can carry a secret (the
   * export download token) and, from a hostile client, anything at all.
   */
  #fromError(err: unknown, req: Request, route: string): Reply {
    if (err instanceof ApiError) return errorReply(err, req.id)
    if (err instanceof RequestAborted) return { status: 400 }
    const dep = dependencyOf(err)
    if (dep) {
      this.log.warn({ request_id: req.id, route, dependencia: dep, err: String(err) }, 'dependency unavailable')
      return errorReply(new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: dep }), req.id)
    }
    this.log.error({ request_id: req.id, route, err }, 'unhandled error')
    return errorReply(new ApiError('INTERNAL'), req.id)
  }
}
