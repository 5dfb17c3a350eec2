// The people of the dashboard: accounts of one organisation or operators, sign-in checks, and one-time invitations
// (`pombo user invite`). The CLI and the dashboard call the same methods; a refusal is a PeopleError whose message
// is shown as it is (one line).
import { type Action, type Actor, BY_CODE, byPerson, record } from '../audit/record'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { type Db, query, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import { findOrg } from '../orgs/store'
import type { Clock } from '../core/time'
import type { Dashboard } from '../core/config'
import {
  decoyHash,
  hashPassword,
  needsRehash,
  passwordProblem,
  SCRYPT_COST,
  type ScryptCost,
  scryptCost,
  verifyPassword,
} from './password'

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

export interface PersonListed extends Person {
  orgName: string | null
  /** Sessions open now. */
  sessions: number
  createdAt: Date
}

export interface Invite {
  id: string
  email: string
  orgId: string
  orgName: string
  createdAt: Date
  expiresAt: Date
}

const toPerson = (r: UserRow): Person => ({ id: r.id, email: r.email, orgId: r.org_id, operator: r.operator })

export class PeopleService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** How long an invitation is valid (PM_DASHBOARD_INVITE_H; the contract: 72 h). */
    private readonly inviteTtlMs = 72 * 3_600_000,
    /** How long a session lasts without use (PM_DASHBOARD_IDLE_MIN): the people list counts the open ones. */
    private readonly idleMs = 30 * 60_000,
    /** The scrypt cost new hashes get (PM_DASHBOARD_SCRYPT_N); older hashes are upgraded at sign-in. */
    private readonly cost: ScryptCost = SCRYPT_COST,
  ) {}

  /** With the deployment's dashboard settings (invitation and idle lifetimes, password cost). */
  static fromConfig(db: Db, clock: Clock, d: Dashboard): PeopleService {
    return new PeopleService(db, clock, d.inviteTtlMs, d.idleTtlMs, scryptCost(d.scryptN))
  }

  /** A person of `orgId`, or an operator (orgId null). The e-mail is unique; the password at least 12 characters. */
  async create(
    input: { email: string; orgId: string | null; operator: boolean; password: string },
    by: Actor = BY_CODE,
  ): Promise<Person> {
    const email = parseEmail(input.email)
    const problem = passwordProblem(input.password)
    if (problem) throw new PeopleError(problem)
    if (!input.operator && !input.orgId) throw new PeopleError('Uma pessoa pertence a uma organização, ou é operadora.')
    const hash = await hashPassword(input.password, this.cost)
    return tx(this.db, async (c) => {
      if (input.orgId && !(await findOrg(c, input.orgId))) throw new ApiError('ORG_NOT_FOUND')
      const p = await this.#insert(c, email, input.operator ? null : input.orgId, input.operator, hash)
      await this.#record(c, by, 'pessoa.criada', p.orgId, { person_id: p.id, email, operator: p.operator })
      return p
    })
  }

  /**
   * The audit record of a sign-in: `sessao.entrou`, or `sessao.recusada` for a wrong e-mail or password, filed under
   * the account's organisation when the address names an account. What was typed is written only when it is an
   * e-mail address: anything else may be a password typed in the wrong box.
   */
  async recordSignIn(emailRaw: string, person: Person | null, ip: string): Promise<void> {
    let email: string | null = null
    try {
      email = parseEmail(emailRaw)
    } catch {}
    const at = new Date(this.clock())
    if (person) {
      await record(this.db, { by: byPerson(person.email), action: 'sessao.entrou', orgId: person.orgId, details: { ip } }, at)
      return
    }
    const org = email
      ? ((await query<{ org_id: string | null }>(this.db, 'SELECT org_id FROM dashboard_users WHERE email = $1', [email])).rows[0]
          ?.org_id ?? null)
      : null
    await record(
      this.db,
      {
        by: byPerson(email ?? 'desconhecida'),
        action: 'sessao.recusada',
        orgId: org,
        details: { ip, reason: email ? 'wrong_email_or_password' : 'not_an_email' },
      },
      at,
    )
  }

  #record(c: Tx, by: Actor, action: Action, orgId: string | null, details: Record<string, unknown>): Promise<void> {
    return record(c, { by, action, orgId, details }, new Date(this.clock()))
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
      await verifyPassword(password, await decoyHash(this.cost))
      return null
    }
    const r = await query<UserRow>(
      this.db,
      'SELECT id, email, org_id, operator, password_hash FROM dashboard_users WHERE email = $1',
      [email],
    )
    const row = r.rows[0]
    const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash(this.cost)))
    if (!row || !ok) return null
    if (needsRehash(row.password_hash, this.cost)) {
      await query(this.db, 'UPDATE dashboard_users SET password_hash = $3 WHERE id = $1 AND password_hash = $2', [
        row.id,
        row.password_hash,
        await hashPassword(password, this.cost),
      ])
    }
    return toPerson(row)
  }

  /** The person behind an e-mail, or a PeopleError naming it (commands act on people by e-mail). */
  async byEmail(emailRaw: string): Promise<Person> {
    const email = parseEmail(emailRaw)
    const r = await query<UserRow>(
      this.db,
      'SELECT id, email, org_id, operator, password_hash FROM dashboard_users WHERE email = $1',
      [email],
    )
    if (!r.rows[0]) throw new PeopleError(`Nenhuma pessoa com o e-mail ${email}.`)
    return toPerson(r.rows[0])
  }

  /**
   * Removes a person, with their sessions and any invitation still pending for their e-mail, in one transaction.
   * Every instance reads the session row on each request: each of their sessions ends at once, everywhere. Answers
   * how many sessions there were.
   */
  async remove(id: string, by: Actor = BY_CODE): Promise<{ person: Person; sessions: number }> {
    return tx(this.db, async (c) => {
      const r = await query<UserRow>(
        c,
        'SELECT id, email, org_id, operator, password_hash FROM dashboard_users WHERE id = $1 FOR UPDATE',
        [id],
      )
      if (!r.rows[0]) throw new PeopleError('Pessoa não encontrada.')
      const n = await query(c, 'DELETE FROM dashboard_sessions WHERE user_id = $1', [id])
      await query(c, 'DELETE FROM dashboard_users WHERE id = $1', [id])
      // An invitation sent to the e-mail before the account existed would bring the person back: it goes too.
      await query(c, 'DELETE FROM dashboard_invites WHERE email = $1 AND used_at IS NULL', [r.rows[0].email])
      const person = toPerson(r.rows[0])
      await this.#record(c, by, 'pessoa.removida', person.orgId, {
        person_id: id,
        email: person.email,
        sessions_ended: n.rowCount ?? 0,
      })
      return { person, sessions: n.rowCount ?? 0 }
    })
  }

  /** Ends every session of a person on every instance (sign out everywhere); the person stays. Answers how many. */
  async endSessions(id: string, by: Actor = BY_CODE): Promise<number> {
    return tx(this.db, async (c) => {
      const r = await query(c, 'DELETE FROM dashboard_sessions WHERE user_id = $1', [id])
      const p = await query<{ email: string; org_id: string | null }>(
        c,
        'SELECT email, org_id FROM dashboard_users WHERE id = $1',
        [id],
      )
      const person = p.rows[0]
      if (person)
        await this.#record(c, by, 'sessao.encerrada', person.org_id, {
          person_id: id,
          email: person.email,
          sessions_ended: r.rowCount ?? 0,
        })
      return r.rowCount ?? 0
    })
  }

  /** One page of people, by e-mail (keyset: as fast on the last page), with their open sessions. */
  async list(after: string | null, limit: number): Promise<PersonListed[]> {
    const r = await query<UserRow & { org_name: string | null; sessions: number; created_at: Date }>(
      this.db,
      `SELECT u.id, u.email, u.org_id, u.operator, u.password_hash, u.created_at, o.nome AS org_name,
              (SELECT count(*)::int FROM dashboard_sessions s
                WHERE s.user_id = u.id AND s.expires_at > $3 AND s.last_seen_at > $4) AS sessions
         FROM dashboard_users u LEFT JOIN orgs o ON o.id = u.org_id
        WHERE ($1::text IS NULL OR u.email > $1) ORDER BY u.email LIMIT $2`,
      [after, limit, new Date(this.clock()), new Date(this.clock() - this.idleMs)],
    )
    return r.rows.map((x) => ({ ...toPerson(x), orgName: x.org_name, sessions: x.sessions, createdAt: x.created_at }))
  }

  /** Invitations still usable (unused, unexpired), newest first; of one organisation when `orgId` is given. */
  async invites(o: { orgId?: string; after?: { at: Date; id: string } | null; limit: number }): Promise<Invite[]> {
    const params: unknown[] = [new Date(this.clock()), o.limit]
    const where = ['i.used_at IS NULL', 'i.expires_at > $1']
    if (o.orgId) {
      params.push(o.orgId)
      where.push(`i.org_id = $${params.length}`)
    }
    if (o.after) {
      params.push(o.after.at, o.after.id)
      where.push(`(i.created_at, i.id) < ($${params.length - 1}, $${params.length})`)
    }
    const r = await query<{ id: string; email: string; org_id: string; nome: string; created_at: Date; expires_at: Date }>(
      this.db,
      `SELECT i.id, i.email, i.org_id, o.nome, i.created_at, i.expires_at FROM dashboard_invites i JOIN orgs o ON o.id = i.org_id
        WHERE ${where.join(' AND ')} ORDER BY i.created_at DESC, i.id DESC LIMIT $2`,
      params,
    )
    return r.rows.map((x) => ({
      id: x.id,
      email: x.email,
      orgId: x.org_id,
      orgName: x.nome,
      createdAt: x.created_at,
      expiresAt: x.expires_at,
    }))
  }

  /**
   * Cancels invitations still usable: the one with `id`, or every one for `email` (in `orgId` when given). Their
   * links stop working at once. Answers the cancelled ones (none: nothing matched).
   */
  async cancelInvites(
    o: { id?: string; email?: string; orgId?: string },
    by: Actor = BY_CODE,
  ): Promise<Array<{ id: string; email: string }>> {
    const params: unknown[] = [new Date(this.clock())]
    const where = ['used_at IS NULL', 'expires_at > $1']
    if (o.id !== undefined) {
      params.push(o.id)
      where.push(`id = $${params.length}`)
    }
    if (o.email !== undefined) {
      params.push(parseEmail(o.email))
      where.push(`email = $${params.length}`)
    }
    if (o.orgId !== undefined) {
      params.push(o.orgId)
      where.push(`org_id = $${params.length}`)
    }
    if (params.length === 1) throw new PeopleError('Diga qual convite cancelar.')
    return tx(this.db, async (c) => {
      const r = await query<{ id: string; email: string; org_id: string }>(
        c,
        `DELETE FROM dashboard_invites WHERE ${where.join(' AND ')} RETURNING id, email, org_id`,
        params,
      )
      for (const x of r.rows) await this.#record(c, by, 'convite.cancelado', x.org_id, { invite_id: x.id, email: x.email })
      return r.rows.map((x) => ({ id: x.id, email: x.email }))
    })
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
  async invite(emailRaw: string, orgId: string, by: Actor = BY_CODE): Promise<{ token: string; expiresAt: Date }> {
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
      // The link is the invitation's credential: the record names the address and the deadline only.
      await this.#record(c, by, 'pessoa.convidada', orgId, { email, expires_at: expiresAt.toISOString() })
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
    const hash = await hashPassword(password, this.cost)
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
      const p = await this.#insert(c, inv.email, inv.org_id, false, hash)
      await this.#record(c, byPerson(inv.email), 'pessoa.criada', inv.org_id, {
        person_id: p.id,
        email: inv.email,
        operator: false,
        invited: true,
      })
      return p
    })
  }
}
