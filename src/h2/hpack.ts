// HPACK (RFC 7541), the header compression of the HTTP/2 client.
//
// - HpackDecoder reads response header blocks: all of §4–§6 (integers, raw and Huffman strings, every
//   representation, the dynamic table with its size updates and evictions). Anything malformed throws HpackError, and
//   the decoder then refuses further blocks, since its table may be out of step with the peer's.
// - HpackEncoder writes our request header blocks with a small policy tuned for the same request repeated many times:
//   pairs already in a table are one or two bytes, new pairs are indexed unless their values are unique per request.
//
// Strings are bytes as latin1 both ways, so every octet maps to one char and back without loss or UTF-8 cost.

/** A decoding failure: the peer's header block is malformed (a COMPRESSION_ERROR connection error for the caller). */
export class HpackError extends Error {
  override name = 'HpackError'
}

/** A well-formed block whose header list is past the caller's limit (RFC 9113 §6.5.2, §10.5.1): decoding stops at
 *  the first field beyond it, so a block of one-byte references to a large entry never grows past the limit. */
export class HeaderListLimitError extends Error {
  override name = 'HeaderListLimitError'
}

/** SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2), and the most our encoder ever uses. */
export const DEFAULT_TABLE_SIZE = 4096
/** RFC 7541 §4.1: each entry costs its name and value octets plus this. */
export const ENTRY_OVERHEAD = 32
/** The largest integer we accept in a block: indices, lengths and sizes all stay far below it. */
const MAX_INTEGER = 0x7fffffff
/** A 31-bit value takes at most 5 continuation bytes after a full prefix; more is an overlong encoding. */
const MAX_CONTINUATION_BYTES = 5

// ---------------------------------------------------------------------------------------------------------------
// Static table (Appendix A). Index i is STATIC_TABLE[i - 1].

export const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
]
const STATIC_COUNT = STATIC_TABLE.length

/** name → the first static index with that name. */
const STATIC_NAMES = new Map<string, number>()
/** name → value → static index, for the encoder's exact matches. */
const STATIC_PAIRS = new Map<string, Map<string, number>>()
STATIC_TABLE.forEach(([name, value], i) => {
  if (!STATIC_NAMES.has(name)) STATIC_NAMES.set(name, i + 1)
  const values = STATIC_PAIRS.get(name) ?? new Map<string, number>()
  STATIC_PAIRS.set(name, values)
  if (!values.has(value)) values.set(value, i + 1)
})

// ---------------------------------------------------------------------------------------------------------------
// Huffman code (Appendix B). The code is canonical (codes assigned by increasing length, then by symbol), so the 257
// lengths determine it; the codes and the decoder's tables are derived from them at load.

/** Code lengths in bits of symbols 0–255, then EOS (256). */
export const HUFFMAN_LENGTHS: Readonly<Uint8Array> = Uint8Array.from([
  // 0x00–0x1f: control characters
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  // 0x20–0x3f: ' ' to '?'
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  // 0x40–0x5f: '@' to '_'
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  // 0x60–0x7f: '`' to DEL
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  // 0x80–0xff
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  // EOS
  30,
])
export const HUFFMAN_EOS = 256

/** The canonical codes (right-aligned, at most 30 bits) of symbols 0–256. */
export const HUFFMAN_CODES: Readonly<Uint32Array> = canonicalCodes(HUFFMAN_LENGTHS)

function canonicalCodes(lengths: Readonly<Uint8Array>): Uint32Array {
  const symbols = Array.from(lengths.keys()).sort((a, b) => lengths[a]! - lengths[b]! || a - b)
  const codes = new Uint32Array(lengths.length)
  let code = 0
  let len = lengths[symbols[0]!]!
  for (const sym of symbols) {
    code *= 2 ** (lengths[sym]! - len) // next length: append zeros to the next free code
    len = lengths[sym]!
    codes[sym] = code++
  }
  return codes
}

// The decoder is a 4-bit state machine (as in nghttp2): a state is an internal node of the code tree (the bits read
// since the last symbol); each of its 16 nibble transitions says the next state, the symbol emitted on the way (at
// most one: every code is at least 5 bits), whether the new state may end a string (its bits are a prefix of EOS of at
// most 7 bits: §5.2 padding), and whether EOS itself was decoded (an error).
const T_EMIT = 1 << 16
const T_ACCEPT = 1 << 17
const T_FAIL = 1 << 18
const HUFFMAN_DECODE: Uint32Array = buildDecodeTable()

function buildDecodeTable(): Uint32Array {
  const UNSET = 0x7fffffff
  // Children of internal node k: kids[2k] (bit 0), kids[2k + 1] (bit 1); a leaf is stored as ~symbol (negative).
  const kids: number[] = [UNSET, UNSET]
  const depth: number[] = [0]
  const allOnes: boolean[] = [true]
  for (let sym = 0; sym <= HUFFMAN_EOS; sym++) {
    const len = HUFFMAN_LENGTHS[sym]!
    const code = HUFFMAN_CODES[sym]!
    let node = 0
    for (let i = len - 1; i >= 0; i--) {
      const bit = (code >>> i) & 1
      const at = 2 * node + bit
      if (i === 0) {
        if (kids[at] !== UNSET) throw new Error(`Huffman table: code of ${sym} collides`)
        kids[at] = ~sym
        break
      }
      let next = kids[at]!
      if (next === UNSET) {
        next = depth.length
        kids[at] = next
        kids.push(UNSET, UNSET)
        depth.push(depth[node]! + 1)
        allOnes.push(allOnes[node]! && bit === 1)
      } else if (next < 0) {
        throw new Error(`Huffman table: code of ${sym} extends another code`)
      }
      node = next
    }
  }
  const states = depth.length
  if (states !== 256 || kids.includes(UNSET)) throw new Error('Huffman table: the code is not complete')

  const table = new Uint32Array(states * 16)
  for (let state = 0; state < states; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state
      let entry = 0
      for (let i = 3; i >= 0; i--) {
        const child = kids[2 * node + ((nibble >>> i) & 1)]!
        if (child >= 0) {
          node = child
          continue
        }
        const sym = ~child
        if (sym === HUFFMAN_EOS) entry |= T_FAIL
        else entry |= T_EMIT | (sym << 8)
        node = 0
      }
      entry |= node
      if (allOnes[node] && depth[node]! <= 7) entry |= T_ACCEPT
      table[state * 16 + nibble] = entry
    }
  }
  return table
}

/** Where Huffman-decoded octets are gathered before becoming a string; grown on demand, never shrunk. */
let huffmanScratch = Buffer.allocUnsafe(1024)

/** Decodes the Huffman string in src[start, end). Throws HpackError on bad padding or an EOS symbol (§5.2). */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string {
  // Every code is at least 5 bits, so n octets hold at most 8n/5 symbols.
  const most = Math.floor(((end - start) * 8) / 5)
  if (huffmanScratch.length < most) huffmanScratch = Buffer.allocUnsafe(Math.max(most, huffmanScratch.length * 2))
  const out = huffmanScratch
  const table = HUFFMAN_DECODE
  let n = 0
  let state = 0
  let accept = true
  for (let i = start; i < end; i++) {
    const byte = src[i]!
    let t = table[(state << 4) | (byte >>> 4)]!
    if (t & T_FAIL) throw new HpackError('Huffman string contains EOS')
    if (t & T_EMIT) out[n++] = t >>> 8
    t = table[((t & 0xff) << 4) | (byte & 0x0f)]!
    if (t & T_FAIL) throw new HpackError('Huffman string contains EOS')
    if (t & T_EMIT) out[n++] = t >>> 8
    state = t & 0xff
    accept = (t & T_ACCEPT) !== 0
  }
  if (!accept) throw new HpackError('Huffman string has invalid padding')
  return out.toString('latin1', 0, n)
}

/** Octets the Huffman encoding of s takes (s holds octets as latin1 chars). */
export function huffmanEncodedLength(s: string): number {
  let bits = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c > 0xff) throw new RangeError('Huffman input must be octets (latin1)')
    bits += HUFFMAN_LENGTHS[c]!
  }
  return Math.ceil(bits / 8)
}

/** Writes the Huffman encoding of s at dst[at], padded with EOS's leading ones; returns the offset after it. */
export function huffmanEncodeInto(s: string, dst: Uint8Array, at: number): number {
  // acc holds the bits not yet written (fewer than 8 between pieces); a code is added in pieces of at most 24 bits so
  // that acc stays within 31 bits.
  let acc = 0
  let bits = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c > 0xff) throw new RangeError('Huffman input must be octets (latin1)')
    const code = HUFFMAN_CODES[c]!
    let len = HUFFMAN_LENGTHS[c]!
    while (len > 0) {
      const take = len > 24 ? len - 24 : len // the high bits of a long code first
      len -= take
      acc = (acc << take) | ((code >>> len) & ((1 << take) - 1))
      bits += take
      while (bits >= 8) {
        bits -= 8
        dst[at++] = (acc >>> bits) & 0xff
      }
      acc &= (1 << bits) - 1
    }
  }
  if (bits > 0) dst[at++] = ((acc << (8 - bits)) | (0xff >>> bits)) & 0xff
  return at
}

/** The Huffman encoding of s (octets as latin1 chars). */
export function huffmanEncode(s: string): Buffer {
  const out = Buffer.allocUnsafe(huffmanEncodedLength(s))
  huffmanEncodeInto(s, out, 0)
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Integers (§5.1)

/** The offset after the integer last read by readInteger (a module variable, to return two numbers without allocating). */
let integerEnd = 0

/** Reads the integer with an N-bit prefix at src[at] (at < end); its end goes to integerEnd. */
function readInteger(src: Uint8Array, at: number, end: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1
  let value = src[at++]! & max
  if (value === max) {
    let scale = 1
    for (let n = 0; ; n++) {
      if (at >= end) throw new HpackError('truncated integer')
      if (n === MAX_CONTINUATION_BYTES) throw new HpackError('integer encoding too long')
      const b = src[at++]!
      value += (b & 0x7f) * scale // arithmetic, not shifts: the sum may pass 32 bits before the check below
      scale *= 128
      if (b < 0x80) break
    }
    if (value > MAX_INTEGER) throw new HpackError('integer too large')
  }
  integerEnd = at
  return value
}

/** Reads the integer with an N-bit prefix at src[at]; throws HpackError if it is truncated or too large. */
export function decodeInteger(src: Uint8Array, at: number, prefixBits: number): { value: number; next: number } {
  if (at >= src.length) throw new HpackError('truncated integer')
  const value = readInteger(src, at, src.length, prefixBits)
  return { value, next: integerEnd }
}

/** Writes value with an N-bit prefix at dst[at], OR-ing flags into the first byte; returns the offset after it. */
function writeInteger(dst: Uint8Array, at: number, value: number, prefixBits: number, flags: number): number {
  const max = (1 << prefixBits) - 1
  if (value < max) {
    dst[at++] = flags | value
    return at
  }
  dst[at++] = flags | max
  let rest = value - max
  while (rest >= 0x80) {
    dst[at++] = (rest & 0x7f) | 0x80
    rest = Math.floor(rest / 128)
  }
  dst[at++] = rest
  return at
}

/** The integer representation of value with an N-bit prefix, flags OR-ed into its first byte. */
export function encodeInteger(value: number, prefixBits: number, flags = 0): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError('an integer must be a non-negative safe integer')
  const out = Buffer.allocUnsafe(11)
  return out.subarray(0, writeInteger(out, 0, value, prefixBits, flags))
}

/** Writes a string literal (Huffman when strictly shorter); returns the offset after it. */
function writeString(dst: Buffer, at: number, s: string): number {
  const huffman = huffmanEncodedLength(s)
  if (huffman < s.length) return huffmanEncodeInto(s, dst, writeInteger(dst, at, huffman, 7, 0x80))
  at = writeInteger(dst, at, s.length, 7, 0)
  return at + dst.write(s, at, 'latin1')
}

// ---------------------------------------------------------------------------------------------------------------
// Decoder

const EMPTY = Buffer.alloc(0)

export class HpackDecoder {
  /** The size we advertise: the peer's size updates may not exceed it. */
  readonly maxTableSize: number
  /** The table's current maximum, as last set by the peer (§4.2). */
  private limit: number
  private size = 0
  // The dynamic table as a ring: the oldest entry at head, the newest at head + count - 1 (index 62).
  private names: string[] = new Array<string>(16).fill('')
  private values: string[] = new Array<string>(16).fill('')
  private head = 0
  private count = 0
  /** Set while a block is being decoded, and left set if it failed: the table may no longer match the peer's. */
  private broken = false
  private src: Buffer = EMPTY
  private pos = 0
  private end = 0

  constructor(maxTableSize = DEFAULT_TABLE_SIZE) {
    if (!Number.isInteger(maxTableSize) || maxTableSize < 0 || maxTableSize > MAX_INTEGER) {
      throw new RangeError('maxTableSize must be an integer from 0 to 2^31 - 1')
    }
    this.maxTableSize = maxTableSize
    this.limit = maxTableSize
  }

  /** Current dynamic table size in octets (RFC 7541 §4.1 accounting: name + value + 32 per entry). */
  get tableSize(): number {
    return this.size
  }

  /** The dynamic table, newest first (index 62 first). */
  entries(): Array<[string, string]> {
    const out: Array<[string, string]> = []
    for (let i = 0; i < this.count; i++) {
      const slot = (this.head + this.count - 1 - i) & (this.names.length - 1)
      out.push([this.names[slot]!, this.values[slot]!])
    }
    return out
  }

  /**
   * Decodes one complete header block. Throws HpackError on malformed input, and HeaderListLimitError at the first
   * field past `maxPairs` fields or `maxBytes` octets (name + value + 32 each, RFC 9113 §6.5.2); after either, every
   * call throws.
   */
  decode(block: Buffer, maxPairs = Number.POSITIVE_INFINITY, maxBytes = Number.POSITIVE_INFINITY): Array<[string, string]> {
    if (this.broken) throw new HpackError('the header table is unusable after an earlier error')
    this.broken = true
    this.src = block
    this.pos = 0
    this.end = block.length
    const out: Array<[string, string]> = []
    let fieldSeen = false
    let bytes = 0
    try {
      while (this.pos < this.end) {
        const b = block[this.pos]!
        let field: [string, string]
        if (b & 0x80) {
          // §6.1 indexed header field
          field = this.field(this.integer(7))
        } else if (b & 0x40) {
          // §6.2.1 literal with incremental indexing
          const name = this.literalName(6)
          const value = this.string()
          this.insert(name, value)
          field = [name, value]
        } else if (b & 0x20) {
          // §6.3 dynamic table size update: only before the first field (§4.2)
          if (fieldSeen) throw new HpackError('dynamic table size update after a header field')
          const size = this.integer(5)
          if (size > this.maxTableSize) throw new HpackError(`dynamic table size update to ${size} above ${this.maxTableSize}`)
          this.limit = size
          this.evictFor(0)
          continue
        } else {
          // §6.2.2 without indexing (0000) and §6.2.3 never indexed (0001): the same to a decoder that forwards nothing
          const name = this.literalName(4)
          field = [name, this.string()]
        }
        bytes += field[0].length + field[1].length + ENTRY_OVERHEAD
        if (out.length >= maxPairs) throw new HeaderListLimitError(`more than ${maxPairs} header fields`)
        if (bytes > maxBytes) throw new HeaderListLimitError(`a header list over ${maxBytes} bytes`)
        out.push(field)
        fieldSeen = true
      }
    } finally {
      this.src = EMPTY // do not keep the caller's buffer alive
    }
    this.broken = false
    return out
  }

  private integer(prefixBits: number): number {
    const value = readInteger(this.src, this.pos, this.end, prefixBits)
    this.pos = integerEnd
    return value
  }

  private string(): string {
    if (this.pos >= this.end) throw new HpackError('truncated header block: string expected')
    const huffman = (this.src[this.pos]! & 0x80) !== 0
    const length = this.integer(7)
    const start = this.pos
    if (length > this.end - start) throw new HpackError('truncated string literal')
    this.pos = start + length
    if (huffman) return huffmanDecode(this.src, start, this.pos)
    return this.src.toString('latin1', start, this.pos)
  }

  /** The name of a literal field: an index with the given prefix, or 0 and a string literal. */
  private literalName(prefixBits: number): string {
    const index = this.integer(prefixBits)
    if (index === 0) return this.string()
    return this.field(index)[0]
  }

  private field(index: number): [string, string] {
    if (index === 0) throw new HpackError('index 0')
    if (index <= STATIC_COUNT) {
      const entry = STATIC_TABLE[index - 1]!
      return [entry[0], entry[1]]
    }
    const i = index - STATIC_COUNT - 1
    if (i >= this.count) throw new HpackError(`index ${index} beyond the table (${STATIC_COUNT + this.count} entries)`)
    const slot = (this.head + this.count - 1 - i) & (this.names.length - 1)
    return [this.names[slot]!, this.values[slot]!]
  }

  /** Adds an entry (§4.4): evicts the oldest until it fits; an entry larger than the table empties it. */
  private insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD
    this.evictFor(size)
    if (size > this.limit) return
    if (this.count === this.names.length) this.grow()
    const slot = (this.head + this.count) & (this.names.length - 1)
    this.names[slot] = name
    this.values[slot] = value
    this.count++
    this.size += size
  }

  /** Evicts the oldest entries until `room` more octets fit under the limit (or the table is empty). */
  private evictFor(room: number): void {
    const mask = this.names.length - 1
    while (this.count > 0 && this.size + room > this.limit) {
      const h = this.head
      this.size -= this.names[h]!.length + this.values[h]!.length + ENTRY_OVERHEAD
      this.names[h] = ''
      this.values[h] = ''
      this.head = (h + 1) & mask
      this.count--
    }
  }

  /** Doubles the ring, the oldest entry moving to slot 0. */
  private grow(): void {
    const n = this.names.length
    const names = new Array<string>(n * 2).fill('')
    const values = new Array<string>(n * 2).fill('')
    for (let i = 0; i < this.count; i++) {
      names[i] = this.names[(this.head + i) & (n - 1)]!
      values[i] = this.values[(this.head + i) & (n - 1)]!
    }
    this.names = names
    this.values = values
    this.head = 0
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Encoder

/** Header names whose values are unique per request, sent without indexing so that they do not churn the table. */
export const DEFAULT_NO_INDEX: readonly string[] = ['content-length', 'apns-id', 'apns-expiration', 'apns-collapse-id']

export interface HpackEncoderOptions {
  /** Names sent as literals without indexing (§6.2.2); default DEFAULT_NO_INDEX. */
  noIndex?: Iterable<string>
  /** Index a pair only the second time it is sent (default false: the first time). A value that is new on every
   *  request (an APNs `:path` names the device) then never evicts the entries that repeat (the provider token). */
  secondSight?: boolean
}

/** How many pairs seen once are remembered for `secondSight` (then forgotten all at once). */
const SEEN_ONCE_MAX = 256

interface Entry {
  name: string
  value: string
  size: number
  /** Insertion number (1, 2, …): the index is STATIC_COUNT + 1 + (inserted - seq), the newest being 62. */
  seq: number
}

/** A lower-case token (RFC 9110 §5.6.2), or a pseudo-header: ':' and such a token. */
const VALID_NAME = /^:?[a-z0-9!#$%&'*+\-.^_`|~]+$/
/** NUL, CR, LF (RFC 9113 §8.2.1), and chars that are not octets (they would not survive as latin1). */
const INVALID_VALUE = /[\0\r\n\u0100-\uffff]/

export class HpackEncoder {
  /** Names sent as literals without indexing: values unique per request would only evict useful entries. */
  noIndex: Set<string>
  /** The dynamic table's maximum: min(the peer's SETTINGS_HEADER_TABLE_SIZE, 4096). */
  private maxSize = DEFAULT_TABLE_SIZE
  private size = 0
  /** The smallest maximum set since the last block, to be signalled first (§4.2); -1 when none is due. */
  private pendingMin = -1
  /** name → value → entry: the lookups of repeated requests are two Map hits on strings whose hashes V8 keeps. */
  private readonly byPair = new Map<string, Map<string, Entry>>()
  /** Entries oldest first, from fifoHead (the array is compacted now and then rather than shifted per eviction). */
  private fifo: Entry[] = []
  private fifoHead = 0
  private inserted = 0
  private scratch = Buffer.allocUnsafe(4096)
  /** `secondSight`: the pairs sent once, not indexed yet; null when pairs are indexed at first sight. */
  private readonly seenOnce: Set<string> | null

  /** peerMaxTableSize: the peer's SETTINGS_HEADER_TABLE_SIZE (default 4096). */
  constructor(peerMaxTableSize = DEFAULT_TABLE_SIZE, options: HpackEncoderOptions = {}) {
    this.noIndex = new Set(options.noIndex ?? DEFAULT_NO_INDEX)
    this.seenOnce = options.secondSight ? new Set() : null
    // Both ends start at 4096 (RFC 9113 §6.5.2); a smaller peer setting must be signalled.
    if (Math.min(peerMaxTableSize, DEFAULT_TABLE_SIZE) !== DEFAULT_TABLE_SIZE) this.setPeerMaxTableSize(peerMaxTableSize)
  }

  /** Current dynamic table size in octets. */
  get tableSize(): number {
    return this.size
  }

  /** The dynamic table, newest first (index 62 first). */
  entries(): Array<[string, string]> {
    const out: Array<[string, string]> = []
    for (let i = this.fifo.length - 1; i >= this.fifoHead; i--) out.push([this.fifo[i]!.name, this.fifo[i]!.value])
    return out
  }

  /** The peer changed SETTINGS_HEADER_TABLE_SIZE: the next block starts with a size update to min(size, 4096). */
  setPeerMaxTableSize(size: number): void {
    if (!Number.isInteger(size) || size < 0 || size > 0xffffffff)
      throw new RangeError('a table size is an integer from 0 to 2^32 - 1')
    const target = Math.min(size, DEFAULT_TABLE_SIZE)
    this.maxSize = target
    this.evictFor(0)
    this.pendingMin = this.pendingMin < 0 ? target : Math.min(this.pendingMin, target)
  }

  /** Encodes one header block. Throws TypeError, with no state changed, on an invalid name or value. */
  encode(headers: ReadonlyArray<readonly [string, string]>): Buffer {
    // Validate everything first, so that a refusal leaves the table as it was. Pairs already in a table were checked
    // when they got there.
    let room = 12 // two size updates
    for (const [name, value] of headers) {
      if (typeof name !== 'string' || typeof value !== 'string') throw new TypeError('header names and values must be strings')
      room += name.length + value.length + 14 // representation byte, two lengths of up to 6 bytes each, slack
      if (STATIC_PAIRS.get(name)?.has(value) || this.byPair.get(name)?.has(value)) continue
      if (!VALID_NAME.test(name)) throw new TypeError(`invalid header name: ${JSON.stringify(name)}`)
      if (INVALID_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}`)
    }

    if (this.scratch.length < room) this.scratch = Buffer.allocUnsafe(Math.max(room, this.scratch.length * 2))
    const dst = this.scratch
    let at = 0
    if (this.pendingMin >= 0) {
      at = writeInteger(dst, at, this.pendingMin, 5, 0x20)
      if (this.maxSize !== this.pendingMin) at = writeInteger(dst, at, this.maxSize, 5, 0x20)
      this.pendingMin = -1
    }
    for (const [name, value] of headers) {
      const staticIndex = STATIC_PAIRS.get(name)?.get(value)
      if (staticIndex !== undefined) {
        at = writeInteger(dst, at, staticIndex, 7, 0x80)
        continue
      }
      // Looked up at this point, not during validation: earlier fields of this block may have added or evicted entries.
      const entry = this.byPair.get(name)?.get(value)
      if (entry) {
        at = writeInteger(dst, at, STATIC_COUNT + 1 + this.inserted - entry.seq, 7, 0x80)
        continue
      }
      const nameIndex = STATIC_NAMES.get(name) ?? 0
      const size = name.length + value.length + ENTRY_OVERHEAD
      // Up to half the table: a provider's bearer token (~1 KB for Google's) is the pair most worth indexing.
      const indexed = size <= this.maxSize / 2 && !this.noIndex.has(name) && this.secondTime(name, value)
      at = indexed ? writeInteger(dst, at, nameIndex, 6, 0x40) : writeInteger(dst, at, nameIndex, 4, 0x00)
      if (nameIndex === 0) at = writeString(dst, at, name)
      at = writeString(dst, at, value)
      if (indexed) this.insert(name, value, size)
    }
    const out = Buffer.allocUnsafe(at)
    dst.copy(out, 0, 0, at)
    return out
  }

  /** Whether the pair may be indexed now: always, or (secondSight) when it was sent once before. */
  private secondTime(name: string, value: string): boolean {
    const seen = this.seenOnce
    if (!seen) return true
    const key = `${name}\0${value}`
    if (seen.delete(key)) return true
    if (seen.size >= SEEN_ONCE_MAX) seen.clear()
    seen.add(key)
    return false
  }

  private insert(name: string, value: string, size: number): void {
    this.evictFor(size)
    const entry: Entry = { name, value, size, seq: ++this.inserted }
    this.fifo.push(entry)
    this.size += size
    const values = this.byPair.get(name)
    if (values) values.set(value, entry)
    else this.byPair.set(name, new Map([[value, entry]]))
  }

  /** Evicts the oldest entries until `room` more octets fit (§4.4). */
  private evictFor(room: number): void {
    while (this.fifoHead < this.fifo.length && this.size + room > this.maxSize) {
      const old = this.fifo[this.fifoHead++]!
      this.size -= old.size
      const values = this.byPair.get(old.name)
      if (values?.get(old.value) === old) {
        values.delete(old.value)
        if (values.size === 0) this.byPair.delete(old.name)
      }
    }
    if (this.fifoHead > 64 && this.fifoHead * 2 > this.fifo.length) {
      this.fifo = this.fifo.slice(this.fifoHead)
      this.fifoHead = 0
    }
  }
}
