// The canonical form of a send body, for idempotency (the spec, Sends "Bodies are compared in canonical form: object keys
// sorted, arrays in arrival order, numbers as arrived"; `1` and `1.0` differ). JSON.parse turns numerals into doubles
// and would make `1` and `1.0` equal, so this reads the raw text with a small recursive-descent reader instead.
//
// Canonical form, exactly:
// - objects: keys sorted by UTF-16 code units (the order of JS `<` and Array#sort); a repeated key keeps its last
//   value, as JSON.parse does; written `{"k":v,...}` with no whitespace;
// - arrays: elements in arrival order, `[a,b]`;
// - numbers: the raw numeral, byte for byte (`1e2` stays `1e2`, `-0` stays `-0`);
// - strings: decoded and re-serialised with JSON.stringify, so `"\u0041"` and `"A"` are one string;
// - `true`, `false`, `null` as themselves.
// Nesting is capped at MAX_DEPTH so a hostile body cannot overflow the stack; deeper is INVALID_JSON.
import { createHash } from 'node:crypto'
import { ApiError } from '../core/errors'

export const MAX_DEPTH = 256

// JSON number grammar (RFC 8259 §6), anchored at the reader's position.
const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y

// A string token is already canonical unless it holds an escape JSON.stringify would not write (`\/`, `\uXXXX`),
// a raw control character (invalid JSON) or a lone surrogate (JSON.stringify writes it as \udxxx). `\"`, `\\`,
// `\b`, `\f`, `\n`, `\r`, `\t` are JSON.stringify's own spellings, so they keep the fast path.
// (An escaped backslash before a letter, or U+007F-U+009F (\p{Cc} beyond U+001F), may take the slow path
// needlessly; the result is the same.)
const NOT_CANONICAL_RE = /\\[^"\\bfnrt]|\p{Cc}|\p{Cs}/u
// A key is compared by its decoded value: any backslash means decoding.
const NOT_PLAIN_RE = /\\|\p{Cc}|\p{Cs}/u

function bad(): ApiError<'INVALID_JSON'> {
  return new ApiError('INVALID_JSON')
}

/** The value of a string token; the native parser decodes escapes and refuses bad ones and raw control characters. */
function decode(raw: string): string {
  try {
    return JSON.parse(raw) as string
  } catch {
    throw bad()
  }
}

class Reader {
  pos = 0
  constructor(readonly text: string) {}

  skipWs(): void {
    const s = this.text
    let p = this.pos
    for (;;) {
      const c = s.charCodeAt(p)
      // RFC 8259 §2: space, tab, line feed, carriage return; nothing else.
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) p++
      else break
    }
    this.pos = p
  }

  value(depth: number): string {
    this.skipWs()
    const c = this.text.charCodeAt(this.pos)
    switch (c) {
      case 0x7b: // {
        return this.object(depth + 1)
      case 0x5b: // [
        return this.array(depth + 1)
      case 0x22: // "
        return this.canonicalString()
      case 0x74: // t
        return this.literal('true')
      case 0x66: // f
        return this.literal('false')
      case 0x6e: // n
        return this.literal('null')
      default:
        return this.number()
    }
  }

  literal(word: string): string {
    if (!this.text.startsWith(word, this.pos)) throw bad()
    this.pos += word.length
    return word
  }

  number(): string {
    NUMBER_RE.lastIndex = this.pos
    const m = NUMBER_RE.exec(this.text)
    if (!m) throw bad()
    this.pos += m[0].length
    return m[0]
  }

  /** The raw token of a string, quotes included; the reader sits on its opening quote. */
  stringToken(): string {
    const s = this.text
    const start = this.pos
    let p = start + 1
    for (;;) {
      const q = s.indexOf('"', p)
      if (q < 0) throw bad()
      // A quote preceded by an odd run of backslashes is escaped.
      let n = 0
      while (s.charCodeAt(q - 1 - n) === 0x5c) n++
      if (n % 2 === 0) {
        p = q
        break
      }
      p = q + 1
    }
    this.pos = p + 1
    return s.slice(start, p + 1)
  }

  /** A string value in canonical form: the raw token when it already is (the common case), else re-serialised. */
  canonicalString(): string {
    const raw = this.stringToken()
    if (!NOT_CANONICAL_RE.test(raw)) return raw
    return JSON.stringify(decode(raw))
  }

  object(depth: number): string {
    if (depth > MAX_DEPTH) throw bad()
    this.pos++ // {
    this.skipWs()
    if (this.text.charCodeAt(this.pos) === 0x7d) {
      this.pos++
      return '{}'
    }
    const keys: string[] = [] // decoded, for ordering
    const members: string[] = [] // `"key":value`, canonical
    let sorted = true
    for (;;) {
      this.skipWs()
      if (this.text.charCodeAt(this.pos) !== 0x22) throw bad()
      const raw = this.stringToken()
      const simple = !NOT_PLAIN_RE.test(raw)
      const key = simple ? raw.slice(1, -1) : decode(raw)
      this.skipWs()
      if (this.text.charCodeAt(this.pos) !== 0x3a) throw bad() // :
      this.pos++
      const v = this.value(depth)
      const last = keys[keys.length - 1]
      if (last !== undefined && !(last < key)) sorted = false
      keys.push(key)
      members.push(`${simple ? raw : JSON.stringify(key)}:${v}`)
      this.skipWs()
      const c = this.text.charCodeAt(this.pos++)
      if (c === 0x2c) continue // ,
      if (c === 0x7d) break // }
      throw bad()
    }
    if (sorted) return `{${members.join(',')}}`
    // Sort positions by key; equal keys keep arrival order (stable sort), and the last of a run wins, as in JSON.parse.
    const order = keys
      .map((_, i) => i)
      .sort((a, b) => {
        const ka = keys[a] as string
        const kb = keys[b] as string
        return ka < kb ? -1 : ka > kb ? 1 : 0
      })
    const out: string[] = []
    for (let j = 0; j < order.length; j++) {
      const i = order[j] as number
      const next = order[j + 1]
      if (next !== undefined && keys[next] === keys[i]) continue
      out.push(members[i] as string)
    }
    return `{${out.join(',')}}`
  }

  array(depth: number): string {
    if (depth > MAX_DEPTH) throw bad()
    this.pos++ // [
    this.skipWs()
    if (this.text.charCodeAt(this.pos) === 0x5d) {
      this.pos++
      return '[]'
    }
    const parts: string[] = []
    for (;;) {
      parts.push(this.value(depth))
      this.skipWs()
      const c = this.text.charCodeAt(this.pos++)
      if (c === 0x2c) continue // ,
      if (c === 0x5d) break // ]
      throw bad()
    }
    return `[${parts.join(',')}]`
  }
}

/** The canonical text of a JSON document; throws INVALID_JSON (400) when the input is not exactly one JSON value. */
export function canonicalBody(raw: Buffer | string): string {
  // A Buffer is read as UTF-8, as Request.json() does, so both see the same characters.
  const r = new Reader(typeof raw === 'string' ? raw : raw.toString('utf8'))
  const out = r.value(0)
  r.skipWs()
  if (r.pos !== r.text.length) throw bad()
  return out
}

/** sha256 (hex) of the canonical form: the body hash stored with an idempotency key (the spec, Sends). */
export function bodyHash(raw: Buffer | string): string {
  return createHash('sha256').update(canonicalBody(raw), 'utf8').digest('hex')
}
