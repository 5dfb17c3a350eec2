// Pooled HTTP/2 client sessions per origin: several sessions per host, streams bounded by the server's setting,
// reconnection on GOAWAY, timeouts. Never throws and never hangs: a request that gets no complete answer resolves as a
// failure (status 0) exactly once, classified (types.ts). The sessions are our own HTTP/2 client (session.ts), about a
// twelfth of node:http2's CPU per request; node-pool.ts is node:http2 behind the same interface.
//
// - Sessions are grouped by origin plus an optional `group` (APNs keeps one signing key per connection, because
//   Apple limits provider-token changes per connection: TooManyProviderTokenUpdates).
// - A group opens up to `sessionsPerOrigin` sessions lazily (a new one only when the open ones are ¾ full) and picks
//   the least-loaded session under the peer's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §5.1.2, §6.5.2), read from
//   each SETTINGS frame (none is started before the first); beyond that, requests wait in FIFO order.
// - GOAWAY, close or error retires a session at once (new requests go to a new one); its in-flight streams end as
//   failures, except streams the server refused unprocessed (REFUSED_STREAM, also what a GOAWAY's last-stream-id
//   leaves behind): those are sent again once, since the server did not act on them (RFC 9113 §8.7). A session we
//   ended for the peer's breach of the protocol or of a limit (limits.ts) fails its requests as 'protocol'.
// - A request timing out makes its session answer a PING; no answer in time and the session is destroyed. A session
//   idle for `idleMs` is closed. Requests with the pool's own timeout end in the order they began, so they wait in
//   one list that one timer checks (a timer per request is a measurable share of a delivery's cost); a request
//   with a timeout of its own gets its own timer.
// - Trust: Node's roots plus `ca` when given (tests); a service process also honours NODE_EXTRA_CA_CERTS, which Node
//   adds to its default store at start-up.
import type { OutgoingHttpHeaders } from 'node:http2'
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls'
import { CODE } from './frames'
import { H2Session } from './session'
import { type H2Limits, resolveLimits } from './limits'
import { NodeH2Pool } from './node-pool'
import {
  failure,
  type GroupStats,
  type H2Client,
  type H2Failure,
  type H2PoolOptions,
  H2ProtocolError,
  type H2Result,
  type RequestOptions,
} from './types'

export type { GroupStats, H2Client, H2Failure, H2PoolOptions, H2Response, H2Result, RequestOptions } from './types'

/** How a failure is classified from the error its session ended with. */
function kindOf(err: Error | undefined): H2Failure['failure'] {
  return err instanceof H2ProtocolError ? 'protocol' : 'connection'
}

interface Conn {
  session: H2Session
  active: number
  maxStreams: number
  usable: boolean
  connected: boolean
  pinging: boolean
  lastUsedMs: number
  /** The session's error, if any: the reason its streams died (a TLS verification failure, a reset …). */
  error?: Error
}

interface Group {
  key: string
  origin: string
  conns: Conn[]
  waiting: Pending[]
}

interface Pending {
  group: Group
  headers: OutgoingHttpHeaders
  body: string | Buffer | undefined
  resolve: (r: H2Result) => void
  /** Its own timer (a timeout other than the pool's), or null: it waits in the pool's deadline list. */
  timer: NodeJS.Timeout | null
  /** performance.now() past which it times out. */
  deadline: number
  /** Neighbours in the deadline list, oldest first. */
  prev: Pending | null
  next: Pending | null
  /** The stream it runs on, once started (on `conn`). */
  streamId?: number
  conn?: Conn
  settled: boolean
  resent: boolean
}

/** A request's headers as the session takes them, built once per headers object (a provider reuses its object
 *  for as long as its access token lasts). */
interface RequestHead {
  method: string
  path: string
  pairs: Array<readonly [string, string]>
}
const heads = new WeakMap<OutgoingHttpHeaders, RequestHead>()

function headOf(h: OutgoingHttpHeaders): RequestHead {
  let head = heads.get(h)
  if (head) return head
  const pairs: Array<readonly [string, string]> = []
  let method = 'GET'
  let path = '/'
  for (const key of Object.keys(h)) {
    const v = h[key]
    if (v === undefined) continue
    const name = key.toLowerCase()
    if (name === ':method') method = String(v)
    else if (name === ':path') path = String(v)
    else if (name === ':scheme' || name === ':authority')
      continue // the session's own
    else if (name.startsWith(':')) throw new TypeError(`pseudo-header ${name} is not sent`)
    else if (Array.isArray(v)) for (const x of v) pairs.push([name, String(x)])
    else pairs.push([name, String(v)])
  }
  head = { method, path, pairs }
  heads.set(h, head)
  return head
}

/**
 * The pool callers hold: our sessions (SessionPool) or, with `client: 'node'`, node:http2 behind the same interface
 * (NodeH2Pool). One indirection per request, so no caller's type or code changes with the choice.
 */
export class H2Pool implements H2Client {
  readonly #impl: H2Client
  /** The engine chosen. */
  readonly client: 'pombo' | 'node'

  constructor(o: H2PoolOptions = {}) {
    this.client = o.client ?? 'pombo'
    this.#impl = this.client === 'node' ? new NodeH2Pool(o) : new SessionPool(o)
  }

  request(origin: string, headers: OutgoingHttpHeaders, body?: string | Buffer, o?: RequestOptions): Promise<H2Result> {
    return this.#impl.request(origin, headers, body, o)
  }

  stats(): Record<string, GroupStats> {
    return this.#impl.stats()
  }

  close(): Promise<void> {
    return this.#impl.close()
  }

  get sessionsOpened(): number {
    return this.#impl.sessionsOpened
  }

  get streamsResent(): number {
    return this.#impl.streamsResent
  }
}

/**
 * The roots plus `extra` as one secure context, made once per set of extra certificates: parsing the ~140 roots
 * costs milliseconds of CPU, and every process makes a pool for delivery and one for the dashboard's connection test
 * with the same CAs. `ca` replaces the default store in tls.connect, so the roots are put back beside the extra
 * certificates. A context is only read once made, so pools share it; the few sets a process uses are kept.
 */
const trusts = new Map<string, SecureContext>()
const TRUSTS_KEPT = 8

function trustWith(extra: readonly string[]): SecureContext {
  const key = extra.join('\0')
  let trust = trusts.get(key)
  if (!trust) {
    trust = createSecureContext({ ca: [...rootCertificates, ...extra] })
    if (trusts.size >= TRUSTS_KEPT) trusts.delete(trusts.keys().next().value as string)
    trusts.set(key, trust)
  }
  return trust
}

/** Our own sessions (session.ts), pooled as the header says. */
export class SessionPool implements H2Client {
  readonly #groups = new Map<string, Group>()
  readonly #sessions: number
  readonly #timeoutMs: number
  readonly #maxStreamsCap: number
  readonly #pingTimeoutMs: number
  readonly #idleMs: number
  readonly #sweeper: NodeJS.Timeout
  readonly #expiry: NodeJS.Timeout
  #oldest: Pending | null = null
  #newest: Pending | null = null
  /** The roots plus the extra CAs, parsed once for every session this pool opens; none: Node's default store. */
  readonly #trust: SecureContext | undefined
  readonly #limits: Readonly<H2Limits>
  #closed = false
  /** Sessions ever opened: tests read it to see reconnections. */
  sessionsOpened = 0
  /** Streams the server refused unprocessed and that were sent again. */
  streamsResent = 0

  constructor(o: H2PoolOptions = {}) {
    this.#sessions = Math.max(1, o.sessionsPerOrigin ?? 2)
    this.#timeoutMs = o.timeoutMs ?? 10_000
    this.#maxStreamsCap = o.maxStreamsCap ?? 1_000
    this.#pingTimeoutMs = o.pingTimeoutMs ?? 3_000
    this.#idleMs = o.idleMs ?? 5 * 60_000
    this.#limits = resolveLimits(o.limits) // a bad limit throws here, not at the first connection
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(this.#idleMs, 30_000)).unref()
    // A request times out at most an eighth of its timeout late (and at most 250 ms).
    this.#expiry = setInterval(() => this.#expire(), Math.max(5, Math.min(250, this.#timeoutMs / 8))).unref()
    const extra = o.ca === undefined ? [] : Array.isArray(o.ca) ? o.ca : [o.ca]
    this.#trust = extra.length ? trustWith(extra) : undefined
  }

  /** One request; headers carry the pseudo-headers (':method', ':path'). Resolves, never rejects. */
  request(origin: string, headers: OutgoingHttpHeaders, body?: string | Buffer, o: RequestOptions = {}): Promise<H2Result> {
    if (this.#closed) return Promise.resolve(failure('closed', 'pool closed'))
    const key = o.group === undefined ? origin : `${origin}#${o.group}`
    let group = this.#groups.get(key)
    if (!group) {
      group = { key, origin, conns: [], waiting: [] }
      this.#groups.set(key, group)
    }
    const g = group
    return new Promise<H2Result>((resolve) => {
      const timeoutMs = o.timeoutMs ?? this.#timeoutMs
      const p: Pending = {
        group: g,
        headers,
        body,
        resolve,
        settled: false,
        resent: false,
        timer: null,
        deadline: performance.now() + timeoutMs,
        prev: null,
        next: null,
      }
      if (timeoutMs === this.#timeoutMs) this.#link(p)
      else p.timer = setTimeout(() => this.#timeout(p), timeoutMs)
      try {
        this.#dispatch(p)
      } catch (err) {
        this.#settle(p, failure('connection', (err as Error).message)) // e.g. an origin http2.connect refuses
      }
    })
  }

  /** Live sessions and streams in flight per origin key: for tests and diagnostics. */
  stats(): Record<string, GroupStats> {
    const out: Record<string, GroupStats> = {}
    for (const [k, g] of this.#groups) {
      out[k] = {
        sessions: g.conns.length,
        active: g.conns.reduce((n, c) => n + c.active, 0),
        waiting: g.waiting.length,
        maxStreams: g.conns.map((c) => c.maxStreams),
      }
    }
    return out
  }

  /** Fails whatever is waiting or in flight and destroys every session; later requests resolve 'closed'. */
  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#sweeper)
    clearInterval(this.#expiry)
    for (const g of this.#groups.values()) {
      for (const p of g.waiting.splice(0)) this.#settle(p, failure('closed', 'pool closed'))
      for (const c of g.conns.splice(0)) {
        c.usable = false
        c.session.destroy() // at once: its streams fail, and settle as 'closed' or connection failures
      }
    }
    this.#groups.clear()
  }

  #dispatch(p: Pending): void {
    if (p.settled) return
    if (this.#closed) {
      this.#settle(p, failure('closed', 'pool closed'))
      return
    }
    // A request sent again may belong to a group the sweeper forgot meanwhile: it rejoins the live one.
    const live = this.#groups.get(p.group.key)
    if (live) p.group = live
    else this.#groups.set(p.group.key, p.group)
    const c = this.#pick(p.group)
    if (c) this.#start(c, p)
    else p.group.waiting.push(p)
  }

  /**
   * The least-loaded usable session with a free stream. Another session is opened (while the group is below its size)
   * only when the least-loaded one is three-quarters full: multiplexing is what HTTP/2 is for, and each extra session
   * splits the writes into more TLS records and syscalls (a second, half-idle session costs a worker about a fifth
   * more CPU per delivery). Opening before the last stream is taken hides the new session's handshake.
   */
  #pick(g: Group): Conn | undefined {
    let best: Conn | undefined
    let pending = false
    for (const c of g.conns) {
      if (!c.usable) continue
      if (c.maxStreams === 0)
        pending = true // connecting: its SETTINGS will say how much room it has
      else if (c.active < c.maxStreams && (!best || c.active < best.active)) best = c
    }
    const crowded = !best || best.active * 4 >= best.maxStreams * 3
    // A new session takes streams only once its SETTINGS arrive ('remoteSettings' drains the queue into it).
    if (crowded && !pending && g.conns.length < this.#sessions) this.#open(g)
    return best
  }

  #open(g: Group): void {
    const session = new H2Session(g.origin, { secureContext: this.#trust, limits: this.#limits })
    this.sessionsOpened++
    // No stream is started before the peer's first SETTINGS: its limit may be lower than any default we could guess.
    const c: Conn = {
      session,
      active: 0,
      maxStreams: 0,
      usable: true,
      connected: false,
      pinging: false,
      lastUsedMs: performance.now(),
    }
    g.conns.push(c)
    // A peer that accepts TCP but never finishes TLS or sends SETTINGS would hold the group's queue for ever.
    const giveUpAt = performance.now() + this.#timeoutMs
    const connectTimer = setTimeout(() => {
      // Requests whose own deadline comes no later (the same timeout, started before this session) end as timeouts,
      // as their timers would have ended them first; the rest fail with the connection. Their deadlines are compared
      // with this one, not with the clock: a timer may fire a fraction of a millisecond before performance.now()
      // reaches its deadline.
      this.#expire(giveUpAt)
      if (c.maxStreams === 0) session.destroy(new Error(`no HTTP/2 SETTINGS within ${this.#timeoutMs} ms`))
    }, this.#timeoutMs)
    connectTimer.unref()
    session.onSettings = (maxStreams) => {
      clearTimeout(connectTimer)
      c.connected = true
      c.maxStreams = Math.max(1, Math.min(this.#maxStreamsCap, maxStreams ?? this.#maxStreamsCap))
      this.#drain(g)
    }
    session.onGoaway = () => this.#retire(g, c)
    session.onClose = () => {
      clearTimeout(connectTimer)
      this.#retire(g, c)
    }
    // The failure reaches each request through its stream's handler; a session that never got the peer's SETTINGS
    // also fails the requests waiting for it, so an unreachable host answers at once instead of reconnecting in a loop.
    session.onError = (err: Error) => {
      c.error = err
      this.#retire(g, c, c.connected ? undefined : err)
    }
  }

  #retire(g: Group, c: Conn, connectError?: Error): void {
    if (c.usable) {
      c.usable = false
      g.conns = g.conns.filter((x) => x !== c)
      if (c.active === 0 && !c.session.destroyed) c.session.close()
    }
    if (connectError) {
      const kind = kindOf(connectError)
      for (const p of g.waiting.splice(0)) this.#settle(p, failure(kind, `connect ${g.origin}: ${connectError.message}`))
      return
    }
    this.#drain(g)
  }

  /** Starts waiting requests while some session has room. */
  #drain(g: Group): void {
    while (g.waiting.length > 0 && !this.#closed) {
      const next = g.waiting[0] as Pending
      // Its deadline passed while it waited (the list is checked on a tick): it ends as a timeout, not started late.
      if (next.deadline <= performance.now()) {
        g.waiting.shift()
        this.#timeout(next)
        continue
      }
      const c = this.#pick(g)
      if (!c) return
      this.#start(c, g.waiting.shift() as Pending)
    }
  }

  #start(c: Conn, p: Pending): void {
    let head: RequestHead
    try {
      head = headOf(p.headers)
    } catch (err) {
      this.#settle(p, failure('connection', `request not sendable: ${(err as Error).message}`))
      return
    }
    let id: number
    try {
      id = c.session.request(head.method, head.path, head.pairs, p.body, {
        onResponse: (status, headers, answer) => {
          this.#release(c, p)
          this.#settle(p, { status, headers, body: answer })
          this.#drain(p.group)
        },
        onFail: (code, reason, kind) => {
          this.#release(c, p)
          if (!p.settled) {
            if (code === CODE.REFUSED_STREAM && !p.resent) {
              p.resent = true
              this.streamsResent++
              this.#dispatch(p)
            } else {
              const err = code === undefined ? c.error : undefined
              const why = err && err.message !== reason ? `: ${err.message}` : ''
              this.#settle(
                p,
                failure(
                  kind === 'protocol' ? 'protocol' : kindOf(err),
                  `stream closed without a complete answer (rst ${code ?? 'none'}): ${reason}${why}`,
                ),
              )
            }
          }
          this.#drain(p.group)
        },
      })
    } catch (err) {
      if (err instanceof TypeError) {
        // A header the encoder refuses (a control character in a value): no session could send it.
        this.#settle(p, failure('connection', `request not sendable: ${err.message}`))
        return
      }
      // A session that went away between pick and request: retire it and try the next one (or a new one).
      this.#retire(p.group, c)
      if (p.resent) this.#settle(p, failure('connection', (err as Error).message))
      else {
        p.resent = true
        this.#dispatch(p)
      }
      return
    }
    c.active++
    c.lastUsedMs = performance.now()
    p.streamId = id
    p.conn = c
  }

  /** The request's stream is over (answered, failed or given up): its session has a free stream again. Once. */
  #release(c: Conn, p: Pending): void {
    if (p.streamId === undefined) return
    p.streamId = undefined
    c.active--
    c.lastUsedMs = performance.now()
    if (!c.usable && c.active === 0 && !c.session.destroyed) c.session.close()
  }

  /** Closes sessions idle for idleMs and forgets empty groups. */
  #sweep(): void {
    const now = performance.now()
    for (const [key, g] of this.#groups) {
      for (const c of g.conns) if (c.active === 0 && now - c.lastUsedMs > this.#idleMs) this.#retire(g, c)
      if (g.conns.length === 0 && g.waiting.length === 0) this.#groups.delete(key)
    }
  }

  /** Times out the requests of the deadline list whose deadline passed (the list is oldest first). */
  #expire(now = performance.now()): void {
    while (this.#oldest && this.#oldest.deadline <= now) this.#timeout(this.#oldest)
  }

  #link(p: Pending): void {
    p.prev = this.#newest
    if (this.#newest) this.#newest.next = p
    else this.#oldest = p
    this.#newest = p
  }

  #unlink(p: Pending): void {
    if (p.prev) p.prev.next = p.next
    else if (this.#oldest === p) this.#oldest = p.next
    if (p.next) p.next.prev = p.prev
    else if (this.#newest === p) this.#newest = p.prev
    p.prev = null
    p.next = null
  }

  #timeout(p: Pending): void {
    if (p.settled) return
    const i = p.group.waiting.indexOf(p)
    if (i >= 0) p.group.waiting.splice(i, 1)
    const started = p.streamId !== undefined
    this.#settle(p, failure('timeout', started ? 'no answer in time' : 'no free stream in time'))
    const c = p.conn
    if (c && p.streamId !== undefined) {
      c.session.cancel(p.streamId) // RST_STREAM CANCEL; its handler is not called
      this.#release(c, p)
      this.#drain(p.group)
    }
    if (c) this.#probe(p.group, c)
  }

  /** A slow answer or a dead peer? A PING tells them apart (RFC 9113 §6.7): a session whose TCP path went silent
   *  (no RST, no FIN) would otherwise keep taking requests that all time out. */
  #probe(g: Group, c: Conn): void {
    if (c.pinging || !c.usable || c.session.destroyed) return
    c.pinging = true
    const kill = () => {
      this.#retire(g, c)
      c.session.destroy() // its streams close now and settle as connection failures
    }
    const timer = setTimeout(kill, this.#pingTimeoutMs)
    try {
      c.session.ping((err) => {
        clearTimeout(timer)
        c.pinging = false
        if (err && !c.session.destroyed) kill()
      })
    } catch {
      clearTimeout(timer)
      kill()
    }
  }

  #settle(p: Pending, r: H2Result): void {
    if (p.settled) return
    p.settled = true
    if (p.timer) clearTimeout(p.timer)
    else this.#unlink(p)
    p.resolve(r)
  }
}
