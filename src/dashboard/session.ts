// Dashboard sessions. The cookie carries a random id and its HMAC under the dashboard secret (a forged or altered
// cookie is refused before the database is asked); the database keeps only a digest of the id, the person, the
// session's synchroniser token against cross-site requests, its expiry and its last use. Every request reads the
// row, so a session ends on every instance at once when its row goes: sign-out, "sign out everywhere", a person's
// removal (the rows cascade). A session ends at its absolute expiry (PM_DASHBOARD_SESSION_H) or after
// PM_DASHBOARD_IDLE_MIN without use, whichever comes first.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Config } from '../core/config'
import { type Db, query } from '../db/pool'
import type { Person } from '../people/service'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'
import type { Flash } from './layout'

export const SESSION_COOKIE = 'pm_sessao'

export interface Viewer {
  userId: string
  email: string
  /** null for an operator. */
  orgId: string | null
  operator: boolean
  /** The session's synchroniser token: every form carries it. */
  csrf: string
  /** Digest of the session id (hex): names the session's flash message. */
  sid: string
}

/** Over https every cookie is written with this prefix: the browser then keeps it only if it is Secure, for Path=/
 *  and with no Domain, so a sibling host or a plain-http page cannot set or shadow it (RFC 6265bis §4.1.3.2). */
const HOST_PREFIX = '__Host-'

/** Cookies of a request, by name (the first of a repeated name). `secure` (the dashboard is served over https): only
 *  `__Host-` cookies are read, by their name without the prefix; a bare name someone else could have set is ignored. */
export function cookies(header: string | undefined, secure = false): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=')
    if (i < 0) continue
    let k = part.slice(0, i).trim()
    if (secure) {
      if (!k.startsWith(HOST_PREFIX)) continue
      k = k.slice(HOST_PREFIX.length)
    }
    if (k && !out.has(k)) out.set(k, part.slice(i + 1).trim())
  }
  return out
}

/** The key that signs cookies: PM_DASHBOARD_SECRET, else derived from the vault key, else random for this process. */
export function cookieSecret(cfg: Pick<Config, 'dashboard' | 'vaultKey'>): Buffer {
  if (cfg.dashboard.secret) return cfg.dashboard.secret
  if (cfg.vaultKey) return createHmac('sha256', cfg.vaultKey).update('pombo dashboard session cookies').digest()
  return randomBytes(32)
}

export function cookieHeader(
  name: string,
  value: string,
  maxAgeS: number,
  secure: boolean,
  sameSite: 'Lax' | 'Strict' = 'Lax',
): string {
  return secure
    ? `${HOST_PREFIX}${name}=${value}; Path=/; HttpOnly; SameSite=${sameSite}; Max-Age=${maxAgeS}; Secure`
    : `${name}=${value}; Path=/; HttpOnly; SameSite=${sameSite}; Max-Age=${maxAgeS}`
}

const digest = (id: string): Buffer => createHash('sha256').update(id).digest()

export class Sessions {
  readonly secure: boolean

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly secret: Buffer,
    private readonly ttlMs: number,
    private readonly clock: Clock,
    dashboardUrl: string,
    private readonly idleMs = 30 * 60_000,
  ) {
    this.secure = dashboardUrl.startsWith('https:')
    // The last use is written at most this often: a page view costs no write, and a session ends at most this much
    // before its idle time is really up.
    this.#touchEveryMs = Math.min(60_000, Math.floor(idleMs / 10))
  }

  readonly #touchEveryMs: number

  #sign(id: string): string {
    return createHmac('sha256', this.secret).update(id).digest('base64url')
  }

  /** Starts a session for the person; answers the Set-Cookie value. */
  async create(p: Person): Promise<string> {
    const id = randomBytes(32).toString('base64url')
    const now = this.clock()
    await query(this.db, 'DELETE FROM dashboard_sessions WHERE expires_at < $1 OR last_seen_at < $2', [
      new Date(now),
      new Date(now - this.idleMs),
    ])
    await query(
      this.db,
      `INSERT INTO dashboard_sessions (id_hash, user_id, csrf, created_at, expires_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $5, $4)`,
      [digest(id), p.id, randomBytes(32).toString('base64url'), new Date(now), new Date(now + this.ttlMs)],
    )
    return cookieHeader(SESSION_COOKIE, `${id}.${this.#sign(id)}`, Math.floor(this.ttlMs / 1000), this.secure)
  }

  /**
   * The signed-in person of a request's cookies, or null (no cookie, forged, expired, idle too long, signed out or
   * removed). `activity` false (a page's script polling in the background) reads without counting as use.
   */
  async read(cookieHeaderValue: string | undefined, activity = true): Promise<Viewer | null> {
    const v = cookies(cookieHeaderValue, this.secure).get(SESSION_COOKIE)
    if (!v) return null
    const dot = v.indexOf('.')
    const id = v.slice(0, dot)
    const sig = Buffer.from(v.slice(dot + 1))
    const want = Buffer.from(this.#sign(id))
    if (dot !== 43 || sig.length !== want.length || !timingSafeEqual(sig, want)) return null
    const hash = digest(id)
    const r = await query<{
      id: string
      email: string
      org_id: string | null
      operator: boolean
      csrf: string
      expires_at: Date
      last_seen_at: Date
    }>(
      this.db,
      `SELECT u.id, u.email, u.org_id, u.operator, s.csrf, s.expires_at, s.last_seen_at
         FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id WHERE s.id_hash = $1`,
      [hash],
    )
    const row = r.rows[0]
    if (!row) return null
    const now = this.clock()
    if (row.expires_at.getTime() <= now || row.last_seen_at.getTime() + this.idleMs <= now) {
      await query(this.db, 'DELETE FROM dashboard_sessions WHERE id_hash = $1', [hash])
      return null
    }
    if (activity && now - row.last_seen_at.getTime() >= this.#touchEveryMs) {
      await query(this.db, 'UPDATE dashboard_sessions SET last_seen_at = $2 WHERE id_hash = $1 AND last_seen_at < $2', [
        hash,
        new Date(now),
      ])
    }
    return {
      userId: row.id,
      email: row.email,
      orgId: row.org_id,
      operator: row.operator,
      csrf: row.csrf,
      sid: hash.toString('hex'),
    }
  }

  /** Signs out: the session row goes; answers the Set-Cookie value that clears the cookie. */
  async destroy(v: Viewer): Promise<string> {
    await query(this.db, 'DELETE FROM dashboard_sessions WHERE id_hash = $1', [Buffer.from(v.sid, 'hex')])
    return cookieHeader(SESSION_COOKIE, '', 0, this.secure)
  }

  async setFlash(v: Viewer, f: Flash): Promise<void> {
    await this.redis.set(this.keys.dashboardFlash(v.sid), JSON.stringify(f), 'EX', 120)
  }

  async takeFlash(v: Viewer): Promise<Flash | null> {
    const s = await this.redis.getdel(this.keys.dashboardFlash(v.sid))
    return s ? (JSON.parse(s) as Flash) : null
  }
}
