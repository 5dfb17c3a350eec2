// The people of the dashboard: accounts of one organisation or operators, sign-in checks, and one-time invitations
// (`pombo user invite`). The CLI and the dashboard call the same methods; a refusal is a PeopleError whose message
// is shown as it is (one line).
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { type Db, query, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import { findOrg } from '../orgs/store'
import type { Clock } from '../core/time'
import { decoyHash, hashPassword, needsRehash, passwordProblem, verifyPassword } from './password'

export class PeopleError extends Error {
  override name = 'PeopleError'
}

export interface Person {
  id: string
  email: string
  orgId: string | null
  operator: boolean
}

const EMAIL_MAX_BYTES = 254
const EMAIL_RE = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/

/** The canonical form of an e-mail (trimmed, lower case), or a PeopleError. */
export function parseEmail(raw: unknown): string {
  const e = typeof raw === 'string' ? raw.trim().toLowerCase() : ''
  if (!EMAIL_RE.test(e) || Buffer.byteLength(e) > EMAIL_MAX_BYTES || !e.isWellFormed()) throw new PeopleError('E-mail inválido.')
  return e
}

const digest = (token: string): Buffer => createHash('sha256').update(token).digest()

interface UserRow {
  id: string
  email: string
  org_id: string | null
  operator: boolean
  password_hash: string
}

const toPerson = (r: UserRow): Person => ({ id: r.id, email: r.email, orgId: r.org_id, operator: r.operator })

export class PeopleService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** How long an invitation is valid (PM_DASHBOARD_INVITE_H; the contract: 72 h). */
    private readonly inviteTtlMs = 72 * 3_600_000,
  ) {}

  /** A person of `orgId`, or an operator (orgId null). The e-mail is unique; the password at least 12 characters. */
  async create(input: { email: string; orgId: string | null; operator: boolean; password: string }): Promise<Person> {
    const email = parseEmail(input.email)
    const problem = passwordProblem(input.password)
    if (problem) throw new PeopleError(problem)
    if (!input.operator && !input.orgId) throw new PeopleError('Uma pessoa pertence a uma organização, ou é operadora.')
    const hash = await hashPassword(input.password)
    return tx(this.db, async (c) => {
      if (input.orgId && !(await findOrg(c, input.orgId))) throw new ApiError('ORG_NOT_FOUND')
      return this.#insert(c, email, input.operator ? null : input.orgId, input.operator, hash)
    })
  }

  async #insert(c: Db | Tx, email: string, orgId: string | null, operator: boolean, hash: string): Promise<Person> {
    const id = randomUUID()
    const r = await query(
      c,
      `INSERT INTO dashboard_users (id, email, org_id, operator, password_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (email) DO NOTHING`,
      [id, email, orgId, operator, hash, new Date(this.clock())],
    )
    if (r.rowCount !== 1) throw new ApiError('EMAIL_TAKEN')
    return { id, email, orgId, operator }
  }

  /**
   * The person when e-mail and password match; null otherwise (same work either way: no account probing by time).
   * A hash made with older scrypt parameters is replaced by one with the current parameters on this sign-in (only
   * if it is still the stored one: a password changed meanwhile wins).
   */
  async authenticate(emailRaw: string, password: string): Promise<Person | null> {
    let email: string
    try {
      email = parseEmail(emailRaw)
    } catch {
      await verifyPassword(password, await decoyHash())
      return null
    }
    const r = await query<UserRow>(
      this.db,
      'SELECT id, email, org_id, operator, password_hash FROM dashboard_users WHERE email = $1',
      [email],
    )
    const row = r.rows[0]
    const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash()))
    if (!row || !ok) return null
    if (needsRehash(row.password_hash)) {
      await query(this.db, 'UPDATE dashboard_users SET password_hash = $3 WHERE id = $1 AND password_hash = $2', [
        row.id,
        row.password_hash,
        await hashPassword(password),
      ])
    }
    return toPerson(row)
  }

  async find(id: string): Promise<Person | null> {
    const r = await query<UserRow>(
      this.db,
      'SELECT id, email, org_id, operator, password_hash FROM dashboard_users WHERE id = $1',
      [id],
    )
    return r.rows[0] ? toPerson(r.rows[0]) : null
  }

  /** A one-time sign-up token for `email` in `orgId`, valid `inviteTtlMs` (72 h). Only its digest is stored. */
  async invite(emailRaw: string, orgId: string): Promise<{ token: string; expiresAt: Date }> {
    const email = parseEmail(emailRaw)
    const token = randomBytes(32).toString('base64url')
    const at = new Date(this.clock())
    const expiresAt = new Date(at.getTime() + this.inviteTtlMs)
    await tx(this.db, async (c) => {
      if (!(await findOrg(c, orgId))) throw new ApiError('ORG_NOT_FOUND')
      const taken = await query(c, 'SELECT 1 FROM dashboard_users WHERE email = $1', [email])
      if (taken.rows.length > 0) throw new ApiError('EMAIL_TAKEN')
      await query(
        c,
        'INSERT INTO dashboard_invites (token_hash, email, org_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
        [digest(token), email, orgId, at, expiresAt],
      )
    })
    return { token, expiresAt }
  }

  /** The invitation behind a token while it is usable (unused, unexpired); null otherwise. */
  async openInvite(token: string): Promise<{ email: string; orgName: string } | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null
    const r = await query<{ email: string; nome: string }>(
      this.db,
      `SELECT i.email, o.nome FROM dashboard_invites i JOIN orgs o ON o.id = i.org_id
        WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > $2`,
      [digest(token), new Date(this.clock())],
    )
    const row = r.rows[0]
    return row ? { email: row.email, orgName: row.nome } : null
  }

  /** Uses the invitation (once: the first caller wins) and creates the account; null when the link is not usable. */
  async acceptInvite(token: string, password: string): Promise<Person | null> {
    const problem = passwordProblem(password)
    if (problem) throw new PeopleError(problem)
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null
    const hash = await hashPassword(password)
    return tx(this.db, async (c) => {
      const now = new Date(this.clock())
      const r = await query<{ email: string; org_id: string }>(
        c,
        `UPDATE dashboard_invites SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
         RETURNING email, org_id`,
        [digest(token), now],
      )
      const inv = r.rows[0]
      if (!inv) return null
      return this.#insert(c, inv.email, inv.org_id, false, hash)
    })
  }
}
