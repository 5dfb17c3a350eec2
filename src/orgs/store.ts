// Organisations: they own apps, a plan and the monthly-active-user allowance shared by their apps (src/sends/mau.ts).
import { randomUUID } from 'node:crypto'
import { type Db, query, type Tx } from '../db/pool'

/** An organisation's plan (the spec, Plans): its apps inherit it. */
export type Plan = 'free' | 'pro'

export interface OrgRecord {
  id: string
  nome: string
  plano: Plan
}

export async function insertOrg(c: Db | Tx, o: { id?: string; name: string; plan: Plan; at: Date }): Promise<OrgRecord> {
  const id = o.id ?? randomUUID()
  await query(c, 'INSERT INTO orgs (id, nome, plan, created_at) VALUES ($1, $2, $3, $4)', [id, o.name, o.plan, o.at])
  return { id, nome: o.name, plano: o.plan }
}

export async function findOrg(c: Db | Tx, id: string): Promise<OrgRecord | null> {
  const r = await query<OrgRecord>(c, 'SELECT id, nome, plan AS plano FROM orgs WHERE id = $1', [id])
  return r.rows[0] ?? null
}

/** Every organisation, by name (the operator's choice when creating an app); bounded by `limit`. */
export async function listOrgs(c: Db, limit: number): Promise<OrgRecord[]> {
  const r = await query<OrgRecord>(c, 'SELECT id, nome, plan AS plano FROM orgs ORDER BY nome, id LIMIT $1', [limit])
  return r.rows
}
