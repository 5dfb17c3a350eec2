// Routes on uWS's own router (static segments win over parameters, so /notifications/stats beats /notifications/:id).
// Each request runs one straight pipeline: request id → per-IP limit → malformed-id check → handler → reply → metrics
// and access log (by route pattern, never the raw path).
// Handlers read top to bottom (credential → body → act → answer); the body streams in meanwhile, capped.
// Nothing thrown in a route reaches uWS: an exception escaping a uWS callback would end the whole process, so the
// whole callback (copying the request out included) runs inside one boundary that turns it into that request's answer.
import type { Logger } from 'pino'
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js'
import { ApiError } from '../core/errors'
import { SIMULATOR_PASS_HEADER } from '../core/simulator-pass'
import type { Metrics, RouteMeter } from '../ops/metrics'
import type { ProxyTrust } from './client-ip'
import { preflightReply, withCors } from './cors'
import { dependencyOf } from '../core/dependency-errors'
import type { IpLimiter } from './ip-limit'
import { errorReply, malformedIdReply, type Reply, write } from './reply'
import { Request, RequestAborted, type RouteShape } from './request'

export type Handler = (req: Request) => Promise<Reply> | Reply
export type Method = 'get' | 'post' | 'put' | 'patch' | 'del'

export interface RouteOptions {
  /** Body cap in bytes (the spec, Limits); a route without one reads no body. */
  bodyLimit?: number
  /** The per-IP limiter that counts this route (public routes). */
  ipLimit?: IpLimiter
  /** Path parameters that must be UUIDs; a malformed one is a 400 outside the envelope (the spec, Apps). */
  uuidParams?: boolean
  /** Request headers the handler reads besides Authorization (lower case). */
  headers?: readonly string[]
  /** A hot route (sends, receipts, registrations, in-app device routes): its access-log line is at `debug`. */
  hot?: boolean
  /**
   * A route the device SDK calls from web pages and service workers on the customer's own origin: answers carry
   * `Access-Control-Allow-Origin: *` and the path answers CORS preflights. Safe for any origin because these routes
   * take no cookie and no secret (see src/http/cors.ts).
   */
  cors?: boolean
}

/** PM_ACCESS_LOG: a line per answer (hot routes at debug), only answers ≥ 400, or none. */
export type AccessLog = 'all' | 'errors' | 'off'

/** What the pipeline knows of a route once it is declared. */
interface RouteInfo {
  path: string
  meter: RouteMeter | null
  hot: boolean
  cors: boolean
}

const METHOD_LABEL: Record<Method, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE' }

/** Headers every route may read; a route adds its own through RouteOptions.headers. */
const BASE_HEADERS = ['authorization', 'content-length']

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && s.length === 36 && UUID_RE.test(s)
}

export interface RouterOptions {
  /** Nesting allowed in a JSON body (PM_JSON_MAX_DEPTH). */
  jsonMaxDepth: number
  /** The process's metrics (pombo_http_*); none: nothing measured. */
  metrics?: Metrics
  /** Default 'all'. */
  accessLog?: AccessLog
  /** Which server the routes belong to (`api`, `dashboard`): both have a `GET /`. */
  server?: string
  /** Only where simulators are allowed: true for a valid `pombo simulate` fleet pass, which lifts the per-IP limit
   *  (src/core/simulator-pass.ts). Unset: the pass header is not read at all. */
  simulatorPass?: (pass: string | undefined) => boolean
}

export class Router {
  /** Every route registered (method, uWS pattern): the OpenAPI conformance test compares them with docs/openapi.yaml. */
  readonly routes: Array<{ method: string; path: string }> = []
  #inflight = 0
  #idle: Array<() => void> = []
  /** Path → the methods declared on it with `cors`, for its preflight answer. */
  #corsMethods = new Map<string, string[]>()

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
    const shape: RouteShape = {
      paramCount: 0,
      bodyLimit: null,
      headerNames: [],
      proxies: null,
      jsonMaxDepth: this.o.jsonMaxDepth,
    }
    // The method of an unmatched request is the client's to choose: the label is '*', never what it sent.
    const info: RouteInfo = {
      path: '/*',
      meter: this.o.metrics?.route(this.o.server ?? '', '*', '/*') ?? null,
      hot: false,
      cors: false,
    }
    this.app.any(
      '/*',
      this.#callback(shape, info, (req) =>
        errorReply(new ApiError('ROUTE_NOT_FOUND', { method: req.method, path: req.path }), req.id),
      ),
    )
  }

  /** Set when the server stops: every answer from then on closes its connection once sent (reply.ts write). */
  closing = false
  /** Answers written since `closing` was set (their connections are shutting down gracefully). */
  answeredWhileClosing = 0

  /** Resolves once no request is in flight (graceful shutdown). */
  drained(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #add(method: Method, path: string, opts: RouteOptions, handler: Handler): void {
    this.routes.push({ method: METHOD_LABEL[method], path })
    const proxies = this.proxies.active ? this.proxies : null
    const shape: RouteShape = {
      paramCount: (path.match(/\/:/g) ?? []).length,
      bodyLimit: opts.bodyLimit ?? null,
      headerNames: [
        ...BASE_HEADERS,
        ...(proxies ? ['x-forwarded-for'] : []),
        ...(opts.ipLimit && this.o.simulatorPass ? [SIMULATOR_PASS_HEADER] : []),
        ...(opts.headers ?? []),
      ],
      proxies,
      jsonMaxDepth: this.o.jsonMaxDepth,
    }
    const cors = opts.cors === true
    const info: RouteInfo = {
      path,
      meter: this.o.metrics?.route(this.o.server ?? '', METHOD_LABEL[method], path) ?? null,
      hot: opts.hot === true,
      cors,
    }
    this.app[method](
      path,
      this.#callback(shape, info, (req) => this.#precheck(req, opts) ?? handler(req)),
    )
    if (cors) this.#preflight(path, METHOD_LABEL[method], shape)
  }

  /** Registers the path's OPTIONS answer once; later methods of the same path join its Allow-Methods. */
  #preflight(path: string, method: string, shape: RouteShape): void {
    const known = this.#corsMethods.get(path)
    if (known) {
      known.push(method)
      return
    }
    const methods = [method]
    this.#corsMethods.set(path, methods)
    const info: RouteInfo = {
      path,
      meter: this.o.metrics?.route(this.o.server ?? '', 'OPTIONS', path) ?? null,
      hot: true,
      cors: true,
    }
    const preflightShape: RouteShape = { ...shape, bodyLimit: null }
    this.app.options(
      path,
      this.#callback(preflightShape, info, () => preflightReply(methods)),
    )
  }

  /** The uWS callback of a route: the request copied out, then `run` inside the error boundary. */
  #callback(shape: RouteShape, info: RouteInfo, run: (req: Request) => Reply | Promise<Reply>) {
    return (res: HttpResponse, uReq: HttpRequest): void => {
      const t0 = performance.now()
      let req: Request
      try {
        req = new Request(res, uReq, shape)
        res.onAborted(() => req.markAborted())
      } catch (err) {
        // Only a bug can land here (nothing of the request has been read yet); the connection is dropped.
        this.log.error({ err, route: info.path }, 'request setup failed')
        res.close()
        return
      }
      this.#guarded(res, req, info, t0, () => run(req))
    }
  }

  /** Runs `run` and writes what it answers; any exception becomes this request's error answer. */
  #guarded(res: HttpResponse, req: Request, info: RouteInfo, t0: number, run: () => Reply | Promise<Reply>): void {
    const route = info.path
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
        this.log.error({ ...ids(req), route, err }, 'request could not be detached')
      }
      out.then(
        (reply) => this.#finish(res, req, reply, info, t0),
        (err) => this.#finish(res, req, this.#fromError(err, req, route), info, t0),
      )
    } else {
      this.#finish(res, req, out, info, t0)
    }
  }

  #precheck(req: Request, opts: RouteOptions): Reply | null {
    // A disabled limiter (PM_LIMIT_IP_PER_MIN=0) needs no address: the peer is not even read.
    if (
      opts.ipLimit &&
      opts.ipLimit.limit > 0 &&
      !this.o.simulatorPass?.(req.header(SIMULATOR_PASS_HEADER)) &&
      !opts.ipLimit.take(req.ip)
    )
      throw new ApiError('IP_RATE_LIMITED', { limite: opts.ipLimit.limit })
    if (opts.uuidParams && !req.params.every(isUuid)) return malformedIdReply()
    return null
  }

  #finish(res: HttpResponse, req: Request, reply: Reply, info: RouteInfo, t0: number): void {
    const route = info.path
    let streaming: void | Promise<void>
    try {
      streaming = write(res, req, info.cors ? withCors(reply) : reply, this.closing)
      if (this.closing) this.answeredWhileClosing++
      this.#measure(req, info, reply.status, t0)
    } catch (err) {
      // A reply that cannot be written (a bug: a body JSON.stringify refuses) still answers, once.
      this.log.error({ ...ids(req), route, err }, 'answer could not be written')
      try {
        if (!req.aborted) write(res, req, errorReply(new ApiError('INTERNAL'), req.id), this.closing)
      } catch {
        if (!req.aborted) res.close()
      }
      this.#measure(req, info, 500, t0)
      this.#done()
      return
    }
    // A streamed file stays in flight until its last byte is handed over (graceful shutdown waits for it).
    if (streaming) {
      streaming.then(
        () => this.#done(),
        (err) => {
          this.log.error({ ...ids(req), route, err }, 'streamed answer failed')
          if (!req.aborted) res.close()
          this.#done()
        },
      )
    } else {
      this.#done()
    }
  }

  /**
   * The answer's metrics and access-log line. A log line is built only when its level is enabled (the hot routes'
   * debug lines cost nothing at the default level); a failure here is a bug that must not reach uWS.
   */
  #measure(req: Request, info: RouteInfo, status: number, t0: number): void {
    try {
      const seconds = (performance.now() - t0) / 1000
      info.meter?.observe(status, seconds)
      const mode = this.o.accessLog ?? 'all'
      if (mode === 'off' || (mode === 'errors' && status < 400)) return
      const level = status >= 500 ? 'warn' : info.hot && status < 400 ? 'debug' : 'info'
      if (!this.log.isLevelEnabled(level)) return
      this.log[level](
        {
          ...ids(req),
          method: req.method,
          route: info.path,
          status,
          ms: Math.round(seconds * 1e4) / 10,
          aborted: req.aborted || undefined,
        },
        'request',
      )
    } catch (err) {
      this.log.error({ err, route: info.path }, 'request could not be measured')
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
      this.log.warn({ ...ids(req), route, dependencia: dep, err: String(err) }, 'dependency unavailable')
      return errorReply(new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: dep }), req.id)
    }
    this.log.error({ ...ids(req), route, err }, 'unhandled error')
    return errorReply(new ApiError('INTERNAL'), req.id)
  }
}

/** The ids of a request for a log line: Pombo's, and the caller's when one came in. */
function ids(req: Request): { request_id: string; correlation_id?: string } {
  return req.correlationId === null ? { request_id: req.id } : { request_id: req.id, correlation_id: req.correlationId }
}
