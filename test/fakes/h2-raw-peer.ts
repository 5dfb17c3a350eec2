// A raw HTTP/2 peer over TLS for the HTTP/2 client's hostile-peer tests: it reads the client's frames and writes
// whatever a scenario hands it, byte for byte, with no HTTP/2 library in between, so it can break every rule. It
// keeps the client's flow-control windows as the client announced them, for scenarios that honour them.
import type { AddressInfo, Socket } from 'node:net'
import tls from 'node:tls'
import { encodeInteger } from '../../src/h2/hpack'
import { testTls } from './tls'

export const T = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const
export const END_STREAM = 0x1
export const ACK = 0x1
export const END_HEADERS = 0x4

export interface RawFrame {
  type: number
  flags: number
  stream: number
  payload: Buffer
}

export function frameBytes(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9)
  h.writeUIntBE(payload.length, 0, 3)
  h[3] = type
  h[4] = flags
  h.writeUInt32BE(stream, 5)
  return Buffer.concat([h, payload])
}

export function settingsBytes(entries: Array<[number, number]> = []): Buffer {
  const p = Buffer.alloc(entries.length * 6)
  entries.forEach(([id, v], i) => {
    p.writeUInt16BE(id, i * 6)
    p.writeUInt32BE(v, i * 6 + 2)
  })
  return frameBytes(T.SETTINGS, 0, 0, p)
}

/** HPACK: a literal field without indexing, with a new name (RFC 7541 §6.2.2), bytes as latin1. */
export function literal(name: string, value: string): Buffer {
  return Buffer.concat([
    Buffer.from([0x00]),
    encodeInteger(name.length, 7),
    Buffer.from(name, 'latin1'),
    encodeInteger(value.length, 7),
    Buffer.from(value, 'latin1'),
  ])
}

/** HPACK: `:status: 200` (static index 8). */
export const STATUS_200 = Buffer.from([0x88])

/** One client connection as the peer sees it. */
export class RawConn {
  readonly frames: RawFrame[] = []
  /** Stream ids of the client's requests (its HEADERS frames), in order. */
  readonly requests: number[] = []
  /** The client's GOAWAY, if one arrived. */
  goaway: { code: number } | null = null
  closed = false
  /** The client's windows, as its SETTINGS and WINDOW_UPDATEs make them. */
  initialStreamWindow = 65_535
  connWindow = 65_535
  readonly streamWindow = new Map<number, number>()
  readonly reset = new Set<number>()
  #in = Buffer.alloc(0)
  #preface = false
  #waiters = new Set<() => void>()

  constructor(readonly sock: tls.TLSSocket) {
    sock.on('data', (chunk: Buffer) => this.#read(chunk))
    sock.on('error', () => {})
    sock.on('close', () => {
      this.closed = true
      this.#wake()
    })
  }

  #read(chunk: Buffer): void {
    this.#in = Buffer.concat([this.#in, chunk])
    if (!this.#preface) {
      if (this.#in.length < 24) return
      this.#in = this.#in.subarray(24)
      this.#preface = true
    }
    while (this.#in.length >= 9) {
      const len = this.#in.readUIntBE(0, 3)
      if (this.#in.length < 9 + len) break
      const f: RawFrame = {
        type: this.#in[3] as number,
        flags: this.#in[4] as number,
        stream: this.#in.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.#in.subarray(9, 9 + len)),
      }
      this.#in = this.#in.subarray(9 + len)
      this.#frame(f)
    }
  }

  #frame(f: RawFrame): void {
    this.frames.push(f)
    if (f.type === T.HEADERS) {
      this.requests.push(f.stream)
      this.streamWindow.set(f.stream, this.initialStreamWindow)
    } else if (f.type === T.GOAWAY) this.goaway = { code: f.payload.readUInt32BE(4) }
    else if (f.type === T.RST_STREAM) this.reset.add(f.stream)
    else if (f.type === T.SETTINGS && !(f.flags & ACK)) {
      for (let i = 0; i + 6 <= f.payload.length; i += 6) {
        if (f.payload.readUInt16BE(i) === 0x4) this.initialStreamWindow = f.payload.readUInt32BE(i + 2)
      }
    } else if (f.type === T.WINDOW_UPDATE) {
      const inc = f.payload.readUInt32BE(0) & 0x7fffffff
      if (f.stream === 0) this.connWindow += inc
      else this.streamWindow.set(f.stream, (this.streamWindow.get(f.stream) ?? 0) + inc)
    }
    this.#wake()
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w()
  }

  /** Resolves true once `ok()` holds (checked at every frame and at close), false after `ms` or when closed first. */
  until(ok: () => boolean, ms = 5_000): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (ok()) finish(true)
        else if (this.closed) finish(false)
      }
      const timer = setTimeout(() => finish(false), ms)
      const finish = (v: boolean) => {
        clearTimeout(timer)
        this.#waiters.delete(check)
        resolve(v)
      }
      this.#waiters.add(check)
      check()
    })
  }

  /** Writes `bytes`, waiting for 'drain' when the socket's buffer is full; false once the client has gone. */
  async send(...bytes: Buffer[]): Promise<boolean> {
    if (this.closed || this.sock.destroyed) return false
    if (this.sock.write(bytes.length === 1 ? (bytes[0] as Buffer) : Buffer.concat(bytes))) return true
    return new Promise((resolve) => {
      const done = (v: boolean) => {
        this.sock.off('drain', onDrain)
        this.sock.off('close', onClose)
        resolve(v)
      }
      const onDrain = () => done(true)
      const onClose = () => done(false)
      this.sock.on('drain', onDrain)
      this.sock.on('close', onClose)
    })
  }

  /** `frame` written again and again (in chunks of about 64 KB) until `totalBytes` are out or the client has gone. */
  async flood(frame: Buffer, totalBytes: number): Promise<number> {
    const chunk = Buffer.concat(Array.from({ length: Math.max(1, Math.floor(65_536 / frame.length)) }, () => frame))
    let sent = 0
    while (sent < totalBytes && (await this.send(chunk))) sent += chunk.length
    return sent
  }

  /** The handshake of a well-behaved server: our SETTINGS, then the client's acknowledged. */
  async handshake(entries: Array<[number, number]> = [[0x3, 100]]): Promise<void> {
    await this.send(settingsBytes(entries))
    await this.until(() => this.frames.some((f) => f.type === T.SETTINGS && !(f.flags & ACK)))
    await this.send(frameBytes(T.SETTINGS, ACK, 0))
  }

  /** A proper answer: 200 and a short body. */
  answer(stream: number, body = 'ok'): Promise<boolean> {
    return this.send(
      frameBytes(T.HEADERS, END_HEADERS, stream, STATUS_200),
      frameBytes(T.DATA, END_STREAM, stream, Buffer.from(body)),
    )
  }

  /** Answers every request from the `from`th on, now and later, properly. */
  serveWell(from = 0): void {
    let answered = from
    const loop = async () => {
      while (!this.closed) {
        await this.until(() => this.requests.length > answered, 60_000)
        while (answered < this.requests.length) await this.answer(this.requests[answered++] as number)
      }
    }
    void loop()
  }
}

export interface RawPeer {
  url: string
  conns: RawConn[]
  close(): Promise<void>
}

/** A TLS server (ALPN h2) handing each connection to `onConn` with its index (0 first). */
export async function rawPeer(onConn: (c: RawConn, index: number) => unknown): Promise<RawPeer> {
  const { key, cert } = testTls()
  const conns: RawConn[] = []
  // Every socket accepted, its TLS handshake done or not: close() ends them all, or server.close() would wait for a
  // connection still shaking hands.
  const sockets = new Set<Socket>()
  const srv = tls.createServer({ key, cert, ALPNProtocols: ['h2'] }, (sock) => {
    const c = new RawConn(sock)
    conns.push(c)
    void Promise.resolve(onConn(c, conns.length - 1)).catch(() => sock.destroy())
  })
  srv.on('connection', (sock: Socket) => {
    sockets.add(sock)
    sock.on('close', () => sockets.delete(sock))
  })
  srv.on('tlsClientError', () => {})
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  return {
    url: `https://localhost:${(srv.address() as AddressInfo).port}`,
    conns,
    close: () =>
      new Promise<void>((r) => {
        srv.close(() => r())
        for (const c of conns) c.sock.destroy()
        for (const sock of sockets) sock.destroy()
      }),
  }
}
