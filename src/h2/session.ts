// One HTTP/2 client connection to a provider (RFC 9113), written for the delivery worker's shape of traffic: thousands
// of small POSTs a second on few connections. node:http2 costs ~95 µs of CPU on each such request (a Duplex stream,
// an async resource and several events per request) against ~8 µs here: the frames of every request started in one
// event-loop turn go out in one write, and an answer is one callback.
//
// What it does, and does not:
// - TLS with ALPN `h2` (or cleartext prior knowledge for http: origins), the preface, our SETTINGS (no push, a 1 MiB
//   stream window) and a large connection window, so answers are never held back by our flow control.
// - Requests: HEADERS (HPACK, h2/hpack.ts) then DATA cut to the peer's SETTINGS_MAX_FRAME_SIZE and held while the
//   peer's connection or stream window is short (§6.9), resumed by its WINDOW_UPDATE.
// - Answers: informational (1xx) heads skipped, trailers decoded and dropped, bodies of 1 MiB or more refused (CANCEL).
//   Every header block is decoded, also for streams already given up, so the HPACK state stays in step with the peer.
// - GOAWAY: no new streams; streams above its last-stream-id end as REFUSED_STREAM (not processed, safe to send again);
//   with an error code the connection is dropped, as node:http2 does. RST_STREAM ends its stream with the peer's code.
// - PING answered; `ping()` asks one (the pool's probe of a silent connection). PUSH_PROMISE, a malformed frame or
//   header block: a connection error (GOAWAY, then the socket is destroyed). Priority signals are ignored.

import type { IncomingHttpHeaders } from 'node:http2'
import net, { type Socket } from 'node:net'
import tls from 'node:tls'
import {
  CODE,
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
import { HpackDecoder, HpackEncoder, HpackError } from './hpack'

/** How a stream ends: exactly one of these is called, once, unless the caller cancelled it first. */
export interface StreamHandler {
  onResponse(status: number, headers: IncomingHttpHeaders, body: Buffer): void
  /** No complete answer. `code`: the peer's RST_STREAM code (REFUSED_STREAM: not processed), or undefined when the
   *  connection failed. */
  onFail(code: number | undefined, reason: string): void
}

interface Stream {
  id: number
  h: StreamHandler
  /** What the peer's flow control still lets us send on this stream. */
  sendWindow: number
  /** Request body not yet sent (held by flow control), from `bodyAt`. */
  body: Buffer | null
  bodyAt: number
  blocked: boolean
  status: number
  headers: IncomingHttpHeaders | null
  chunks: Buffer[]
  bytes: number
}

export interface SessionOptions {
  /** Trusted CAs (PEM) in place of Node's default store (the pool passes the roots plus its extra ones). */
  ca?: string[]
}

const OUR_STREAM_WINDOW = 1 << 20
const OUR_CONN_WINDOW = 1 << 24
/** An answer body this large is refused: no provider answers that much, and it would be held in memory. Below the
 *  stream window, so a longer answer is refused rather than stalled at a window we never reopen. */
const MAX_BODY = OUR_STREAM_WINDOW - 1
/** A header block (with its CONTINUATIONs) larger than this is a connection error: memory is bounded. */
const MAX_HEADER_BLOCK = 256 * 1024
const MAX_STREAM_ID = 2 ** 31 - 1

export class H2Session {
  /** The peer's SETTINGS arrived (each time): its stream limit, undefined when it set none. */
  onSettings: (maxConcurrentStreams: number | undefined) => void = () => {}
  /** The peer sent GOAWAY, or stream ids ran out: no new requests here. */
  onGoaway: () => void = () => {}
  /** The connection failed (before `onClose`). */
  onError: (err: Error) => void = () => {}
  /** The socket is gone; every stream has ended. Called once. */
  onClose: () => void = () => {}

  readonly #socket: Socket
  readonly #streams = new Map<number, Stream>()
  readonly #encoder = new HpackEncoder(undefined, { secondSight: true })
  readonly #decoder = new HpackDecoder()
  readonly #authority: string
  readonly #scheme: string
  #nextId = 1
  #out: Buffer[] = []
  #flushScheduled = false
  #in: Buffer | null = null
  #connSendWindow = DEFAULT_WINDOW
  #peerInitialWindow = DEFAULT_WINDOW
  #peerMaxFrame = DEFAULT_MAX_FRAME
  #peerMaxStreams: number | undefined
  #recvUnacked = 0
  /** Streams waiting for window, oldest first. */
  #blocked: Stream[] = []
  /** A header block being received across CONTINUATION frames. */
  #block: { stream: number; endStream: boolean; parts: Buffer[]; bytes: number } | null = null
  #pings: Array<{ payload: Buffer; cb: (err?: Error) => void }> = []
  #pingSeq = 0
  #goaway = false
  #closing = false
  #destroyed = false
  #closeCalled = false
  /** The preface is written: frames may follow. */
  #started = false

  constructor(origin: string, o: SessionOptions = {}) {
    const u = new URL(origin)
    this.#scheme = u.protocol === 'http:' ? 'http' : 'https'
    this.#authority = u.host
    const port = Number(u.port) || (this.#scheme === 'http' ? 80 : 443)
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname
    if (this.#scheme === 'http') {
      this.#socket = net.connect({ host, port })
      this.#socket.once('connect', () => this.#start())
    } else {
      const s = tls.connect({ host, port, ca: o.ca, ALPNProtocols: ['h2'], servername: net.isIP(host) ? undefined : host })
      s.once('secureConnect', () => {
        if (s.alpnProtocol !== 'h2')
          return this.destroy(new Error(`${origin} did not agree to HTTP/2 (ALPN: ${s.alpnProtocol || 'none'})`))
        this.#start()
      })
      this.#socket = s
    }
    this.#socket.setNoDelay(true)
    this.#socket.on('data', (chunk: Buffer) => this.#read(chunk))
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
      sendWindow: this.#peerInitialWindow,
      body: null,
      bodyAt: 0,
      blocked: false,
      status: 0,
      headers: null,
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

  /** Asks the peer for a PING acknowledgement; `cb` gets an error if the session dies first. */
  ping(cb: (err?: Error) => void): void {
    if (this.#destroyed) throw new Error('HTTP/2 session destroyed')
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
    if (err) this.onError(err)
    const why = err ? err.message : 'connection closed'
    const streams = [...this.#streams.values()]
    this.#streams.clear()
    this.#blocked = []
    for (const s of streams) s.h.onFail(undefined, why)
    for (const p of this.#pings.splice(0)) p.cb(new Error(why))
    const out = this.#out
    this.#out = []
    if (this.#started && !this.#socket.destroyed && (graceful || out.length > 0)) {
      if (out.length > 0) this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out))
      this.#socket.destroySoon() // closed once what is queued (a GOAWAY) is written
    } else this.#socket.destroy()
    this.onClose()
  }

  #start(): void {
    this.#started = true
    this.#socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([
          [SETTING.ENABLE_PUSH, 0],
          [SETTING.INITIAL_WINDOW_SIZE, OUR_STREAM_WINDOW],
        ]),
        windowUpdateFrame(0, OUR_CONN_WINDOW - DEFAULT_WINDOW),
      ]),
    )
    if (this.#out.length > 0) this.#flush()
  }

  /** Frames wait for the end of the turn, so every request started in it goes out in one write. */
  #push(b: Buffer): void {
    this.#out.push(b)
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#flush())
    }
  }

  #flush(): void {
    this.#flushScheduled = false
    if (this.#destroyed || this.#out.length === 0) return
    if (!this.#started) return // the preface goes first: #start flushes what waited
    const out = this.#out
    this.#out = []
    this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out))
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
    if (this.#recvUnacked >= OUR_CONN_WINDOW / 2 && !this.#destroyed) {
      this.#push(windowUpdateFrame(0, this.#recvUnacked))
      this.#recvUnacked = 0
    }
  }

  #frame(type: number, flags: number, stream: number, p: Buffer): void {
    if (this.#block && type !== FRAME.CONTINUATION) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'header block interrupted')
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
        this.#pingFrame(flags, p)
        return
      case FRAME.GOAWAY:
        this.#goawayFrame(p)
        return
      case FRAME.WINDOW_UPDATE:
        this.#windowUpdate(stream, p)
        return
      case FRAME.PUSH_PROMISE:
        this.#connectionError(CODE.PROTOCOL_ERROR, 'PUSH_PROMISE with push disabled')
        return
      default:
        return // PRIORITY and unknown types are ignored (§5.5)
    }
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
    this.#recvUnacked += p.length // padding counts too (§6.9.1)
    const body = this.#unpad(flags, p)
    if (!body) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'bad DATA padding')
      return
    }
    const s = this.#streams.get(id)
    if (!s) return // a stream given up: its frames are only counted
    if (!s.headers) {
      this.#streamFailed(s, CODE.PROTOCOL_ERROR, 'DATA before the response headers')
      return
    }
    s.bytes += body.length
    if (s.bytes > MAX_BODY) {
      this.#streamFailed(s, CODE.CANCEL, 'answer body of 1 MiB or more')
      return
    }
    if (body.length > 0) s.chunks.push(Buffer.from(body))
    if (flags & FLAG.END_STREAM) this.#complete(s)
  }

  #headers(flags: number, id: number, p: Buffer): void {
    if (id === 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'HEADERS on stream 0')
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
    this.#block = { stream: id, endStream, parts: [Buffer.from(frag)], bytes: frag.length }
  }

  #continuation(flags: number, id: number, p: Buffer): void {
    const b = this.#block
    if (!b || b.stream !== id) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'unexpected CONTINUATION')
      return
    }
    b.bytes += p.length
    if (b.bytes > MAX_HEADER_BLOCK) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'header block too large')
      return
    }
    b.parts.push(Buffer.from(p))
    if (!(flags & FLAG.END_HEADERS)) return
    this.#block = null
    this.#headerBlock(id, b.endStream, Buffer.concat(b.parts))
  }

  #headerBlock(id: number, endStream: boolean, block: Buffer): void {
    let fields: Array<[string, string]>
    try {
      fields = this.#decoder.decode(block)
    } catch (err) {
      this.#connectionError(CODE.COMPRESSION_ERROR, err instanceof HpackError ? err.message : String(err))
      return
    }
    const s = this.#streams.get(id)
    if (!s) return // decoded all the same: the table must stay in step
    if (s.headers) {
      // Trailers: they must end the stream (§8.1).
      if (!endStream) {
        this.#streamFailed(s, CODE.PROTOCOL_ERROR, 'trailers without END_STREAM')
        return
      }
      this.#complete(s)
      return
    }
    const headers: IncomingHttpHeaders = Object.create(null)
    let status = 0
    for (const [name, value] of fields) {
      if (name === ':status') status = Number(value)
      const had = headers[name]
      if (had === undefined) headers[name] = name === 'set-cookie' ? [value] : value
      else if (Array.isArray(had)) had.push(value)
      else headers[name] = `${had}, ${value}`
    }
    if (!(status >= 100 && status <= 999) || !Number.isInteger(status)) {
      this.#streamFailed(s, CODE.PROTOCOL_ERROR, 'answer without a valid :status')
      return
    }
    if (status < 200) {
      if (endStream) {
        this.#streamFailed(s, CODE.PROTOCOL_ERROR, 'informational answer ended the stream')
        return
      }
      return // 1xx: the final answer follows
    }
    s.status = status
    s.headers = headers
    if (endStream) this.#complete(s)
  }

  #rst(id: number, p: Buffer): void {
    if (p.length !== 4) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'RST_STREAM size')
      return
    }
    const s = this.#streams.get(id)
    if (!s) return
    const code = p.readUInt32BE(0)
    this.#forget(s)
    s.h.onFail(code, `stream reset by the peer (code ${code})`)
    this.#maybeEnd()
  }

  #settings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) {
      this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS on a stream')
      return
    }
    if (flags & FLAG.ACK) return
    if (p.length % 6 !== 0) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'SETTINGS size')
      return
    }
    for (let i = 0; i < p.length; i += 6) {
      const key = p.readUInt16BE(i)
      const v = p.readUInt32BE(i + 2)
      if (key === SETTING.HEADER_TABLE_SIZE) this.#encoder.setPeerMaxTableSize(v)
      else if (key === SETTING.MAX_CONCURRENT_STREAMS) this.#peerMaxStreams = v
      else if (key === SETTING.INITIAL_WINDOW_SIZE) {
        if (v > MAX_WINDOW) {
          this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE too large')
          return
        }
        const delta = v - this.#peerInitialWindow
        this.#peerInitialWindow = v
        for (const s of this.#streams.values()) s.sendWindow += delta // §6.9.2: open streams' windows move too
      } else if (key === SETTING.MAX_FRAME_SIZE) {
        if (v < DEFAULT_MAX_FRAME || v > 16_777_215) {
          this.#connectionError(CODE.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range')
          return
        }
        this.#peerMaxFrame = v
      }
    }
    this.#push(frame(FRAME.SETTINGS, FLAG.ACK, 0))
    if (this.#blocked.length > 0) this.#unblock()
    this.onSettings(this.#peerMaxStreams)
  }

  #pingFrame(flags: number, p: Buffer): void {
    if (p.length !== 8) {
      this.#connectionError(CODE.FRAME_SIZE_ERROR, 'PING size')
      return
    }
    if (!(flags & FLAG.ACK)) {
      this.#push(frame(FRAME.PING, FLAG.ACK, 0, p))
      return
    }
    const i = this.#pings.findIndex((x) => x.payload.equals(p))
    if (i < 0) return
    const [done] = this.#pings.splice(i, 1)
    done?.cb()
  }

  #goawayFrame(p: Buffer): void {
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
      s.h.onFail(CODE.REFUSED_STREAM, `GOAWAY (code ${code}) before the stream was processed`)
    }
    if (code !== CODE.NO_ERROR) {
      this.destroy(new Error(`GOAWAY with code ${code}: ${p.subarray(8).toString('utf8').slice(0, 200)}`))
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
    if (id === 0) {
      if (inc === 0) {
        this.#connectionError(CODE.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0')
        return
      }
      this.#connSendWindow += inc
      if (this.#connSendWindow > MAX_WINDOW) {
        this.#connectionError(CODE.FLOW_CONTROL_ERROR, 'connection window overflow')
        return
      }
      if (this.#blocked.length > 0) this.#unblock()
      return
    }
    const s = this.#streams.get(id)
    if (!s) return
    if (inc === 0) {
      this.#streamFailed(s, CODE.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0')
      return
    }
    s.sendWindow += inc
    if (s.sendWindow > MAX_WINDOW) {
      this.#streamFailed(s, CODE.FLOW_CONTROL_ERROR, 'stream window overflow')
      return
    }
    if (s.blocked && this.#blocked.length > 0) this.#unblock()
  }

  #complete(s: Stream): void {
    this.#forget(s)
    const body = s.chunks.length === 1 ? (s.chunks[0] as Buffer) : Buffer.concat(s.chunks)
    s.h.onResponse(s.status, s.headers as IncomingHttpHeaders, body)
    this.#maybeEnd()
  }

  /** A stream error (§5.4.2): RST_STREAM with `code`, and the stream fails. */
  #streamFailed(s: Stream, code: number, why: string): void {
    this.#forget(s)
    this.#push(rstStreamFrame(s.id, code))
    s.h.onFail(undefined, why)
    this.#maybeEnd()
  }

  /** A connection error (§5.4.1): GOAWAY with `code`, then the connection is dropped. */
  #connectionError(code: number, why: string): void {
    if (this.#destroyed) return
    this.#push(goawayFrame(0, code))
    this.destroy(new Error(`HTTP/2 protocol error: ${why}`))
  }

  #forget(s: Stream): void {
    this.#streams.delete(s.id)
    s.body = null
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
