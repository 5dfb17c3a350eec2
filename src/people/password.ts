// Dashboard passwords: scrypt (node:crypto) with a random salt, stored as `scrypt$N$r$p$salt$hash` (base64url), so
// the cost can be raised later without invalidating stored hashes. Verification is constant-time.
import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto'

export const PASSWORD_MIN_CHARS = 12
/** Far above any real password; bounds the work one sign-in attempt can cause. */
export const PASSWORD_MAX_CHARS = 1024

const COST = { N: 16384, r: 8, p: 1 }
const KEY_LEN = 32

function derive(password: string, salt: Buffer, o: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LEN, { ...o, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
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

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, COST)
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number]
  const expected = Buffer.from(parts[5] as string, 'base64url')
  if (password.length > PASSWORD_MAX_CHARS * 2 || !password.isWellFormed()) return false
  const key = await derive(password, Buffer.from(parts[4] as string, 'base64url'), { N, r, p })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/** A hash of a random password: sign-in attempts for unknown e-mails cost the same time as real ones. */
let decoy: Promise<string> | undefined
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(18).toString('base64url'))
  return decoy
}
