// Who sees what: a person sees the apps of their organisation, an operator every app. An app of another
// organisation is answered exactly like an app that does not exist (404), so ids cannot be probed.
import { findApp, type AppRecord } from '../apps/store'
import { type Db, query } from '../db/pool'
import { isUuid } from '../http/router'
import { findOrg, type OrgRecord } from '../orgs/store'
import type { Viewer } from './session'
import { notFound } from './web'

export async function appFor(db: Db, v: Viewer, id: string | undefined): Promise<AppRecord> {
  if (!isUuid(id)) throw notFound()
  const app = await findApp(db, id.toLowerCase())
  if (!app || (!v.operator && app.orgId !== v.orgId)) throw notFound()
  return app
}

/** The organisation a viewer may look at: an operator any, a person their own; anything else answers 404. */
export async function orgFor(db: Db, v: Viewer, raw: string | undefined): Promise<OrgRecord> {
  if (!isUuid(raw)) throw notFound()
  const id = raw.toLowerCase()
  if (!v.operator && v.orgId !== id) throw notFound()
  const org = await findOrg(db, id)
  if (!org) throw notFound()
  return org
}

export interface AppListRow {
  id: string
  nome: string
  org_name: string
  plan: string
  paused: boolean
  criado_em: Date
}

/** One page of the viewer's apps, newest first (keyset on criado_em, id: as fast on the last page as on the first). */
export async function listApps(db: Db, v: Viewer, after: { at: Date; id: string } | null, limit: number): Promise<AppListRow[]> {
  const params: unknown[] = [limit]
  const where: string[] = []
  if (!v.operator) {
    params.push(v.orgId)
    where.push(`a.org_id = $${params.length}`)
  }
  if (after) {
    params.push(after.at, after.id)
    where.push(`(a.criado_em, a.id) < ($${params.length - 1}, $${params.length})`)
  }
  const r = await query<AppListRow>(
    db,
    `SELECT a.id, a.nome, o.nome AS org_name, o.plan, a.paused, a.criado_em FROM apps a JOIN orgs o ON o.id = a.org_id
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY a.criado_em DESC, a.id DESC LIMIT $1`,
    params,
  )
  return r.rows
}

/** Keyset cursors in links: `<epoch ms>_<uuid>`; anything else is the first page. */
export function encodeCursor(at: Date, id: string): string {
  return `${at.getTime()}_${id}`
}

export function decodeCursor(s: string | null): { at: Date; id: string } | null {
  const m = s ? /^(\d{1,15})_([0-9a-f-]{36})$/.exec(s) : null
  if (!m || !isUuid(m[2])) return null
  return { at: new Date(Number(m[1])), id: m[2] as string }
}
