// node:http2 (nghttp2) behind the pool's interface (types.ts H2Client): the same requests, options, results and
// classification as H2Pool, so a caller switches between them with nothing else changed (a service does it with
// PM_PROVIDER_HTTP2=node). It costs about ten times our client's CPU per request (bench/h2client.ts) and is kept as
// the reference and the way out should our client misbehave.
//
// Limits (limits.ts) map to node:http2's own where it has them: maxHeaderListPairs, maxSettings, maxOutstandingPings,
// the announced SETTINGS (no push, the stream window, the header list size) and the connection window; nghttp2 keeps
// its own CONTINUATION (8) and outbound-acknowledgement (1,000) limits. The SETTINGS deadline and the answer body cap
// are enforced here. An open header block's deadline has no counterpart (nghttp2 bounds the frames instead).
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import { rootCertificates } from 'node:tls'
import { CODE } from './frames'
import { type H2Limits, resolveLimits } from './limits'
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

interface Conn {
  session: ClientHttp2Session
  active: number
  usable: boolean
  pinging: boolean
  lastUsedMs: number
  /** Why the session ended, once it has: the reason its streams died. */
  error?: Error
}

interface Group {
  origin: string
  conns: Conn[]
}

/** Errors node:http2 raises when the peer broke the protocol (its GOAWAY with an error, nghttp2's own checks). */
const PROTOCOL_ERRORS = new Set(['ERR_HTTP2_ERROR', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_INVALID_SETTING_VALUE'])
/** RST_STREAM codes that say the stream broke the protocol (ours, or the peer's answer to a malformed stream). */
const PROTOCOL_RST = new Set<number>([
  CODE.PROTOCOL_ERROR,
  CODE.FLOW_CONTROL_ERROR,
  CODE.FRAME_SIZE_ERROR,
  CODE.COMPRESSION_ERROR,
  CODE.ENHANCE_YOUR_CALM,
])

function kindOf(err: Error | undefined, rst?: number): H2Failure['failure'] {
  if (err instanceof H2ProtocolError) return 'protocol'
  if (rst !== undefined && PROTOCOL_RST.has(rst)) return 'protocol'
  const code = (err as { code?: string } | undefined)?.code
  return code && PROTOCOL_ERRORS.has(code) ? 'protocol' : 'connection'
}

export class NodeH2Pool implements H2Client {
  readonly #groups = new Map<string, Group>()
  readonly #sessions: number
  readonly #timeoutMs: number
  readonly #maxStreamsCap: number
  readonly #pingTimeoutMs: number
  readonly #idleMs: number
  readonly #limits: Readonly<H2Limits>
  readonly #ca: string[] | undefined
  readonly #sweeper: NodeJS.Timeout
  /** Requests not yet settled, so close() can end them. */
  readonly #pending = new Set<(r: H2Result) => void>()
  #closed = false
  sessionsOpened = 0
  streamsResent = 0

  constructor(o: H2PoolOptions = {}) {
    this.#sessions = Math.max(1, o.sessionsPerOrigin ?? 2)
    this.#timeoutMs = o.timeoutMs ?? 10_000
    this.#maxStreamsCap = o.maxStreamsCap ?? 1_000
    this.#pingTimeoutMs = o.pingTimeoutMs ?? 3_000
    this.#idleMs = o.idleMs ?? 5 * 60_000
    this.#limits = resolveLimits(o.limits)
    const extra = o.ca === undefined ? [] : Array.isArray(o.ca) ? o.ca : [o.ca]
    this.#ca = extra.length ? [...rootCertificates, ...extra] : undefined
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(this.#idleMs, 30_000)).unref()
  }

  request(origin: string, headers: OutgoingHttpHeaders, body?: string | Buffer, o: RequestOptions = {}): Promise<H2Result> {
    if (this.#closed) return Promise.resolve(failure('closed', 'pool closed'))
    const key = o.group === undefined ? origin : `${origin}#${o.group}`
    const timeoutMs = o.timeoutMs ?? this.#timeoutMs
    return new Promise<H2Result>((resolve) => {
      let settled = false
      const settle = (r: H2Result) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        this.#pending.delete(settle)
        resolve(r)
      }
      this.#pending.add(settle)
      let cancel = () => {}
      const timer = setTimeout(() => {
        settle(failure('timeout', 'no answer in time'))
        cancel()
      }, timeoutMs)
      const attempt = (resent: boolean) => {
        if (settled) return
        if (this.#closed) return settle(failure('closed', 'pool closed'))
        let c: Conn
        try {
          c = this.#pick(key, origin)
        } catch (err) {
          return settle(failure('connection', (err as Error).message)) // an origin http2.connect refuses
        }
        let stream: http2.ClientHttp2Stream
        try {
          stream = c.session.request(headers, { endStream: body === undefined || body.length === 0 })
        } catch (err) {
          // A session that went away between pick and request, or headers node will not send.
          this.#retire(key, c)
          if (err instanceof TypeError || resent) return settle(failure('connection', (err as Error).message))
          return attempt(true)
        }
        c.active++
        c.lastUsedMs = performance.now()
        let released = false
        const release = () => {
          if (released) return
          released = true
          c.active--
          c.lastUsedMs = performance.now()
          if (!c.usable && c.active === 0 && !c.session.destroyed) c.session.close()
        }
        cancel = () => {
          if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL)
          this.#probe(key, c)
        }
        let status = 0
        let answerHeaders: IncomingHttpHeaders = {}
        const chunks: Buffer[] = []
        let bytes = 0
        stream.on('response', (h) => {
          status = Number(h[':status'])
          answerHeaders = h
        })
        stream.on('data', (chunk: Buffer) => {
          bytes += chunk.length
          const cap = this.#limits.maxResponseBodyBytes
          if (bytes > cap) {
            settle(failure('protocol', `answer body over ${cap} bytes (maxResponseBodyBytes)`))
            stream.close(http2.constants.NGHTTP2_CANCEL)
          } else chunks.push(chunk)
        })
        // A stream can end with no answer head (its session destroyed under it): 'close' then says why.
        stream.on('end', () => status > 0 && settle({ status, headers: answerHeaders, body: Buffer.concat(chunks) }))
        stream.on('error', () => {}) // the reason is read at 'close', with the stream's code
        stream.on('close', () => {
          release()
          if (settled) return
          const rst = stream.rstCode
          if (rst === CODE.REFUSED_STREAM && !resent) {
            this.streamsResent++
            return attempt(true) // not processed by the server: safe to send again (RFC 9113 §8.7)
          }
          const why = c.error ? `: ${c.error.message}` : ''
          settle(
            failure(
              rst !== undefined && PROTOCOL_RST.has(rst) ? 'protocol' : kindOf(c.error),
              `stream closed without a complete answer (rst ${rst ?? 'none'})${why}`,
            ),
          )
        })
        if (body !== undefined && body.length > 0) stream.end(body)
      }
      attempt(false)
    })
  }

  stats(): Record<string, GroupStats> {
    const out: Record<string, GroupStats> = {}
    for (const [k, g] of this.#groups) {
      out[k] = {
        sessions: g.conns.length,
        active: g.conns.reduce((n, c) => n + c.active, 0),
        waiting: 0, // nghttp2 holds streams past the peer's limit itself
        maxStreams: g.conns.map((c) => this.#maxStreams(c)),
      }
    }
    return out
  }

  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#sweeper)
    for (const settle of [...this.#pending]) settle(failure('closed', 'pool closed'))
    for (const g of this.#groups.values()) for (const c of g.conns.splice(0)) c.session.destroy()
    this.#groups.clear()
  }

  #maxStreams(c: Conn): number {
    const peer = c.session.remoteSettings?.maxConcurrentStreams
    return Math.max(1, Math.min(this.#maxStreamsCap, peer ?? this.#maxStreamsCap))
  }

  /** The least-loaded usable session; another opens while the group is below its size and that one is ¾ full. */
  #pick(key: string, origin: string): Conn {
    let g = this.#groups.get(key)
    if (!g) {
      g = { origin, conns: [] }
      this.#groups.set(key, g)
    }
    let best: Conn | undefined
    for (const c of g.conns) if (c.usable && (!best || c.active < best.active)) best = c
    if (!best || (best.active * 4 >= this.#maxStreams(best) * 3 && g.conns.length < this.#sessions)) {
      const fresh = this.#open(key, g)
      if (!best || fresh.active < best.active) best = fresh
    }
    return best
  }

  #open(key: string, g: Group): Conn {
    const l = this.#limits
    const session = http2.connect(g.origin, {
      ca: this.#ca,
      maxHeaderListPairs: l.maxHeaderListPairs,
      maxSettings: l.maxSettingsEntries,
      maxOutstandingPings: l.maxOutstandingPings,
      settings: {
        enablePush: false,
        initialWindowSize: l.maxResponseBodyBytes + 1,
        maxHeaderListSize: l.maxHeaderListBytes,
      },
    })
    this.sessionsOpened++
    const c: Conn = { session, active: 0, usable: true, pinging: false, lastUsedMs: performance.now() }
    g.conns.push(c)
    let peerSettings = false
    let acked = false
    const settingsTimer = setTimeout(() => {
      const what = peerSettings ? 'our SETTINGS were not acknowledged' : 'no SETTINGS from the peer'
      const err = new H2ProtocolError(
        CODE.SETTINGS_TIMEOUT,
        `HTTP/2 SETTINGS_TIMEOUT: ${what} within ${l.settingsTimeoutMs} ms (settingsTimeoutMs)`,
      )
      c.error = err
      session.destroy(err, CODE.SETTINGS_TIMEOUT)
    }, l.settingsTimeoutMs)
    settingsTimer.unref()
    const settingsDone = () => {
      if (peerSettings && acked) clearTimeout(settingsTimer)
    }
    session.once('connect', () => session.setLocalWindowSize(l.connectionWindowBytes))
    session.once('remoteSettings', () => {
      peerSettings = true
      settingsDone()
    })
    session.once('localSettings', () => {
      acked = true
      settingsDone()
    })
    session.on('goaway', () => this.#retire(key, c))
    session.on('error', (err) => {
      c.error ??= err
      this.#retire(key, c)
    })
    session.on('close', () => {
      clearTimeout(settingsTimer)
      this.#retire(key, c)
    })
    return c
  }

  #retire(key: string, c: Conn): void {
    if (!c.usable) return
    c.usable = false
    const g = this.#groups.get(key)
    if (g) g.conns = g.conns.filter((x) => x !== c)
    if (c.active === 0 && !c.session.destroyed) c.session.close()
  }

  /** A timed-out request: the session must answer a PING in time or it is destroyed (a silent TCP path). */
  #probe(key: string, c: Conn): void {
    if (c.pinging || !c.usable || c.session.destroyed) return
    c.pinging = true
    const kill = () => {
      this.#retire(key, c)
      c.session.destroy()
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

  #sweep(): void {
    const now = performance.now()
    for (const [key, g] of this.#groups) {
      for (const c of [...g.conns]) if (c.active === 0 && now - c.lastUsedMs > this.#idleMs) this.#retire(key, c)
      if (g.conns.length === 0) this.#groups.delete(key)
    }
  }
}
