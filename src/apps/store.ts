// SQL of apps, organisations and keys, behind intent names.
import { type Db, query, type Tx } from '../db/pool'
import type { Plan } from '../orgs/store'

export type { Plan }

export interface AppRecord {
  id: string
  orgId: string
  name: string
  ratePerMin: number
  sandbox: boolean
  paused: boolean
  plan: Plan
  inappActive: boolean
  inappCapHours: number
  firebaseParams: Record<string, unknown> | null
  /** How results are read (the spec, Confirmation channel): outside `consulta` the send-read routes answer 403. */
  confirmMode: 'consulta' | 'webhook' | 'grpc'
  createdAt: Date
}

export interface KeyRecord {
  kid: string
  appId: string
  hash: Buffer
  expiresAtMs: number | null
  revoked: boolean
}

interface AppRow {
  id: string
  org_id: string
  nome: string
  rate_por_min: number
  sandbox: boolean
  paused: boolean
  plan: Plan
  inapp_ativo: boolean
  inapp_cap_horas: number
  firebase_params: Record<string, unknown> | null
  confirm_mode: 'consulta' | 'webhook' | 'grpc'
  criado_em: Date
}

const APP_COLUMNS = `a.id, a.org_id, a.nome, a.rate_por_min, a.sandbox, a.paused, o.plan, a.inapp_ativo, a.inapp_cap_horas,
  a.firebase_params, a.confirm_mode, a.criado_em`

function toApp(r: AppRow): AppRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.nome,
    ratePerMin: r.rate_por_min,
    sandbox: r.sandbox,
    paused: r.paused,
    plan: r.plan,
    inappActive: r.inapp_ativo,
    inappCapHours: r.inapp_cap_horas,
    firebaseParams: r.firebase_params,
    confirmMode: r.confirm_mode,
    createdAt: r.criado_em,
  }
}

/**
 * `forUpdate` locks the app's row FOR NO KEY UPDATE: it serializes changes of one app without blocking the foreign
 * keys of concurrent send and device writes (KEY SHARE), which FOR UPDATE would.
 */
export async function findApp(db: Db | Tx, id: string, forUpdate = false): Promise<AppRecord | null> {
  const r = await query<AppRow>(
    db,
    `SELECT ${APP_COLUMNS} FROM apps a JOIN orgs o ON o.id = a.org_id WHERE a.id = $1 ${forUpdate ? 'FOR NO KEY UPDATE OF a' : ''}`,
    [id],
  )
  return r.rows[0] ? toApp(r.rows[0]) : null
}

/** A key names no app: its app comes from the kid's global entry, then the key is read by its own primary key
 *  (app_id, kid), one index probe each (docs/scaling.md, API keys; its plan: test/integration/tenancy-plans.test.ts). */
export const FIND_KEY_SQL = `SELECT kid, app_id, key_hash, expires_at, revoked_at FROM app_keys WHERE kid = $1
    AND app_id = (SELECT app_id FROM app_key_kids WHERE kid = $1)`

export async function findKey(db: Db, kid: string): Promise<KeyRecord | null> {
  const r = await query<{ kid: string; app_id: string; key_hash: Buffer; expires_at: Date | null; revoked_at: Date | null }>(
    db,
    FIND_KEY_SQL,
    [kid],
  )
  const row = r.rows[0]
  if (!row) return null
  return {
    kid: row.kid,
    appId: row.app_id,
    hash: row.key_hash,
    expiresAtMs: row.expires_at ? row.expires_at.getTime() : null,
    revoked: row.revoked_at !== null,
  }
}

export interface NewAppRow {
  id: string
  orgId: string
  name: string
  ratePerMin: number
  /** Written explicitly (PM_INAPP_CAP_HORAS_DEFAULT): the column's own default is only for rows written before. */
  inappCapHours: number
  sandbox: boolean
  receiptKeyEnc: Buffer
  createdAt: Date
}

/** The app joins an existing organisation (the caller created it, or checked it exists, in the same transaction). */
export async function insertApp(c: Tx, a: NewAppRow): Promise<void> {
  await query(
    c,
    `INSERT INTO apps (id, org_id, nome, rate_por_min, inapp_cap_horas, sandbox, receipt_key_enc, criado_em)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [a.id, a.orgId, a.name, a.ratePerMin, a.inappCapHours, a.sandbox, a.receiptKeyEnc, a.createdAt],
  )
}

export async function insertKey(
  c: Tx,
  appId: string,
  k: { kid: string; hash: Buffer; sandbox: boolean },
  at: Date,
  expiresAt: Date | null = null,
): Promise<void> {
  // The kid's global entry first: a kid another app already holds fails here as a unique violation (retried with a
  // new key by the service), as it did when kid alone was app_keys' key.
  await query(c, 'INSERT INTO app_key_kids (kid, app_id) VALUES ($1, $2)', [k.kid, appId])
  await query(
    c,
    'INSERT INTO app_keys (kid, app_id, key_hash, sandbox, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [k.kid, appId, k.hash, k.sandbox, at, expiresAt],
  )
}

/** Puts the app's current (non-expiring) key on the rotation clock; returns its new deadline, or null if none. */
export async function expireCurrentKey(c: Tx, appId: string, deadline: Date): Promise<Date | null> {
  const r = await query<{ expires_at: Date }>(
    c,
    `UPDATE app_keys SET expires_at = $2
      WHERE app_id = $1 AND expires_at IS NULL AND revoked_at IS NULL RETURNING expires_at`,
    [appId, deadline],
  )
  return r.rows[0]?.expires_at ?? null
}

export async function setAppSandbox(c: Tx, appId: string, sandbox: boolean): Promise<void> {
  await query(c, 'UPDATE apps SET sandbox = $2 WHERE id = $1', [appId, sandbox])
}

export async function setPaused(db: Db | Tx, appId: string, paused: boolean): Promise<boolean> {
  const r = await query(db, 'UPDATE apps SET paused = $2 WHERE id = $1', [appId, paused])
  return r.rowCount === 1
}

export async function setRatePerMin(db: Db | Tx, appId: string, rate: number): Promise<boolean> {
  const r = await query(db, 'UPDATE apps SET rate_por_min = $2 WHERE id = $1', [appId, rate])
  return r.rowCount === 1
}

export async function setPlan(db: Db | Tx, appId: string, plan: Plan): Promise<boolean> {
  const r = await query(db, 'UPDATE orgs SET plan = $2 WHERE id = (SELECT org_id FROM apps WHERE id = $1)', [appId, plan])
  return r.rowCount === 1
}

/** Revokes one key (by kid) or every key of the app; returns how many keys stopped working. */
export async function revokeKeys(db: Db | Tx, appId: string, at: Date, kid?: string): Promise<number> {
  const r = await query(
    db,
    `UPDATE app_keys SET revoked_at = $2 WHERE app_id = $1 AND revoked_at IS NULL ${kid ? 'AND kid = $3' : ''}`,
    kid ? [appId, at, kid] : [appId, at],
  )
  return r.rowCount ?? 0
}
