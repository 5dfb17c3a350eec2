// Dashboard passwords: scrypt (node:crypto) with a random salt, stored as `scrypt$N$r$p$salt$hash` (base64url). The
// parameters travel with each hash, so the cost is raised without invalidating stored hashes: an older hash still
// verifies under its own parameters and `needsRehash` tells the sign-in to store a new one. Verification is
// constant-time.
//
// One hash at N=2^17, r=8 needs 128 MiB and a few hundred milliseconds of a libuv thread (crypto.scrypt runs off the
// event loop). At most HASH_CONCURRENCY hashes run at once in a process, so memory stays near
// HASH_CONCURRENCY × 128 MiB whatever arrives; at most HASH_QUEUE wait behind them, and past that a hash is refused
// at once (PasswordBusyError) rather than queued without end.
import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto'

export const PASSWORD_MIN_CHARS = 12
/** Far above any real password; bounds the work one sign-in attempt can cause. */
export const PASSWORD_MAX_CHARS = 1024

export interface ScryptCost {
  readonly N: number
  readonly r: number
  readonly p: number
}

/** The cost new hashes get by default (OWASP's scrypt guidance: N=2^17, r=8, p=1); PM_DASHBOARD_SCRYPT_N sets N. */
export const SCRYPT_COST: ScryptCost = Object.freeze({ N: 2 ** 17, r: 8, p: 1 })
const KEY_LEN = 32
/** Stored parameters outside these bounds are refused, not run: a hash never costs more than 1 GiB. */
const N_MIN_LOG2 = 14
const N_MAX_LOG2 = 20

/** The cost new hashes get when N is `n` (a power of two within the bounds; src/core/config.ts checks it). */
export function scryptCost(n: number): ScryptCost {
  return n === SCRYPT_COST.N ? SCRYPT_COST : Object.freeze({ ...SCRYPT_COST, N: n })
}

export const HASH_CONCURRENCY = 2
export const HASH_QUEUE = 32

/** Too many passwords are being checked at once in this process: the caller answers "try again shortly". */
export class PasswordBusyError extends Error {
  override name = 'PasswordBusyError'
}

let running = 0
let peak = 0
const waiting: Array<() => void> = []

/** Hashes running now and the most that ever ran at once (tests read them). */
export function hashingLoad(): { running: number; waiting: number; peak: number } {
  return { running, waiting: waiting.length, peak }
}

async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= HASH_CONCURRENCY) {
    if (waiting.length >= HASH_QUEUE) throw new PasswordBusyError('too many password hashes at once')
    await new Promise<void>((resolve) => waiting.push(resolve))
  }
  running++
  peak = Math.max(peak, running)
  try {
    return await fn()
  } finally {
    running--
    waiting.shift()?.()
  }
}

/** scrypt's own memory check counts the V array and the p blocks: 128·r·(N + p + 2) bytes, plus a margin. */
const maxmemFor = (o: { N: number; r: number; p: number }): number => 128 * o.r * (o.N + o.p + 2) + 1024 * 1024

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const opts: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: maxmemFor(o) }
  return limited(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        scrypt(password.normalize('NFC'), salt, KEY_LEN, opts, (err, key) => (err ? reject(err) : resolve(key))),
      ),
  )
}

/** Why a new password is refused, in Portuguese; null when it is acceptable. */
export function passwordProblem(password: string): string | null {
  const n = [...password].length
  if (n < PASSWORD_MIN_CHARS) return `A senha precisa de pelo menos ${PASSWORD_MIN_CHARS} caracteres.`
  if (n > PASSWORD_MAX_CHARS) return `A senha pode ter no máximo ${PASSWORD_MAX_CHARS} caracteres.`
  if (!password.isWellFormed()) return 'A senha contém caracteres inválidos.'
  return null
}

export async function hashPassword(password: string, c: ScryptCost = SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, c)
  return `scrypt$${c.N}$${c.r}$${c.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

interface Parsed {
  N: number
  r: number
  p: number
  salt: Buffer
  key: Buffer
}

/** A stored hash's parts, or null when it is not one this module wrote (or its cost is out of bounds). */
function parse(stored: string): Parsed | null {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null
  const [N, r, p] = parts.slice(1, 4).map((x) => (/^\d{1,8}$/.test(x as string) ? Number(x) : Number.NaN)) as [
    number,
    number,
    number,
  ]
  const log2 = Math.log2(N)
  if (!Number.isInteger(log2) || log2 < N_MIN_LOG2 || log2 > N_MAX_LOG2) return null
  if (!(r >= 1 && r <= 16) || !(p >= 1 && p <= 4)) return null
  const salt = Buffer.from(parts[4] as string, 'base64url')
  const key = Buffer.from(parts[5] as string, 'base64url')
  if (salt.length < 16 || key.length !== KEY_LEN) return null
  return { N, r, p, salt, key }
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parse(stored)
  if (!h) return false
  if (password.length > PASSWORD_MAX_CHARS * 2 || !password.isWellFormed()) return false
  const key = await derive(password, h.salt, h)
  return timingSafeEqual(key, h.key)
}

/** True when a stored hash was made with other parameters than new hashes get: the next sign-in stores a new one. */
export function needsRehash(stored: string, c: ScryptCost = SCRYPT_COST): boolean {
  const h = parse(stored)
  return !h || h.N !== c.N || h.r !== c.r || h.p !== c.p
}

/** A hash of a random password at the given cost: sign-in attempts for unknown e-mails cost the same time as real
 *  ones. Made once per cost and process. */
const decoys = new Map<number, Promise<string>>()
export function decoyHash(c: ScryptCost = SCRYPT_COST): Promise<string> {
  let decoy = decoys.get(c.N)
  if (!decoy) {
    decoy = hashPassword(randomBytes(18).toString('base64url'), c)
    decoys.set(c.N, decoy)
    decoy.catch(() => decoys.delete(c.N))
  }
  return decoy
}
