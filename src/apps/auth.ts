// The two credentials (the spec, Authentication): the app key on server routes, the platform key on operator routes.
// Rejections are audited with the route, the source address and at most the key's kid, never the key itself.
//
// Every failed authentication counts toward its source's per-IP limit (PM_LIMIT_IP_PER_MIN, the public routes'
// limiter), and a source whose failures alone reach that limit gets 429 before its key is looked up: guessing keys
// costs the guesser its quota, and the directory's negative cache (src/apps/directory.ts) keeps each wrong key to one
// query. Only failures hold a source back: a customer's server that shares an address with its own devices (a
// developer's machine, a NAT) keeps sending however busy the public routes are, and a key that already passed on
// this instance is not held back at all (a customer's server may share an address with whoever is guessing).
import { timingSafeEqual } from 'node:crypto'
import type { Logger } from 'pino'
import { ApiError } from '../core/errors'
import { IpLimiter } from '../http/ip-limit'
import type { Request } from '../http/request'
import { isUuid } from '../http/router'
import type { AppDirectory } from './directory'
import { readAuthorization, sha256 } from './key-format'
import type { AppRecord, KeyRecord } from './store'

/** Who a rejection is audited as: an HTTP request, or another transport's caller (the gRPC stream). */
export type AuditWho = Pick<Request, 'ip' | 'method' | 'path' | 'id'> | { ip: string; route: string; id: string }

/** How many keys that passed keep their digest (an app has a few live keys; an instance serves many apps). */
const PASSED_KEYS_KEPT = 10_000

export class Auth {
  readonly #platformHash: Buffer | null
  readonly #digests = new Map<string, Buffer>()

  constructor(
    private readonly dir: AppDirectory,
    platformKey: string | null,
    private readonly audit: Logger,
    private readonly now: () => number,
    /** The public routes' per-IP limiter: failures count toward it (none: failures are only audited). */
    private readonly limiter: IpLimiter | null = null,
  ) {
    this.#platformHash = platformKey ? sha256(platformKey) : null
    this.#failures = limiter && limiter.limit > 0 ? new IpLimiter(limiter.limit, 'sliding', now) : null
  }

  /** Failed authentications alone, per source, over the same sliding minute and limit as the public routes. */
  readonly #failures: IpLimiter | null

  /** The operator's key: 503 when this instance has none, 429 when its source failed too often, 401 when missing
   *  or wrong. Checked before any body. */
  platform(req: Request): void {
    if (!this.#platformHash) throw new ApiError('PLATFORM_KEY_UNSET')
    this.#holdBack(req)
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '')
    // Hashing both sides gives equal lengths, so the comparison time says nothing about the key.
    if (!m || !timingSafeEqual(sha256(m[1] as string), this.#platformHash)) {
      const a = readAuthorization(req.header('authorization'))
      this.#reject(req, m ? 'wrong' : 'missing', a.kind === 'key' ? a.key.kid : a.kind === 'malformed' ? a.kid : undefined)
      throw new ApiError('PLATFORM_AUTH_FAILED')
    }
  }

  /** 429 for a source at its per-IP limit, before anything is looked up (not audited line by line: the access log
   *  has the 429s, and a flood must not become a flood of audit lines). */
  #holdBack(who: AuditWho): void {
    if (this.#failures?.over(who.ip)) throw new ApiError('IP_RATE_LIMITED', { limite: this.#failures.limit })
  }

  /** Resolves the app key of a server route (401 on any failure). Call before reading the body. */
  appKey(req: Request): Promise<KeyRecord> {
    return this.keyOf(req.header('authorization'), req)
  }

  /**
   * The app key named by an `Authorization` value (HTTP header or gRPC metadata): missing, malformed, unknown,
   * revoked or expired throws the 401 (the rejection is audited as `who`). Resolved through the cached directory.
   */
  async keyOf(header: string | undefined, who: AuditWho): Promise<KeyRecord> {
    const a = readAuthorization(header)
    if (!(a.kind === 'key' && this.#digests.has(a.key.raw))) this.#holdBack(who)
    if (a.kind === 'missing') {
      this.#reject(who, 'missing')
      throw new ApiError('AUTH_MISSING')
    }
    if (a.kind === 'malformed') {
      this.#reject(who, 'malformed', a.kid)
      throw new ApiError('AUTH_MALFORMED')
    }
    const rec = await this.dir.key(a.key.kid)
    const digest = this.#digests.get(a.key.raw) ?? sha256(a.key.raw)
    const valid =
      rec !== null &&
      timingSafeEqual(digest, rec.hash) &&
      !rec.revoked &&
      (rec.expiresAtMs === null || this.now() < rec.expiresAtMs)
    if (!valid) {
      this.#reject(who, rec === null ? 'unknown' : rec.revoked ? 'revoked' : 'wrong-or-expired', a.key.kid)
      throw new ApiError('AUTH_REJECTED')
    }
    this.#remember(a.key.raw, digest)
    return rec
  }

  /**
   * A key that passed is remembered with its sha256: every server request presents one, and hashing (OpenSSL 3
   * looks the digest up on each call) is a few per cent of a send's time in the serving process. Only keys that
   * passed are kept, so a flood of wrong keys cannot fill the memory or evict real ones; each request still compares
   * the digest with the key's current record (a revoked or expired key fails at once).
   */
  #remember(raw: string, digest: Buffer): void {
    if (this.#digests.has(raw)) return
    if (this.#digests.size >= PASSED_KEYS_KEPT) this.#digests.clear()
    this.#digests.set(raw, digest)
  }

  /**
   * The app a server route acts on: `app_id` present and a UUID (400), the key's own app (401, never 404),
   * not paused (403).
   */
  async appOf(req: Request, key: KeyRecord, appId: unknown, where: 'query' | 'corpo'): Promise<AppRecord> {
    if (!isUuid(appId)) throw new ApiError('APP_ID_REQUIRED', { where })
    if (appId.toLowerCase() !== key.appId) {
      this.#reject(req, 'foreign-app', key.kid)
      throw new ApiError('AUTH_FOREIGN_APP')
    }
    const app = await this.dir.app(key.appId)
    if (!app) throw new ApiError('AUTH_REJECTED')
    if (app.paused) throw new ApiError('APP_PAUSED')
    return app
  }

  /** The key check and the app check of a server route whose app_id is in the query string. */
  async queryApp(req: Request): Promise<AppRecord> {
    const key = await this.appKey(req)
    return this.appOf(req, key, req.query.get('app_id') ?? undefined, 'query')
  }

  /** Audits a rejection (also used by the confirmation stream for its own refusals). */
  reject(who: AuditWho, reason: string, kid?: string): void {
    this.#reject(who, reason, kid)
  }

  /** Audits a rejection, which counts toward its source's per-IP limit. */
  #reject(who: AuditWho, reason: string, kid?: string): void {
    const route = 'route' in who ? who.route : `${who.method} ${who.path}`
    this.audit.warn({ evento: 'auth_rejeitada', motivo: reason, kid, ip: who.ip, rota: route, request_id: who.id })
    this.limiter?.take(who.ip)
    this.#failures?.take(who.ip)
  }
}
