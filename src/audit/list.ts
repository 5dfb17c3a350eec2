// Reading the audit log: an app's, an organisation's or everything, from a moment on, in keyset pages (as fast on
// the last page as on the first, through audit_log_app_idx, the primary key or audit_log_em_idx).
import { type Db, query } from '../db/pool'
import { PLATFORM_ORG } from './record'

/** One record as the CLI prints it and the dashboard shows it (the wire's field names). */
export interface AuditRow {
  em: string
  quem: string
  acao: string
  org_id: string | null
  app_id: string | null
  detalhes: Record<string, unknown>
}

/** Where a page starts: after (or, newest first, before) this record. Its time in microseconds since the epoch,
 *  Postgres's own precision, so a record is never shown twice nor skipped at a page's edge. */
export interface AuditCursor {
  atUs: string
  id: string
}

export interface AuditQuery {
  appId?: string
  orgId?: string
  /** Records at or after this moment only. */
  since?: Date
  order: 'oldest' | 'newest'
  after?: AuditCursor | null
  limit: number
}

interface Row {
  id: string
  us: string
  em: Date
  quem: string
  acao: string
  org_id: string
  app_id: string | null
  detalhes: Record<string, unknown>
}

export interface AuditPage {
  rows: AuditRow[]
  /** The cursor of the next page, or null when this one is the last. */
  next: AuditCursor | null
}

export async function listAudit(db: Db, q: AuditQuery): Promise<AuditPage> {
  const params: unknown[] = []
  const where: string[] = []
  const p = (v: unknown) => {
    params.push(v)
    return `$${params.length}`
  }
  if (q.appId) where.push(`app_id = ${p(q.appId)}`)
  if (q.orgId) where.push(`org_id = ${p(q.orgId)}`)
  if (q.since) where.push(`em >= ${p(q.since)}`)
  const newest = q.order === 'newest'
  if (q.after)
    where.push(
      `(em, id) ${newest ? '<' : '>'} (timestamptz 'epoch' + ${p(q.after.atUs)}::bigint * interval '1 microsecond', ${p(q.after.id)}::bigint)`,
    )
  const dir = newest ? 'DESC' : 'ASC'
  const r = await query<Row>(
    db,
    `SELECT id::text AS id, floor(extract(epoch FROM em) * 1000000)::bigint::text AS us, em, quem, acao, org_id, app_id, detalhes FROM audit_log
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY em ${dir}, id ${dir} LIMIT ${p(q.limit + 1)}`,
    params,
  )
  const shown = r.rows.slice(0, q.limit)
  const last = shown[shown.length - 1]
  return {
    rows: shown.map((x) => ({
      em: x.em.toISOString(),
      quem: x.quem,
      acao: x.acao,
      org_id: x.org_id === PLATFORM_ORG ? null : x.org_id,
      app_id: x.app_id,
      detalhes: x.detalhes,
    })),
    next: r.rows.length > q.limit && last ? { atUs: last.us, id: last.id } : null,
  }
}

/** Cursors in links: `<epoch µs>_<id>`; anything else is the first page. */
export function encodeAuditCursor(c: AuditCursor): string {
  return `${c.atUs}_${c.id}`
}

export function decodeAuditCursor(s: string | null | undefined): AuditCursor | null {
  const m = s ? /^(-?\d{1,18})_(\d{1,18})$/.exec(s) : null
  return m ? { atUs: m[1] as string, id: m[2] as string } : null
}
