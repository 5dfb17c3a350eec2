// API key format (the spec, API key formats) and the three Authorization forms (the spec, Authentication 1).
import { hash, randomBytes, randomInt } from 'node:crypto'

const KEY_RE = /^pm_(live|test)_([a-z0-9]{8})_([A-Za-z0-9]{43})$/
const KID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
const SECRET_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

export interface ParsedKey {
  raw: string
  sandbox: boolean
  kid: string
}

export interface NewKey {
  apiKey: string
  kid: string
  hash: Buffer
  sandbox: boolean
}

function randomString(alphabet: string, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[randomInt(alphabet.length)]
  return s
}

/** One-shot (no Hash object): every server request checks its key with it, and createHash showed in profiles. */
export function sha256(s: string): Buffer {
  return hash('sha256', s, 'buffer')
}

export function newApiKey(sandbox: boolean): NewKey {
  const kid = randomString(KID_ALPHABET, 8)
  const apiKey = `pm_${sandbox ? 'test' : 'live'}_${kid}_${randomString(SECRET_ALPHABET, 43)}`
  return { apiKey, kid, hash: sha256(apiKey), sandbox }
}

/** 64 hex characters: the secret that signs delivery proofs (the spec, App receipt_key). */
export function newReceiptKey(): string {
  return randomBytes(32).toString('hex')
}

export function parseKey(s: string): ParsedKey | null {
  const m = KEY_RE.exec(s)
  return m ? { raw: s, sandbox: m[1] === 'test', kid: m[2] as string } : null
}

/** A `kid` may be logged; it is taken only from something shaped like a key, never from arbitrary text. */
export function kidOf(s: string): string | undefined {
  return /^pm_(?:live|test)_([a-z0-9]{8})_/.exec(s)?.[1]
}

export type AuthorizationResult = { kind: 'missing' } | { kind: 'malformed'; kid?: string } | { kind: 'key'; key: ParsedKey }

/** `Basic <KEY>`, `Bearer <KEY>`, or `Basic base64("anything:<KEY>")`; the scheme name is case-insensitive. */
export function readAuthorization(header: string | undefined): AuthorizationResult {
  if (header === undefined || header.trim() === '') return { kind: 'missing' }
  const m = /^\s*(basic|bearer)\s+(\S+)\s*$/i.exec(header)
  if (!m) return { kind: 'malformed', kid: kidOf(header.trim()) }
  const scheme = (m[1] as string).toLowerCase()
  const token = m[2] as string
  const direct = parseKey(token)
  if (direct) return { kind: 'key', key: direct }
  if (scheme === 'basic') {
    const decoded = Buffer.from(token, 'base64').toString('utf8')
    const colon = decoded.lastIndexOf(':')
    if (colon >= 0) {
      const fromBasic = parseKey(decoded.slice(colon + 1))
      if (fromBasic) return { kind: 'key', key: fromBasic }
    }
  }
  return { kind: 'malformed', kid: kidOf(token) }
}
