// One request as the handlers see it: everything copied out of uWS before the first await (uWS frees its request
// object when the handler returns), the body read with a cap that is enforced while it streams in.
import { isUtf8 } from 'node:buffer'
import { randomUUID } from 'node:crypto'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { ApiError, fieldError } from '../core/errors'
import type { ProxyTrust } from './client-ip'
import { guardBody } from '../core/json-guard'
import { correlationIdOf } from './request-id'

export type BodyState = { kind: 'pending' } | { kind: 'ok'; body: Buffer } | { kind: 'too-large' } | { kind: 'aborted' }

/** Reads a request body into memory, refusing (and dropping) anything past `limit` bytes. */
class BodyReader {
  #chunks: Buffer[] = []
  #size = 0
  #state: BodyState = { kind: 'pending' }
  #waiters: Array<(s: BodyState) => void> = []

  constructor(res: HttpResponse, limit: number, contentLength: string) {
    // A declared length over the cap is refused before a byte is buffered.
    if (contentLength !== '' && Number(contentLength) > limit) {
      this.#state = { kind: 'too-large' }
      return
    }
    res.onData((chunk, isLast) => {
      if (this.#state.kind !== 'pending') return
      this.#size += chunk.byteLength
      if (this.#size > limit) {
        this.#chunks = []
        this.#settle({ kind: 'too-large' })
        return
      }
      // uWS reuses the chunk's memory after this callback: copy it.
      if (chunk.byteLength > 0) this.#chunks.push(Buffer.from(chunk.slice(0)))
      if (isLast) {
        const body = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#size)
        this.#chunks = []
        this.#settle({ kind: 'ok', body })
      }
    })
  }

  abort(): void {
    if (this.#state.kind === 'pending') this.#settle({ kind: 'aborted' })
  }

  /** Resolves as soon as the body is complete, or as soon as it is known to be too large. */
  wait(): Promise<BodyState> {
    if (this.#state.kind !== 'pending') return Promise.resolve(this.#state)
    return new Promise((resolve) => this.#waiters.push(resolve))
  }

  #settle(s: BodyState): void {
    this.#state = s
    for (const w of this.#waiters) w(s)
    this.#waiters = []
  }
}

const MAPPED_PREFIX = '0000:0000:0000:0000:0000:ffff:'

function decodeAddress(buf: ArrayBuffer): string {
  const text = Buffer.from(buf).toString('latin1')
  // uWS prints IPv4 peers of a dual-stack socket in their IPv4-mapped IPv6 form, spelled out in full.
  if (text.length === 39 && text.slice(0, 30).toLowerCase() === MAPPED_PREFIX) {
    const hi = Number.parseInt(text.slice(30, 34), 16)
    const lo = Number.parseInt(text.slice(35, 39), 16)
    if (hi >= 0 && lo >= 0) return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  }
  return text
}

/**
 * A path parameter as the route sees it. A malformed escape (`%zz`, or bytes that are not UTF-8) names nothing, so
 * it becomes the empty string: no id matches it, and the route answers its usual 400/404 for an unknown id.
 */
function decodeParam(raw: string): string {
  if (!raw.includes('%')) return raw.isWellFormed() ? raw : ''
  try {
    return decodeURIComponent(raw)
  } catch {
    return ''
  }
}

const REPLACEMENT = Buffer.from('\ufffd', 'utf8')

/**
 * The body as text. Bytes that are not UTF-8 must not be decoded into U+FFFD (two different values would become
 * one): each becomes a lone surrogate instead, which no UTF-8 can produce, so the body guard refuses the field that
 * holds it, by name (and JSON.parse refuses it anywhere else). When the body also carries a real U+FFFD the two
 * cannot be told apart, and the whole body is refused.
 */
function decodeBody(raw: Buffer): string {
  if (isUtf8(raw)) return raw.toString('utf8')
  if (raw.includes(REPLACEMENT)) throw new ApiError('INVALID_JSON')
  return raw.toString('utf8').replaceAll('\ufffd', '\udfff')
}

/** How a route reads its JSON body. */
export interface JsonOptions {
  /** Top-level best-effort fields: a value that cannot be stored exactly is dropped (as if absent), not refused. */
  lenient?: ReadonlySet<string>
}

/** What a route declared, built once per route (not per request). */
export interface RouteShape {
  paramCount: number
  /** Body cap in bytes; null: the route reads no body. */
  bodyLimit: number | null
  /** Only the headers the route declared are kept (copying every header costs on the cheapest routes). */
  headerNames: readonly string[]
  proxies: ProxyTrust | null
  /** Nesting allowed in a JSON body (PM_JSON_MAX_DEPTH). */
  jsonMaxDepth: number
}

/** Request ids: a random per-process prefix and a counter, in UUID form; unique across instances, ~free to make. */
const ID_PREFIX = randomUUID().slice(0, 24)
let idCounter = 0
function nextRequestId(): string {
  idCounter = (idCounter + 1) % 0x1000000000000
  return ID_PREFIX + idCounter.toString(16).padStart(12, '0')
}

export class Request {
  /** Pombo's own id of this call (X-Pm-Request-Id, the error envelope's request_id): unique, whatever comes in. */
  readonly id = nextRequestId()
  /** The caller's id (a valid X-Request-Id, else a valid traceparent's trace id): logged and answered back. */
  readonly correlationId: string | null
  aborted = false
  /** uWS's request: valid only until the route callback returns. A handler that goes async is detached first. */
  #u: HttpRequest | null
  #res: HttpResponse
  #method?: string
  #path?: string
  #rawQuery?: string
  #params?: string[]
  #headers?: Record<string, string>
  #peerRaw?: ArrayBuffer
  #peer?: string
  #ip?: string
  #query?: URLSearchParams
  #body?: BodyReader
  #json?: unknown
  #onAbort?: Array<() => void>

  constructor(
    res: HttpResponse,
    req: HttpRequest,
    private readonly shape: RouteShape,
  ) {
    this.#u = req
    this.#res = res
    this.correlationId = correlationIdOf(req.getHeader('x-request-id'), req.getHeader('traceparent'))
    if (shape.bodyLimit !== null) this.#body = new BodyReader(res, shape.bodyLimit, req.getHeader('content-length'))
  }

  get bodyLimit(): number | null {
    return this.shape.bodyLimit
  }

  /** Copies out of uWS everything a handler may read later; called before the route callback returns. */
  detach(): void {
    if (!this.#u) return
    void this.method
    void this.path
    void this.rawQuery
    void this.params
    void this.headers
    this.#peerRaw ??= this.#res.getRemoteAddressAsText()
    this.#u = null
  }

  #live(): HttpRequest {
    if (!this.#u) throw new Error('uWS request read after the route callback returned')
    return this.#u
  }

  get method(): string {
    this.#method ??= this.#live().getCaseSensitiveMethod()
    return this.#method
  }

  get path(): string {
    this.#path ??= this.#live().getUrl()
    return this.#path
  }

  get rawQuery(): string {
    this.#rawQuery ??= this.#live().getQuery() ?? ''
    return this.#rawQuery
  }

  get params(): string[] {
    if (!this.#params) {
      const u = this.#live()
      this.#params = []
      for (let i = 0; i < this.shape.paramCount; i++) this.#params.push(decodeParam(u.getParameter(i) ?? ''))
    }
    return this.#params
  }

  get headers(): Readonly<Record<string, string>> {
    if (!this.#headers) {
      const u = this.#live()
      this.#headers = {}
      for (const h of this.shape.headerNames) {
        const v = u.getHeader(h)
        if (v !== '') this.#headers[h] = v
      }
    }
    return this.#headers
  }

  /** The socket's peer address. */
  get peer(): string {
    this.#peerRaw ??= this.#res.getRemoteAddressAsText()
    this.#peer ??= decodeAddress(this.#peerRaw)
    return this.#peer
  }

  /** The client: the peer, or what a trusted proxy says in X-Forwarded-For (PM_TRUST_PROXY). */
  get ip(): string {
    const proxies = this.shape.proxies
    this.#ip ??= proxies ? proxies.clientIp(this.peer, this.headers['x-forwarded-for']) : this.peer
    return this.#ip
  }

  header(name: string): string | undefined {
    return this.headers[name]
  }

  get query(): URLSearchParams {
    this.#query ??= new URLSearchParams(this.rawQuery)
    return this.#query
  }

  markAborted(): void {
    this.aborted = true
    this.#body?.abort()
    if (this.#onAbort) for (const f of this.#onAbort.splice(0)) f()
  }

  /** Runs `f` when the client goes away (streamed answers stop waiting for a socket that will not drain). */
  onAbort(f: () => void): void {
    if (this.aborted) f()
    else {
      this.#onAbort ??= []
      this.#onAbort.push(f)
    }
  }

  /** The raw body; throws 413 when over the route's cap. Routes declared without a body get an empty buffer. */
  async body(): Promise<Buffer> {
    if (!this.#body) return Buffer.alloc(0)
    const s = await this.#body.wait()
    if (s.kind === 'ok') return s.body
    if (s.kind === 'too-large') throw new ApiError('BODY_TOO_LARGE', { limite: this.bodyLimit ?? 0 })
    throw new RequestAborted()
  }

  /**
   * The body parsed as a JSON object; 400 for bytes that are not UTF-8 (decoding would silently turn them into
   * U+FFFD, so two different values would become one), broken JSON, a non-object, or any value that cannot be
   * stored exactly (see json-guard.ts), naming its field.
   */
  async json(o: JsonOptions = {}): Promise<Record<string, unknown>> {
    if (this.#json !== undefined) return this.#json as Record<string, unknown>
    const raw = await this.body()
    let v: unknown
    try {
      v = JSON.parse(decodeBody(raw))
    } catch {
      throw new ApiError('INVALID_JSON')
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ApiError('BODY_NOT_OBJECT')
    const problem = guardBody(v as Record<string, unknown>, this.shape.jsonMaxDepth, o.lenient)
    if (problem) throw fieldError(problem.campo, problem.motivo)
    this.#json = v
    return v as Record<string, unknown>
  }
}

/** The client went away; nothing is written back. */
export class RequestAborted extends Error {}
