// OAuth2 access tokens for FCM HTTP v1 from a service account (developers.google.com/identity/protocols/oauth2/
// service-account "Preparing to make an authorized API call"): an RS256 JWT with iss = client_email, scope =
// firebase.messaging, aud = token_uri, exp = iat + 3600, POSTed form-encoded to the account's token_uri as a
// jwt-bearer grant. One token per credential, reused until `earlyMs` before it expires; concurrent callers share
// one fetch. The token endpoint is reached through the same HTTP/2 pool (oauth2.googleapis.com speaks h2).
import jwt from 'jsonwebtoken'
import { type Clock, systemClock } from '../core/time'
import type { FcmCredential } from './credentials'
import { checkTokenUri, GOOGLE_FCM_HOST } from './endpoints'
import { failureOutcome } from './classify'
import type { H2Pool } from '../h2/pool'
import type { Outcome } from './types'

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** Google's longest assertion lifetime: "exp: … a maximum of 1 hour after the issued time". */
const ASSERTION_TTL_S = 3600

export type TokenResult = { token: string } | { outcome: Outcome }

export interface FcmAuthOptions {
  clock?: Clock
  /** Refresh this long before the token expires (default 5 min), so no send goes out with a dying token. */
  earlyMs?: number
  /**
   * The FCM base URL these tokens are for (cfg.fcmBaseUrl, or a simulator's): the token_uri is checked against it
   * before every token request (src/providers/endpoints.ts). Default: Google's FCM, so only Google's token endpoint.
   */
  fcmBaseUrl?: string
}

export class FcmAuth {
  #cached: { token: string; expiresAtMs: number } | undefined
  #inflight: Promise<TokenResult> | undefined
  readonly #clock: Clock
  readonly #earlyMs: number
  readonly #fcmBaseUrl: string
  /** Access tokens fetched so far (tests: "obtained once and reused"). */
  fetches = 0

  constructor(
    private readonly cred: FcmCredential,
    private readonly pool: H2Pool,
    o: FcmAuthOptions = {},
  ) {
    this.#clock = o.clock ?? systemClock
    this.#earlyMs = o.earlyMs ?? 5 * 60_000
    this.#fcmBaseUrl = o.fcmBaseUrl ?? `https://${GOOGLE_FCM_HOST}`
  }

  /** The cached token while it is usable, without waiting: the per-delivery path (token() when undefined). */
  current(): string | undefined {
    const c = this.#cached
    return c && this.#clock() < c.expiresAtMs - this.#earlyMs ? c.token : undefined
  }

  /** A usable access token, or the outcome every send gets while none can be had (credential or transient). */
  token(): Promise<TokenResult> {
    const current = this.current()
    if (current !== undefined) return Promise.resolve({ token: current })
    this.#inflight ??= this.#fetch().finally(() => {
      this.#inflight = undefined
    })
    return this.#inflight
  }

  /** FCM refused this token (401): forget it, unless a newer one already replaced it. */
  invalidate(token: string): void {
    if (this.#cached?.token === token) this.#cached = undefined
  }

  async #fetch(): Promise<TokenResult> {
    const startedMs = this.#clock()
    // Before every request, whatever was checked when the credential was stored: a credential stored before the
    // rule, or under another PM_FCM_BASE_URL, is refused here (a credential problem of the app, told in pm_problema).
    const endpoint = checkTokenUri(this.cred.token_uri, this.#fcmBaseUrl)
    if (!endpoint.ok) return { outcome: { kind: 'credential', reason: `service account refused: ${endpoint.reason}` } }
    let assertion: string
    let url: URL
    try {
      url = new URL(endpoint.uri)
      const iat = Math.floor(startedMs / 1000)
      const keyid = typeof this.cred.private_key_id === 'string' ? this.cred.private_key_id : undefined
      assertion = jwt.sign(
        { iss: this.cred.client_email, scope: FCM_SCOPE, aud: endpoint.uri, iat, exp: iat + ASSERTION_TTL_S },
        this.cred.private_key,
        { algorithm: 'RS256', ...(keyid ? { keyid } : {}) },
      )
    } catch (err) {
      return { outcome: { kind: 'credential', reason: `service account unusable: ${(err as Error).message}` } }
    }
    this.fetches++
    const form = new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString()
    const r = await this.pool.request(
      url.origin,
      {
        ':method': 'POST',
        ':path': `${url.pathname}${url.search}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      form,
    )
    if ('failure' in r) return this.#stillValid(startedMs) ?? { outcome: failureOutcome(r) }
    let j: Record<string, unknown> = {}
    try {
      j = JSON.parse(r.body.toString())
    } catch {}
    if (r.status === 200 && typeof j.access_token === 'string') {
      const ttlS = typeof j.expires_in === 'number' ? j.expires_in : ASSERTION_TTL_S
      this.#cached = { token: j.access_token, expiresAtMs: startedMs + ttlS * 1000 }
      return { token: j.access_token }
    }
    // RFC 6749 §5.2: 400/401 with `error` (invalid_grant: key deleted, clock skew, wrong audience; invalid_client …).
    const reason = `oauth ${typeof j.error === 'string' ? j.error : `HTTP ${r.status}`}${typeof j.error_description === 'string' ? `: ${j.error_description.slice(0, 200)}` : ''}`
    if (r.status >= 400 && r.status < 500 && r.status !== 429) return { outcome: { kind: 'credential', reason } }
    return this.#stillValid(startedMs) ?? { outcome: { kind: 'transient', reason } }
  }

  /** A refresh that failed for a transient reason inside the early window: the current token still has minutes. */
  #stillValid(nowMs: number): TokenResult | undefined {
    const c = this.#cached
    return c && nowMs < c.expiresAtMs - 30_000 ? { token: c.token } : undefined
  }
}
