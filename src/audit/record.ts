// The audit log (issue #32 point 3; docs/operations.md "Audit log"): every change a person, an operator command or a
// key made, written where the change is made, in the same transaction when there is one, so a change and its record
// commit or fail together. Append-only: nothing in src/ updates or deletes a record (a trigger of 0031_audit.sql
// refuses it) but the retention job (./retention.ts).
//
// `quem` says who: `pessoa:<email>` (a person signed in to the dashboard), `operador:<command>` (a `pombo` command,
// e.g. `operador:pombo app pause`), `chave:<kid>` (an app's key on a server route) or `chave:plataforma` (the
// platform key). `detalhes` explains the change with ids, names, counts and settings, never a secret nor an end
// user's data: record() refuses a details key that names a secret, so a mistake fails loudly in tests.
import { type Db, query, type Tx } from '../db/pool'

/** Who made a change, as written in `quem`. */
export type Actor = string

export const byPerson = (email: string): Actor => `pessoa:${email}`
export const byOperator = (command: string): Actor => `operador:${command}`
export const byKey = (kid: string): Actor => `chave:${kid}`
export const BY_PLATFORM_KEY: Actor = 'chave:plataforma'
/** A change no surface asked for: a service called directly (the tests' set-up). Every route, dashboard action and
 *  command names its actor; test/integration/audit.test.ts checks each surface's records. */
export const BY_CODE: Actor = 'sistema'

export const ACTIONS = [
  'app.criado',
  'app.pausado',
  'app.retomado',
  'app.excluido',
  'org.criada',
  'org.excluida',
  'chave.criada',
  'chave.girada',
  'chave.revogada',
  'plano.alterado',
  'limite.alterado',
  'credencial.salva',
  'credencial.excluida',
  'credencial.testada',
  'dispositivo.excluido',
  'webhook.configurado',
  'webhook.reativado',
  'evento.reenviado',
  'inapp.publicada',
  'inapp.pausada',
  'inapp.encerrada',
  'pessoa.convidada',
  'pessoa.criada',
  'pessoa.removida',
  'sessao.entrou',
  'sessao.recusada',
  'exportacao.pedida',
  // Beyond the list: the other changes a person or an operator makes.
  'inapp.configurado',
  'sessao.encerrada',
  'convite.cancelado',
] as const

export type Action = (typeof ACTIONS)[number]

/** The organisation an action of none is filed under (the operator's own, a refused sign-in): read back as null. */
export const PLATFORM_ORG = '00000000-0000-0000-0000-000000000000'

export interface AuditEntry {
  by: Actor
  action: Action
  /** Absent with an app: the app's organisation (looked up in the same statement). Absent without: the platform's. */
  orgId?: string | null
  appId?: string | null
  details?: Record<string, unknown>
}

/** Keys a details object may never carry, at any depth: a secret's value has no place in the log. */
const SECRET_KEY = /secret|segredo|senha|password|token|private|api_key|receipt_key|credential|p8|pem/i

export class AuditSecretError extends Error {}

/** A secret is text (or a structure holding it): a count or a flag under such a name (`rows.credentials`) is not. */
function checkDetails(v: unknown, path: string): void {
  if (v === null || typeof v !== 'object') return
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (SECRET_KEY.test(k) && (typeof x === 'string' || (x !== null && typeof x === 'object')))
      throw new AuditSecretError(`audit details may not carry "${path}${k}" (a secret)`)
    checkDetails(x, `${path}${k}.`)
  }
}

/** Writes one record, on `c` (a transaction's client: it commits with the change). */
export async function record(c: Db | Tx, e: AuditEntry, at: Date): Promise<void> {
  const details = e.details ?? {}
  checkDetails(details, '')
  await query(
    c,
    `INSERT INTO audit_log (org_id, app_id, em, quem, acao, detalhes)
     VALUES (COALESCE($1::uuid, (SELECT org_id FROM apps WHERE id = $2::uuid), $7::uuid), $2, $3, $4, $5, $6)`,
    [e.orgId ?? null, e.appId ?? null, at, e.by, e.action, JSON.stringify(details), PLATFORM_ORG],
  )
}
