// APNs provider authentication tokens (developer.apple.com "Establishing a token-based connection to APNs"): an ES256
// JWT with header kid = Key ID and claims iss = Team ID, iat. Apple refuses a token older than one hour
// (ExpiredProviderToken) and one replaced more often than every 20 minutes (TooManyProviderTokenUpdates), so one
// token per signing key is shared by every app using that key and replaced when it is `refreshMs` old (50 min).
import { createHash } from 'node:crypto'
import jwt from 'jsonwebtoken'
import type { ApnsCredential } from './credentials'
import type { Outcome } from './types'

export const APNS_TOKEN_REFRESH_MS = 50 * 60_000

/** The cache key of a signing key: Team ID, Key ID and a digest of the .p8 (a re-uploaded key signs anew). */
export function signingKeyId(cred: ApnsCredential): string {
  return `${cred.teamId}:${cred.keyId}:${createHash('sha256').update(cred.p8).digest('hex').slice(0, 16)}`
}

export class ApnsTokens {
  readonly #cache = new Map<string, { token: string; issuedMs: number }>()
  /** Tokens signed so far (tests: the refresh window). */
  signed = 0

  constructor(readonly refreshMs = APNS_TOKEN_REFRESH_MS) {}

  get(cred: ApnsCredential, key: string, nowMs: number): { token: string } | { outcome: Outcome } {
    const c = this.#cache.get(key)
    if (c && nowMs - c.issuedMs < this.refreshMs && nowMs >= c.issuedMs) return { token: c.token }
    try {
      const token = jwt.sign({ iss: cred.teamId, iat: Math.floor(nowMs / 1000) }, cred.p8, {
        algorithm: 'ES256',
        keyid: cred.keyId,
      })
      this.#cache.set(key, { token, issuedMs: nowMs })
      this.signed++
      return { token }
    } catch (err) {
      return { outcome: { kind: 'credential', reason: `InvalidProviderToken: .p8 key unusable (${(err as Error).message})` } }
    }
  }

  /** APNs answered ExpiredProviderToken for this token: sign a new one next time, unless that already happened. */
  invalidate(key: string, token: string): void {
    if (this.#cache.get(key)?.token === token) this.#cache.delete(key)
  }
}
