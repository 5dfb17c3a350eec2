// The two credentials (spec §Authentication): the app key on server routes, the platform key on operator routes.
// Rejections are audited with the route, the source address and at most the key's kid, never the key itself.
import { timingSafeEqual } from 'node:crypto'
import type { Logger } from 'pino'
import { ApiError } from '../errors'
import type { Request } from '../http/request'
import { isUuid } from '../http/router'
import type { AppDirectory } from './directory'
import { readAuthorization, sha256 } from './key-format'
import type { AppRecord, KeyRecord } from './store'

export class Auth {
  readonly #platformHash: Buffer | null

  constructor(
    private readonly dir: AppDirectory,
    platformKey: string | null,
    private readonly audit: Logger,
    private readonly now: () => number,
  ) {
    this.#platformHash = platformKey ? sha256(platformKey) : null
  }

  /** The operator's key: 503 when this instance has none, 401 when missing or wrong. Checked before any body. */
  platform(req: Request): void {
    if (!this.#platformHash) throw new ApiError('PLATFORM_KEY_UNSET')
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '')
    // Hashing both sides gives equal lengths, so the comparison time says nothing about the key.
    if (!m || !timingSafeEqual(sha256(m[1] as string), this.#platformHash)) {
      const a = readAuthorization(req.header('authorization'))
      this.#reject(req, m ? 'wrong' : 'missing', a.kind === 'key' ? a.key.kid : a.kind === 'malformed' ? a.kid : undefined)
      throw new ApiError('PLATFORM_AUTH_FAILED')
    }
  }

  /** Resolves the app key of a server route (401 on any failure). Call before reading the body. */
  async appKey(req: Request): Promise<KeyRecord> {
    const a = readAuthorization(req.header('authorization'))
    if (a.kind === 'missing') {
      this.#reject(req, 'missing')
      throw new ApiError('AUTH_MISSING')
    }
    if (a.kind === 'malformed') {
      this.#reject(req, 'malformed', a.kid)
      throw new ApiError('AUTH_MALFORMED')
    }
    const rec = await this.dir.key(a.key.kid)
    const valid =
      rec !== null &&
      timingSafeEqual(sha256(a.key.raw), rec.hash) &&
      !rec.revoked &&
      (rec.expiresAtMs === null || this.now() < rec.expiresAtMs)
    if (!valid) {
      this.#reject(req, rec === null ? 'unknown' : rec.revoked ? 'revoked' : 'wrong-or-expired', a.key.kid)
      throw new ApiError('AUTH_REJECTED')
    }
    return rec
  }

  /**
   * The app a server route acts on: `app_id` present and a UUID (400), the key's own app (401, never 404),
   * not paused (403).
   */
  async appOf(req: Request, key: KeyRecord, appId: unknown, where: 'query' | 'corpo'): Promise<AppRecord> {
    if (!isUuid(appId)) throw new ApiError('APP_ID_REQUIRED', { onde: where })
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

  #reject(req: Request, motivo: string, kid?: string): void {
    this.audit.warn({ evento: 'auth_rejeitada', motivo, kid, ip: req.ip, rota: `${req.method} ${req.path}`, request_id: req.id })
  }
}
