// One HTTP/2 client connection (RFC 9113), written for a push worker's shape of traffic: thousands of small POSTs a
// second on few connections. node:http2 costs ~95 µs of CPU on each such request (a Duplex stream, an async resource
// and several events per request) against ~8 µs here: the frames of every request started in one event-loop turn go
// out in one write, and an answer is one callback. README.md maps each RFC section to the code below.
//
// What it does, and does not:
// - TLS with ALPN `h2` (or cleartext prior knowledge for http: origins), the preface, our SETTINGS (no push, the
//   stream window and header list size of limits.ts) and the connection window of limits.ts.
// - Requests: HEADERS (HPACK, hpack.ts) then DATA cut to the peer's SETTINGS_MAX_FRAME_SIZE and held while the peer's
//   connection or stream window is short (§6.9), resumed by its WINDOW_UPDATE. Writes stop while the socket's buffer
//   is full and resume on 'drain'.
// - Answers: checked (fields.ts), informational (1xx) heads skipped, trailers checked and dropped, a body longer than
//   the limit refused (RST_STREAM CANCEL, that request alone fails). Every header block is decoded, also for streams
//   already given up, so the HPACK state stays in step with the peer.
// - The peer is held to every limit of limits.ts and to the protocol: any breach is a connection error, GOAWAY with
//   its code, then the socket is dropped, every stream fails once ('protocol'), and no exception leaves the session.
// - GOAWAY from the peer: no new streams; streams above its last-stream-id end as REFUSED_STREAM (not processed, safe
//   to send again); with an error code the connection is dropped, as node:http2 does. RST_STREAM ends its stream.
// - PING answered; `ping()` asks one (the pool's probe of a silent connection). Priority signals are ignored.

import type { IncomingHttpHeaders } from 'node:http2'
import net, { type Socket } from 'node:net'
import tls from 'node:tls'
import { responseHead, trailersProblem } from './fields'
import {
  CODE,
  codeName,
  DEFAULT_MAX_FRAME,
  DEFAULT_WINDOW,
  FLAG,
  FRAME,
  frame,
  goawayFrame,
  HEADER_BYTES,
  MAX_WINDOW,
  PREFACE,
  rstStreamFrame,
  SETTING,
  settingsFrame,
  windowUpdateFrame,
  writeHeader,
} from './frames'
import { HeaderListLimitError, HpackDecoder, HpackEncoder, HpackError } from './hpack'
import { type H2Limits, resolveLimits } from './limits'
import { H2ProtocolError } from './types'

/** How a stream ends: exactly one of these is called, once, unless the caller cancelled it first. */
export interface StreamHandler {
  onResponse(status: number, headers: IncomingHttpHeaders, body: Buffer): void
  /**
   * No complete answer. `code`: the peer's RST_STREAM code (REFUSED_STREAM: not processed), or undefined when we
   * ended it. `kind`: 'protocol' when the peer broke the protocol or a limit, 'connection' otherwise.
   */
  onFail(code: number | undefined, reason: string, kind: 'connection' | 'protocol'): void
}

interface Stream {
  id: number
  h: StreamHandler
  head: boolean
  /** What the peer's flow control still lets us send on this stream. */
  sendWindow: number
  /** What ours still lets the peer send on it (never reopened: a whole answer fits in the first window). */
  recvWindow: number
  /** DATA bytes (padding included) counted against our connection window and not yet released. */
  held: number
  /** Request body not yet sent (held by flow control), from `bodyAt`. */
  body: Buffer | null
  bodyAt: number
  blocked: boolean
  status: number
  headers: IncomingHttpHeaders | null
  contentLength: number
  chunks: Buffer[]
  bytes: number
}

export interface SessionOptions {
  /** Trusted CAs (PEM) in place of Node's default store; parsed again for every session. */
  ca?: string[]
  /** A context made once for many sessions, in place of `ca` (the pool's: the roots plus its extra CAs). Parsing
   *  ~150 root certificates for every connection cost more CPU than the handshake. */
  secureContext?: tls.SecureContext
  /** What the peer may make this session hold or do; unset ones take their defaults (limits.ts). */
  limits?: Partial<H2Limits>
}

const MAX_STREAM_ID = 2 ** 31 - 1
/** After our GOAWAY, the socket gets this long to write what is queued before it is destroyed anyway: a peer that
 *  stopped reading cannot hold it open. */
const CLOSE_GRACE_MS = 1_000

export class H2Session {
  /** The peer's SETTINGS arrived (each time): its stream limit, undefined when it set none. */
  onSettings: (maxConcurrentStreams: number | undefined) => void = () => {}
  /** The peer sent GOAWAY, or stream ids ran out: no new requests here. */
  onGoaway: () => void = () => {}
  /** The connection failed (before `onClose`); an H2ProtocolError when we ended it for the peer's breach. */
  onError: (err: Error) => void = () => {}
  /** The socket is gone; every stream has ended. Called once. */
  onClose: () => void = () => {}

  readonly #socket: Socket
  readonly #limits: Readonly<H2Limits>
  readonly #streams = new Map<number, Stream>()
  readonly #encoder = new HpackEncoder(undefined, { secondSight: true })
  readonly #decoder = new HpackDecoder()
  readonly #authority: string
  readonly #scheme: string
  /** The stream window we announce: a whole answer body, plus one byte so that one too long is seen as such. */
  readonly #streamWindow: number
  #nextId = 1
  #out: Buffer[] = []
  #flushScheduled = false
  /** The socket's buffer is full: frames wait in #out for 'drain'. */
  #writeBlocked = false
  /** Frames we owe the peer (acknowledgements, resets) in #out, not yet written. */
  #controlQueued = 0
  #in: Buffer | null = null
  #connSendWindow = DEFAULT_WINDOW
  #peerInitialWindow = DEFAULT_WINDOW
  #peerMaxFrame = DEFAULT_MAX_FRAME
  #peerMaxStreams: number | undefined
  /** What our connection window still lets the peer send. */
  #connRecvWindow: number
  /** Bytes released (their streams ended) and not yet given back by WINDOW_UPDATE. */
  #released = 0
  /** Streams waiting for window, oldest first. */
  #blocked: Stream[] = []
  /** A header block being received across CONTINUATION frames. */
  #block: { stream: number; endStream: boolean; parts: Buffer[]; bytes: number; frames: number } | null = null
  #blockTimer: NodeJS.Timeout | null = null
  #pings: Array<{ payload: Buffer; cb: (err?: Error) => void }> = []
  #pingSeq = 0
  /** The peer's first SETTINGS arrived; before it, any other frame is a connection error (§3.4). */
  #peerSettings = false
  /** Our SETTINGS not yet acknowledged. */
  #settingsUnacked = 0
  #settingsTimer: NodeJS.Timeout | null = null
  #goaway = false
  #closing = false
  #destroyed = false
  #closeCalled = false
  /** The preface is written: frames may follow. */
  #started = false

  constructor(origin: string, o: SessionOptions = {}) {
    this.#limits = resolveLimits(o.limits)
    this.#streamWindow = this.#limits.maxResponseBodyBytes + 1
    this.#connRecvWindow = this.#limits.connectionWindowBytes
    const u = new URL(origin)
    this.#scheme = u.protocol === 'http:' ? 'http' : 'https'
    this.#authority = u.host
    const port = Number(u.port) || (this.#scheme === 'http' ? 80 : 443)
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname
    if (this.#scheme === 'http') {
      this.#socket = net.connect({ host, port })
      this.#socket.once('connect', () => this.#start())
    } else {
      const trust = o.secureContext ? { secureContext: o.secureContext } : { ca: o.ca }
      const s = tls.connect({ host, port, ...trust, ALPNProtocols: ['h2'], servername: net.isIP(host) ? undefined : host })
      s.once('secureConnect', () => {
        if (s.alpnProtocol !== 'h2')
          return this.destroy(new Error(`${origin} did not agree to HTTP/2 (ALPN: ${s.alpnProtocol || 'none'})`))
        this.#start()
      })
      this.#socket = s
    }
    this.#socket.setNoDelay(true)
    this.#socket.on('data', (chunk: Buffer) => this.#guarded(() => this.#read(chunk)))
    this.#socket.on('drain', () => this.#guarded(() => this.#drained()))
    this.#socket.on('error', (err) => this.destroy(err))
    this.#socket.on('close', () => this.destroy())
  }

  get destroyed(): boolean {
    return this.#destroyed
  }

  /** No new request may start (GOAWAY received, close() called, ids exhausted, or destroyed). */
  get closing(): boolean {
    return this.#closing || this.#goaway || this.#destroyed
  }

  /**
   * Starts a request; throws when the session takes no new streams. `headers` are lower-case [name, value] pairs with
   * `:method` and `:path`; `:scheme` and `:authority` are this connection's. Answers through `h`, never synchronously.
   */
  request(
    method: string,
    path: string,
    headers: ReadonlyArray<readonly [string, string]>,
    body: Buffer | string | undefined,
    h: StreamHandler,
  ): number {
    if (this.closing) throw new Error('HTTP/2 session closing')
    const pairs: Array<readonly [string, string]> = [
      [':method', method],
      [':scheme', this.#scheme],
      [':authority', this.#authority],
      [':path', path],
      ...headers,
    ]
    const block = this.#encoder.encode(pairs) // throws (TypeError) before any state changes on a header we may not send
    const id = this.#nextId
    this.#nextId += 2
    const size = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length
    const hasBody = size > 0
    const s: Stream = {
      id,
      h,
      head: method === 'HEAD',
      sendWindow: this.#peerInitialWindow,
      recvWindow: this.#streamWindow,
      held: 0,
      body: null,
      bodyAt: 0,
      blocked: false,
      status: 0,
      headers: null,
      contentLength: -1,
      chunks: [],
      bytes: 0,
    }
    this.#streams.set(id, s)
    this.#pushHeaders(id, block, !hasBody)
    if (typeof body === 'string' && hasBody && size <= Math.min(this.#connSendWindow, s.sendWindow, this.#peerMaxFrame)) {
      // The usual provider request: its text is written straight into its one DATA frame, with no buffer between.
      const b = Buffer.allocUnsafe(HEADER_BYTES + size)
      writeHeader(b, 0, size, FRAME.DATA, FLAG.END_STREAM, id)
      b.write(body, HEADER_BYTES)
      this.#push(b)
      s.sendWindow -= size
      this.#connSendWindow -= size
    } else if (hasBody) {
      s.body = typeof body === 'string' ? Buffer.from(body) : (body as Buffer)
      this.#sendBody(s)
    }
    if (this.#nextId > MAX_STREAM_ID) {
      this.#closing = true
      queueMicrotask(() => this.onGoaway())
    }
    return id
  }

  /** Gives a stream up (the pool timed it out): RST_STREAM CANCEL, and its handler is not called. */
  cancel(id: number): void {
    const s = this.#streams.get(id)
    if (!s) return
    this.#forget(s)
    if (!this.#destroyed) this.#push(rstStreamFrame(id, CODE.CANCEL))
    this.#maybeEnd()
  }

  /** Streams started and not ended. */
  get active(): number {
    return this.#streams.size
  }

  /** Asks the peer for a PING acknowledgement; `cb` gets an error if the session dies first. Throws when destroyed or
   *  when maxOutstandingPings are already waiting. */
  ping(cb: (err?: Error) => void): void {
    if (this.#destroyed) throw new Error('HTTP/2 session destroyed')
    if (this.#pings.length >= this.#limits.maxOutstandingPings)
      throw new Error(`${this.#pings.length} PINGs already wait for their acknowledgement`)
    const payload = Buffer.alloc(8)
    payload.writeUInt32BE(++this.#pingSeq >>> 0, 4)
    this.#pings.push({ payload, cb })
    this.#push(frame(FRAME.PING, 0, 0, payload))
  }

  /** Graceful: no new streams; the connection ends once the open ones have. */
  close(): void {
    if (this.#destroyed || this.#closeCalled) return
    this.#closeCalled = true
    this.#closing = true
    this.#maybeEnd()
  }

  /** Now: every open stream fails, the socket is dropped (frames already queued, a GOAWAY say, still go out). */
  destroy(err?: Error): void {
    this.#teardown(err, false)
  }

  #teardown(err: Error | undefined, graceful: boolean): void {
    if (this.#destroyed) return
    this.#destroyed = true
    this.#clearTimers()
    if (err) this.onError(err)
    const why = err ? err.message : 'connection closed'
    const kind = err instanceof H2ProtocolError ? 'protocol' : 'connection'
    const streams = [...this.#streams.values()]
    this.#streams.clear()
    this.#blocked = []
    this.#block = null
    for (const s of streams) s.h.onFail(undefined, why, kind)
    for (const p of this.#pings.splice(0)) p.cb(new Error(why))
    const out = this.#out
    this.#out = []
    const socket = this.#socket
    if (this.#started && !socket.destroyed && (graceful || out.length > 0)) {
      if (out.length > 0) socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out))
      socket.end() // closed once what is queued (a GOAWAY) is written …
      setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref() // … or after the grace, if the peer does not read
    } else socket.destroy()
    this.onClose()
  }

  /** Runs `fn`; whatever it throws ends the session as an internal error instead of leaving through the socket. */
  #guarded(fn: () => void): void {
    try {
      fn()
    } catch (err) {
      this.#connectionError(CODE.INTERNAL_ERROR, `internal error: ${(err as Error)?.message ?? String(err)}`)
    }
  }

  #clearTimers(): void {
    if (this.#settingsTimer) clearTimeout(this.#settingsTimer)
    if (this.#blockTimer) clearTimeout(this.#blockTimer)
    this.#settingsTimer = null
    this.#blockTimer = null
  }

  #start(): void {
    this.#started = true
    const conn = this.#limits.connectionWindowBytes
    const preface = [
      PREFACE,
      settingsFrame([
        [SETTING.ENABLE_PUSH, 0],
        [SETTING.INITIAL_WINDOW_SIZE, this.#streamWindow],
        [SETTING.MAX_HEADER_LIST_SIZE, this.#limits.maxHeaderListBytes],
      ]),
    ]
    if (conn > DEFAULT_WINDOW) preface.push(windowUpdateFrame(0, conn - DEFAULT_WINDOW))
    this.#settingsUnacked = 1
    this.#socket.write(Buffer.concat(preface))
    // One deadline for both: the peer's SETTINGS first (§3.4) and its acknowledgement of ours (§6.5.3).
    const ms = this.#limits.settingsTimeoutMs
    this.#settingsTimer = setTimeout(() => {
      this.#settingsTimer = null
      const what = this.#peerSettings ? 'our SETTINGS were not acknowledged' : 'no SETTINGS from the peer'
      this.#guarded(() => this.#connectionError(CODE.SETTINGS_TIMEOUT, `${what} within ${ms} ms (settingsTimeoutMs)`))
    }, ms)
    this.#settingsTimer.unref()
    if (this.#out.length > 0) this.#flush()
  }

  /** Frames wait for the end of the turn, so every request started in it goes out in one write. */
  #push(b: Buffer): void {
    this.#out.push(b)
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#guarded(() => this.#flush()))
    }
  }

  /** A frame we owe the peer: past maxQueuedControlFrames unwritten, the peer asks faster than it reads (a flood). */
  #pushControl(b: Buffer): void {
    if (++this.#controlQueued > this.#limits.maxQueuedControlFrames) {
      this.#connectionError(
        CODE.ENHANCE_YOUR_CALM,
        `more than ${this.#limits.maxQueuedControlFrames} acknowledgements and resets queued (maxQueuedControlFrames)`,
      )
      return
    }
    this.#push(b)
  }

  #flush(): void {
    this.#flushScheduled = false
    if (this.#destroyed || this.#out.length === 0 || this.#writeBlocked) return
    if (!this.#started) return // the preface goes first: #start flushes what waited
    const out = this.#out
    this.#out = []
    this.#controlQueued = 0
    // Backpressure: a full socket buffer holds further writes until 'drain' (#drained), so what a peer that does not
    // read makes us owe stays in #out, where the control-frame limit sees it.
    if (!this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out))) this.#writeBlocked = true
  }

  #drained(): void {
    if (!this.#writeBlocked) return
    this.#writeBlocked = false
    this.#flush()
  }

  #pushHeaders(id: number, block: Buffer, endStream: boolean): void {
    const max = this.#peerMaxFrame
    if (block.length <= max) {
      const b = Buffer.allocUnsafe(HEADER_BYTES + block.length)
      writeHeader(b, 0, block.length, FRAME.HEADERS, FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0), id)
      block.copy(b, HEADER_BYTES)
      this.#push(b)
      return
    }
    for (let at = 0; at < block.length; at += max) {
      const part = block.subarray(at, Math.min(block.length, at + max))
      const last = at + max >= block.length
      const type = at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION
      const flags = (last ? FLAG.END_HEADERS : 0) | (at === 0 && endStream ? FLAG.END_STREAM : 0)
      this.#push(frame(type, flags, id, part))
    }
  }

  /** Sends what the windows allow of a stream's body; the rest waits in #blocked for a WINDOW_UPDATE. */
  #sendBody(s: Stream): void {
    const body = s.body as Buffer
    while (s.bodyAt < body.length) {
      const n = Math.min(body.length - s.bodyAt, this.#connSendWindow, s.sendWindow, this.#peerMaxFrame)
      if (n <= 0) {
        if (!s.blocked) {
          s.blocked = true
          this.#blocked.push(s)
        }
        return
      }
      const end = s.bodyAt + n === body.length
      const b = Buffer.allocUnsafe(HEADER_BYTES + n)
      writeHeader(b, 0, n, FRAME.DATA, end ? FLAG.END_STREAM : 0, s.id)
      body.copy(b, HEADER_BYTES, s.bodyAt, s.bodyAt + n)
      this.#push(b)
      s.bodyAt += n
      s.sendWindow -= n
      this.#connSendWindow -= n
    }
    s.body = null
  }

  #unblock(): void {
    const waiting = this.#blocked
    this.#blocked = []
    for (const s of waiting) {
      s.blocked = false
      if (this.#streams.get(s.id) === s && s.body) this.#sendBody(s)
    }
  }

  #read(chunk: Buffer): void {
    let buf = this.#in ? Buffer.concat([this.#in, chunk]) : chunk
    this.#in = null
    let at = 0
    while (!this.#destroyed && buf.length - at >= HEADER_BYTES) {
      const length = (buf[at] as number) * 65536 + (buf[at + 1] as number) * 256 + (buf[at + 2] as number)
      if (length > DEFAULT_MAX_FRAME) {
        // We never announce a larger SETTINGS_MAX_FRAME_SIZE (§4.2).
        this.#connectionError(CODE.FRAME_SIZE_ERROR, `frame of ${length} bytes`)
        return
      }
      if (buf.length - at < HEADER_BYTES + length) break
      const type = buf[at + 3] as number
      const flags = buf[at + 4] as number
      const stream = buf.readUInt32BE(at + 5) & 0x7fffffff
      const payload = buf.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length)
      at += HEADER_BYTES + length
      this.#frame(type, flags, stream, payload)
    }
    if (at < buf.length && !this.#destroyed) {
      buf = buf.subarray(at)
      // The remainder is copied: holding a slice would keep the whole chunk alive.
      this.#in = Buffer.from(buf)
    }
  }

  #frame(type: number, flags: number, stream: number, p: Buffer): void {
    if (this.#block && type !== FRAME.CONTINUATION) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'header block interrupted')
      return
    }
    if (!this.#peerSettings && (type !== FRAME.SETTINGS || flags & FLAG.ACK)) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'the first frame from the peer is not SETTINGS')
      return
    }
    switch (type) {
      case FRAME.DATA:
        this.#data(flags, stream, p)
        return
      case FRAME.HEADERS:
        this.#headers(flags, stream, p)
        return
      case FRAME.CONTINUATION:
        this.#continuation(flags, stream, p)
        return
      case FRAME.RST_STREAM:
        this.#rst(stream, p)
        return
      case FRAME.SETTINGS:
        this.#settings(flags, stream, p)
        return
      case FRAME.PING:
        this.#pingFrame(flags, stream, p)
        return
      case FRAME.GOAWAY:
        this.#goawayFrame(stream, p)
        return
      case FRAME.WINDOW_UPDATE:
        this.#windowUpdate(stream, p)
        return
      case FRAME.PUSH_PROMISE:
        this.#connectionError(CODE.PROTOCOL_ERROR, 'PUSH_PROMISE with push disabled')
        return
      case FRAME.PRIORITY:
        if (stream === 0) this.#connectionError(CODE.PROTOCOL_ERROR, 'PRIORITY on stream 0')
        else if (p.length !== 5) this.#connectionError(CODE.FRAME_SIZE_ERROR, 'PRIORITY size')
        return // otherwise ignored (§5.3.2)
      default:
        return // unknown types are ignored (§5.5)
    }
  }

  /** A stream id the peer may not name: one of its own (we take no push) or one of ours not yet opened (§5.1). */
  #idle(id: number): boolean {
    return (id & 1) === 0 || id >= this.#nextId
  }

  /** The payload without its padding (§6.1, §6.2); null when the padding is malformed. */
  #unpad(flags: number, p: Buffer): Buffer | null {
    if (!(flags & FLAG.PADDED)) return p
    if (p.length < 1) return null
    const pad = p[0] as number
    if (pad >= p.length) return null
    return p.subarray(1, p.length - pad)
  }

  #data(flags: number, id: number, p: Buffer): void {
    if (id === 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'DATA on stream 0')
      return
    }
    // Padding counts too (§6.9.1). Past our window the peer ignored flow control.
    this.#connRecvWindow -= p.length
    if (this.#connRecvWindow < 0) {
      this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'DATA beyond the connection window (connectionWindowBytes)')
      return
    }
    const s = this.#streams.get(id)
    if (!s) {
      if (this.#idle(id)) this.#connectionError(CODE.PROTOCOL_ERROR, 'DATA on an idle stream')
      else this.#release(p.length) // a stream given up: its frames are only counted
      return
    }
    s.recvWindow -= p.length
    s.held += p.length
    if (s.recvWindow < 0) {
      this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'DATA beyond the stream window (maxResponseBodyBytes + 1)')
      return
    }
    const body = this.#unpad(flags, p)
    if (!body) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'bad DATA padding')
      return
    }
    if (!s.headers) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'DATA before the response headers')
      return
    }
    s.bytes += body.length
    if (s.bytes > this.#limits.maxResponseBodyBytes) {
      this.#streamFailed(s, CODE.CANCEL, `answer body over ${this.#limits.maxResponseBodyBytes} bytes (maxResponseBodyBytes)`)
      return
    }
    if (body.length > 0) s.chunks.push(Buffer.from(body))
    if (flags & FLAG.END_STREAM) this.#complete(s)
    else if (this.#connRecvWindow < DEFAULT_MAX_FRAME) this.#relieve()
  }

  /** Gives answer bytes back to the peer's view of our connection window, a quarter of it at a time. */
  #release(n: number): void {
    this.#released += n
    if (this.#released >= this.#limits.connectionWindowBytes / 4) this.#giveBack()
  }

  #giveBack(): void {
    if (this.#released === 0 || this.#destroyed) return
    this.#push(windowUpdateFrame(0, this.#released))
    this.#connRecvWindow += this.#released
    this.#released = 0
  }

  /**
   * Unfinished answers fill the connection window: none can finish while the peer has no room to send, so the one
   * holding the most is refused (a limit of ours, its request fails as 'protocol') until a frame fits again. Provider
   * answers are one short frame each: only a peer dribbling long answers on many streams gets here.
   */
  #relieve(): void {
    while (!this.#destroyed && this.#connRecvWindow < DEFAULT_MAX_FRAME) {
      if (this.#released > 0) {
        this.#giveBack()
        continue
      }
      let most: Stream | undefined
      for (const s of this.#streams.values()) if (s.held > (most?.held ?? 0)) most = s
      if (!most) return
      const cap = this.#limits.connectionWindowBytes
      this.#streamFailed(most, CODE.CANCEL, `unfinished answers over ${cap} bytes (connectionWindowBytes)`)
    }
  }

  #headers(flags: number, id: number, p: Buffer): void {
    if (id === 0 || this.#idle(id)) {
      this.#connectionError(CODE.PROTOCOL_ERROR, id === 0 ? 'HEADERS on stream 0' : 'HEADERS on an idle stream')
      return
    }
    if (HEADER_BYTES + p.length > this.#limits.maxHeaderListBytes) {
      this.#connectionError(
        CODE.ENHANCE_YOUR_CALM,
        `a header block over ${this.#limits.maxHeaderListBytes} bytes (maxHeaderListBytes)`,
      )
      return
    }
    let frag = this.#unpad(flags, p)
    if (!frag) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'bad HEADERS padding')
      return
    }
    if (flags & FLAG.PRIORITY) {
      if (frag.length < 5) {
        this.#connectionError(CODE.PROTOCOL_ERROR, 'short HEADERS priority')
        return
      }
      frag = frag.subarray(5)
    }
    const endStream = (flags & FLAG.END_STREAM) !== 0
    if (flags & FLAG.END_HEADERS) {
      this.#headerBlock(id, endStream, frag)
      return
    }
    this.#block = { stream: id, endStream, parts: [Buffer.from(frag)], bytes: HEADER_BYTES + p.length, frames: 0 }
    const ms = this.#limits.headerBlockTimeoutMs
    this.#blockTimer = setTimeout(() => {
      this.#blockTimer = null
      this.#guarded(() =>
        this.#connectionError(CODE.ENHANCE_YOUR_CALM, `a header block still open after ${ms} ms (headerBlockTimeoutMs)`),
      )
    }, ms)
    this.#blockTimer.unref()
  }

  #continuation(flags: number, id: number, p: Buffer): void {
    const b = this.#block
    if (!b || b.stream !== id) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'unexpected CONTINUATION')
      return
    }
    // Every frame counts, empty or not: in number and, with its frame header, in bytes.
    b.frames++
    b.bytes += HEADER_BYTES + p.length
    if (b.frames > this.#limits.maxContinuations) {
      this.#connectionError(
        CODE.ENHANCE_YOUR_CALM,
        `more than ${this.#limits.maxContinuations} CONTINUATION frames (maxContinuations)`,
      )
      return
    }
    if (b.bytes > this.#limits.maxHeaderListBytes) {
      this.#connectionError(
        CODE.ENHANCE_YOUR_CALM,
        `a header block over ${this.#limits.maxHeaderListBytes} bytes (maxHeaderListBytes)`,
      )
      return
    }
    if (p.length > 0) b.parts.push(Buffer.from(p))
    if (!(flags & FLAG.END_HEADERS)) return
    this.#block = null
    if (this.#blockTimer) clearTimeout(this.#blockTimer)
    this.#blockTimer = null
    this.#headerBlock(id, b.endStream, Buffer.concat(b.parts))
  }

  #headerBlock(id: number, endStream: boolean, block: Buffer): void {
    let fields: Array<[string, string]>
    const { maxHeaderListPairs, maxHeaderListBytes } = this.#limits
    try {
      fields = this.#decoder.decode(block, maxHeaderListPairs, maxHeaderListBytes)
    } catch (err) {
      if (err instanceof HeaderListLimitError)
        this.#connectionError(CODE.ENHANCE_YOUR_CALM, `${err.message} (maxHeaderListPairs, maxHeaderListBytes)`)
      else this.#connectionError(CODE.COMPRESSION_ERROR, err instanceof HpackError ? err.message : String(err))
      return
    }
    const s = this.#streams.get(id)
    if (!s) return // decoded all the same: the table must stay in step
    if (s.headers) {
      // Trailers: they must end the stream (§8.1) and carry no pseudo-header.
      const problem = endStream ? trailersProblem(fields) : 'trailers without END_STREAM'
      if (problem) this.#connectionError(CODE.PROTOCOL_ERROR, `malformed trailers: ${problem}`)
      else this.#complete(s)
      return
    }
    const head = responseHead(fields)
    if (typeof head === 'string') {
      this.#connectionError(CODE.PROTOCOL_ERROR, `malformed response head: ${head}`)
      return
    }
    if (head.status < 200) {
      if (endStream) this.#connectionError(CODE.PROTOCOL_ERROR, 'an informational head ended the stream')
      return // 1xx: the final answer follows
    }
    s.status = head.status
    s.headers = head.headers
    s.contentLength = head.contentLength
    if (endStream) this.#complete(s)
  }

  #rst(id: number, p: Buffer): void {
    if (p.length !== 4) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'RST_STREAM size')
      return
    }
    if (id === 0 || this.#idle(id)) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'RST_STREAM on an idle stream')
      return
    }
    const s = this.#streams.get(id)
    if (!s) return
    const code = p.readUInt32BE(0)
    this.#forget(s)
    s.h.onFail(code, `stream reset by the peer (${codeName(code)})`, 'connection')
    this.#maybeEnd()
  }

  #settings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS on a stream')
      return
    }
    if (flags & FLAG.ACK) {
      if (p.length !== 0) this.#connectionError(CODE.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload')
      else if (this.#settingsUnacked === 0) this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS ACK for nothing we sent')
      else if (--this.#settingsUnacked === 0 && this.#peerSettings) this.#settingsDone()
      return
    }
    if (p.length % 6 !== 0) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'SETTINGS size')
      return
    }
    if (p.length / 6 > this.#limits.maxSettingsEntries) {
      this.#connectionError(
        CODE.ENHANCE_YOUR_CALM,
        `more than ${this.#limits.maxSettingsEntries} SETTINGS entries (maxSettingsEntries)`,
      )
      return
    }
    for (let i = 0; i < p.length; i += 6) {
      const key = p.readUInt16BE(i)
      const v = p.readUInt32BE(i + 2)
      if (key === SETTING.HEADER_TABLE_SIZE) this.#encoder.setPeerMaxTableSize(v)
      else if (key === SETTING.ENABLE_PUSH) {
        if (v > 1) {
          this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH above 1')
          return
        }
      } else if (key === SETTING.MAX_CONCURRENT_STREAMS) this.#peerMaxStreams = v
      else if (key === SETTING.INITIAL_WINDOW_SIZE) {
        if (v > MAX_WINDOW) {
          this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE too large')
          return
        }
        const delta = v - this.#peerInitialWindow
        this.#peerInitialWindow = v
        for (const s of this.#streams.values()) {
          s.sendWindow += delta // §6.9.2: open streams' windows move too
          if (s.sendWindow > MAX_WINDOW) {
            this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'a stream window past 2^31 - 1')
            return
          }
        }
      } else if (key === SETTING.MAX_FRAME_SIZE) {
        if (v < DEFAULT_MAX_FRAME || v > 16_777_215) {
          this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range')
          return
        }
        this.#peerMaxFrame = v
      }
    }
    this.#pushControl(frame(FRAME.SETTINGS, FLAG.ACK, 0))
    if (this.#destroyed) return
    if (!this.#peerSettings) {
      this.#peerSettings = true
      if (this.#settingsUnacked === 0) this.#settingsDone()
    }
    if (this.#blocked.length > 0) this.#unblock()
    this.onSettings(this.#peerMaxStreams)
  }

  /** The handshake is over: the peer's SETTINGS came and ours were acknowledged. */
  #settingsDone(): void {
    if (this.#settingsTimer) clearTimeout(this.#settingsTimer)
    this.#settingsTimer = null
  }

  #pingFrame(flags: number, id: number, p: Buffer): void {
    if (id !== 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'PING on a stream')
      return
    }
    if (p.length !== 8) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'PING size')
      return
    }
    if (!(flags & FLAG.ACK)) {
      this.#pushControl(frame(FRAME.PING, FLAG.ACK, 0, p))
      return
    }
    const i = this.#pings.findIndex((x) => x.payload.equals(p))
    if (i < 0) return
    const [done] = this.#pings.splice(i, 1)
    done?.cb()
  }

  #goawayFrame(id: number, p: Buffer): void {
    if (id !== 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'GOAWAY on a stream')
      return
    }
    if (p.length < 8) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'GOAWAY size')
      return
    }
    const last = p.readUInt32BE(0) & 0x7fffffff
    const code = p.readUInt32BE(4)
    const first = !this.#goaway
    this.#goaway = true
    // Told first, so the streams failed below are sent again on another session, not this one.
    if (first) this.onGoaway()
    // Streams the peer never processed may be sent again elsewhere (§6.8).
    for (const s of [...this.#streams.values()]) {
      if (s.id <= last) continue
      this.#forget(s)
      s.h.onFail(CODE.REFUSED_STREAM, `GOAWAY (${codeName(code)}) before the stream was processed`, 'connection')
    }
    if (code !== CODE.NO_ERROR) {
      // The peer's debug text is kept short and printable: it lands in logs.
      const debug = p
        .subarray(8, 108)
        .toString('latin1')
        .replace(/[^\x20-\x7e]/g, '?')
      this.destroy(new Error(`GOAWAY from the peer (${codeName(code)})${debug ? `: ${debug}` : ''}`))
      return
    }
    this.#maybeEnd()
  }

  #windowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'WINDOW_UPDATE size')
      return
    }
    const inc = p.readUInt32BE(0) & 0x7fffffff
    if (inc === 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0')
      return
    }
    if (id === 0) {
      this.#connSendWindow += inc
      if (this.#connSendWindow > MAX_WINDOW) {
        this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'connection window past 2^31 - 1')
        return
      }
      if (this.#blocked.length > 0) this.#unblock()
      return
    }
    const s = this.#streams.get(id)
    if (!s) {
      if (this.#idle(id)) this.#connectionError(CODE.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream')
      return
    }
    s.sendWindow += inc
    if (s.sendWindow > MAX_WINDOW) {
      this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'stream window past 2^31 - 1')
      return
    }
    if (s.blocked && this.#blocked.length > 0) this.#unblock()
  }

  #complete(s: Stream): void {
    // §8.1.1: a body that does not match its content-length is malformed (HEAD, 204 and 304 carry none).
    if (s.contentLength >= 0 && s.contentLength !== s.bytes && !s.head && s.status !== 204 && s.status !== 304) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'a body that does not match its content-length')
      return
    }
    this.#forget(s)
    const body = s.chunks.length === 1 ? (s.chunks[0] as Buffer) : Buffer.concat(s.chunks)
    s.h.onResponse(s.status, s.headers as IncomingHttpHeaders, body)
    this.#maybeEnd()
  }

  /** One stream refused by a limit of ours (its answer is too long): RST_STREAM with `code`; the session goes on. */
  #streamFailed(s: Stream, code: number, why: string): void {
    this.#forget(s)
    this.#pushControl(rstStreamFrame(s.id, code))
    s.h.onFail(undefined, why, 'protocol')
    this.#maybeEnd()
  }

  /** A connection error (§5.4.1): GOAWAY with `code`, then the connection is dropped and every stream fails. Its
   *  last-stream-id is 0: it names streams the peer opened, and we take no push (§6.8). */
  #connectionError(code: number, why: string): void {
    if (this.#destroyed) return
    this.#push(goawayFrame(0, code))
    this.destroy(new H2ProtocolError(code, `HTTP/2 ${codeName(code)}: ${why}`))
  }

  #forget(s: Stream): void {
    this.#streams.delete(s.id)
    s.body = null
    if (s.held > 0) {
      this.#release(s.held)
      s.held = 0
    }
    if (s.blocked) {
      s.blocked = false
      this.#blocked = this.#blocked.filter((x) => x !== s)
    }
  }

  /** A closing session ends once its last stream has. */
  #maybeEnd(): void {
    if (!this.#destroyed && (this.#closeCalled || this.#goaway) && this.#streams.size === 0) {
      if (this.#closeCalled) this.#out.push(goawayFrame(0, CODE.NO_ERROR))
      this.#teardown(undefined, true)
    }
  }
}
