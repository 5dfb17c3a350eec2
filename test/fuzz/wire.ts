// A raw HTTP/1.1 client on node:net: sends exactly the bytes it is given (invalid UTF-8 in the path or a header,
// a declared Content-Length the client never honours, a head split over several reads), and reads one answer.
// fetch/undici refuse to send most of these bytes, which is why the fuzzer does not use them for its hostile side.
import { connect } from 'node:net'

export type Transfer =
  /** Content-Length and the whole body, one write. */
  | 'length'
  /** Transfer-Encoding: chunked, the body in up to three chunks. */
  | 'chunked'
  /** Content-Length larger than what is sent; the client closes the socket after part of the body. */
  | 'abort'
  /** The head is written in two reads (a few ms apart): the case the server must buffer. */
  | 'split-head'

export interface WireRequest {
  method: string
  /** Path and query as bytes (may hold anything but CR/LF, or even those: the server must cope). */
  target: Buffer
  headers: Array<[string, Buffer]>
  body: Buffer | null
  transfer: Transfer
}

export interface WireAnswer {
  /** null: no status line came back. */
  status: number | null
  headers: Record<string, string>
  /** The answer's head as it came (status line and header lines, without the blank line), '' without one. */
  head: string
  body: Buffer
  /** The server closed the connection: without answering, or at the end of an answer that has neither Content-Length
   * nor Transfer-Encoding (its body runs until the close). An answer with a length is complete once its body is read,
   * and a close after it is not waited for. */
  closed: boolean
  /** Neither an answer nor a close within the time allowed (the client then closed). */
  hung: boolean
  ms: number
}

const CRLF = Buffer.from('\r\n')

/** The bytes of the request head (request line and headers, with the blank line), as `req` describes them. */
export function headBytes(req: WireRequest): Buffer {
  const parts: Buffer[] = [Buffer.from(`${req.method} `, 'latin1'), req.target, Buffer.from(' HTTP/1.1\r\nHost: 127.0.0.1\r\n')]
  for (const [k, v] of req.headers) parts.push(Buffer.from(`${k}: `, 'latin1'), v, CRLF)
  if (req.body !== null) {
    if (req.transfer === 'chunked') parts.push(Buffer.from('Transfer-Encoding: chunked\r\n'))
    else {
      const declared = req.transfer === 'abort' ? req.body.length + 64 : req.body.length
      parts.push(Buffer.from(`Content-Length: ${declared}\r\n`))
    }
  }
  parts.push(CRLF)
  return Buffer.concat(parts)
}

function chunked(body: Buffer): Buffer {
  const parts: Buffer[] = []
  const cut1 = Math.floor(body.length / 3)
  const cut2 = Math.floor((2 * body.length) / 3)
  for (const piece of [body.subarray(0, cut1), body.subarray(cut1, cut2), body.subarray(cut2)]) {
    if (piece.length === 0) continue
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, CRLF)
  }
  parts.push(Buffer.from('0\r\n\r\n'))
  return Buffer.concat(parts)
}

/** Sends one request on a fresh connection and reads one answer (status, headers, a Content-Length body). */
export function exchange(port: number, req: WireRequest, timeoutMs: number): Promise<WireAnswer> {
  const started = Date.now()
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1')
    sock.setNoDelay(true)
    let buf = Buffer.alloc(0)
    let done = false
    let closed = false
    const timers: NodeJS.Timeout[] = []
    const finish = (a: Omit<WireAnswer, 'ms' | 'closed'>): void => {
      if (done) return
      done = true
      for (const t of timers) clearTimeout(t)
      sock.destroy()
      resolve({ ...a, closed, ms: Date.now() - started })
    }
    const parse = (final: boolean): void => {
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) {
        if (final) finish({ status: null, headers: {}, head: '', body: buf, hung: false })
        return
      }
      const head = buf.subarray(0, end).toString('latin1')
      const lines = head.split('\r\n')
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')
      const headers: Record<string, string> = {}
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':')
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
      }
      const status = m ? Number(m[1]) : null
      const len = headers['content-length'] === undefined ? null : Number(headers['content-length'])
      const body = buf.subarray(end + 4)
      // RFC 9112 6.3: the answer to HEAD and a 1xx, 204 or 304 end with their head; any other answer with neither
      // Content-Length nor Transfer-Encoding (uWebSockets.js's own 400/431/505 pages) has a body that runs until the
      // server closes, so it is read to the close (or the time allowed), which is when `closed` can be seen.
      const bodiless = req.method === 'HEAD' || (status !== null && (status < 200 || status === 204 || status === 304))
      if (len !== null && body.length >= len) finish({ status, headers, head, body: body.subarray(0, len), hung: false })
      else if (final || (len === null && status !== null && bodiless && headers['transfer-encoding'] === undefined)) {
        finish({ status, headers, head, body, hung: false })
      }
    }
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      parse(false)
    })
    sock.on('error', () => {})
    sock.on('close', () => {
      closed = true
      parse(true)
    })
    timers.push(
      setTimeout(() => {
        if (buf.length > 0) parse(true)
        finish({ status: null, headers: {}, head: '', body: buf, hung: true })
      }, timeoutMs),
    )
    const head = headBytes(req)
    const body = req.body === null ? Buffer.alloc(0) : req.transfer === 'chunked' ? chunked(req.body) : req.body
    sock.once('connect', () => {
      if (req.transfer === 'split-head') {
        const cut = Math.min(head.length - 1, Math.max(1, head.indexOf('\r\n') + 2))
        sock.write(head.subarray(0, cut))
        timers.push(setTimeout(() => !done && sock.write(Buffer.concat([head.subarray(cut), body])), 15))
      } else if (req.transfer === 'abort') {
        sock.write(Buffer.concat([head, body.subarray(0, Math.floor(body.length / 2))]))
        // The client gives up mid-body: the server must drop the request and write nothing.
        timers.push(
          setTimeout(() => {
            if (!done) finish({ status: null, headers: {}, head: '', body: buf, hung: false })
          }, 30),
        )
      } else {
        sock.write(Buffer.concat([head, body]))
      }
    })
  })
}

/** A printable form of bytes: ASCII as is, everything else as \xNN; long runs shortened. */
export function printable(b: Buffer, max = 300): string {
  let s = ''
  for (const c of b.subarray(0, max)) {
    s += c >= 0x20 && c < 0x7f && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`
  }
  return b.length > max ? `${s}… (${b.length} bytes)` : s
}
