// HTTP/2 frame layout and codes (RFC 9113 §4.1, §6, §7, §11), as the client writes and reads them.

export const FRAME = {
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

export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const

/** Error codes (RFC 9113 §7). The numbers equal node:http2's NGHTTP2_* constants, which the pool's callers know. */
export const CODE = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const

/** The name of an error code, for messages ("code 11" tells an operator nothing). */
export function codeName(code: number): string {
  for (const [name, value] of Object.entries(CODE)) if (value === code) return name
  return `code ${code}`
}

export const SETTING = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')
export const HEADER_BYTES = 9
/** The largest frame payload anyone may send before SETTINGS_MAX_FRAME_SIZE says otherwise (and what we accept). */
export const DEFAULT_MAX_FRAME = 16_384
export const DEFAULT_WINDOW = 65_535
export const MAX_WINDOW = 2 ** 31 - 1

/** Writes a frame header at `at` of `buf`. */
export function writeHeader(buf: Buffer, at: number, length: number, type: number, flags: number, stream: number): void {
  buf[at] = (length >>> 16) & 0xff
  buf[at + 1] = (length >>> 8) & 0xff
  buf[at + 2] = length & 0xff
  buf[at + 3] = type
  buf[at + 4] = flags
  buf.writeUInt32BE(stream >>> 0, at + 5)
}

/** A whole frame whose payload is `payload` (copied). */
export function frame(type: number, flags: number, stream: number, payload?: Buffer): Buffer {
  const n = payload ? payload.length : 0
  const b = Buffer.allocUnsafe(HEADER_BYTES + n)
  writeHeader(b, 0, n, type, flags, stream)
  if (payload) payload.copy(b, HEADER_BYTES)
  return b
}

export function settingsFrame(entries: ReadonlyArray<readonly [number, number]>): Buffer {
  const p = Buffer.allocUnsafe(entries.length * 6)
  entries.forEach(([id, v], i) => {
    p.writeUInt16BE(id, i * 6)
    p.writeUInt32BE(v >>> 0, i * 6 + 2)
  })
  return frame(FRAME.SETTINGS, 0, 0, p)
}

export function windowUpdateFrame(stream: number, increment: number): Buffer {
  const p = Buffer.allocUnsafe(4)
  p.writeUInt32BE(increment, 0)
  return frame(FRAME.WINDOW_UPDATE, 0, stream, p)
}

export function rstStreamFrame(stream: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(4)
  p.writeUInt32BE(code, 0)
  return frame(FRAME.RST_STREAM, 0, stream, p)
}

export function goawayFrame(lastStream: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(8)
  p.writeUInt32BE(lastStream, 0)
  p.writeUInt32BE(code, 4)
  return frame(FRAME.GOAWAY, 0, 0, p)
}
