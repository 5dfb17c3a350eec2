// SQL of in-app campaigns, behind intent names. Every statement names the app: nothing crosses between apps.
import { type Db, query, type Tx, tx } from '../db/pool'
import type { CampaignDef } from './validate'

export type CampaignState = 'rascunho' | 'ativa' | 'pausada' | 'encerrada'

export interface CampaignRow {
  app_id: string
  id: string
  estado: CampaignState
  nome: string
  alvo_tipo: string
  definition: CampaignDef
  prioridade: number
  cap_total: number
  uses_notification_settings: boolean
  servidos: string
  impressoes: string
  cliques: string
  fechados: string
  origem_id: string | null
  criado_em: Date
  atualizado_em: Date
  publicado_em: Date | null
  encerrado_em: Date | null
}

const COLS = `app_id, id, estado, nome, alvo_tipo, definition, prioridade, cap_total, uses_notification_settings, servidos, impressoes,
  cliques, fechados, origem_id, criado_em, atualizado_em, publicado_em, encerrado_em`

export interface NewCampaign {
  appId: string
  id: string
  def: CampaignDef
  usesNotificationSettings: boolean
  originId: string | null
  now: Date
}

export async function insertCampaign(db: Db, c: NewCampaign): Promise<CampaignRow> {
  const r = await query<CampaignRow>(
    db,
    `INSERT INTO inapp_campaigns (app_id, id, estado, nome, alvo_tipo, definition, prioridade, cap_total, uses_notification_settings,
       origem_id, criado_em, atualizado_em)
     VALUES ($1, $2, 'rascunho', $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING ${COLS}`,
    [
      c.appId,
      c.id,
      c.def.nome,
      c.def.alvo_tipo,
      JSON.stringify(c.def),
      c.def.regras.prioridade,
      c.def.regras.cap_total,
      c.usesNotificationSettings,
      c.originId,
      c.now,
    ],
  )
  return r.rows[0] as CampaignRow
}

export async function findCampaign(db: Db | Tx, appId: string, id: string, forUpdate = false): Promise<CampaignRow | null> {
  const r = await query<CampaignRow>(
    db,
    `SELECT ${COLS} FROM inapp_campaigns WHERE app_id = $1 AND id = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [appId, id],
  )
  return r.rows[0] ?? null
}

/** PATCH: reads the row locked, lets `edit` decide (it may throw), writes the new definition. */
export async function editCampaign(
  db: Db,
  appId: string,
  id: string,
  edit: (row: CampaignRow) => { def: CampaignDef; usesNotificationSettings: boolean },
  now: Date,
): Promise<CampaignRow | null> {
  return tx(db, async (c) => {
    const row = await findCampaign(c, appId, id, true)
    if (!row) return null
    const v = edit(row)
    const r = await query<CampaignRow>(
      c,
      `UPDATE inapp_campaigns SET nome = $3, alvo_tipo = $4, definition = $5, prioridade = $6, cap_total = $7,
         uses_notification_settings = $8, atualizado_em = $9
       WHERE app_id = $1 AND id = $2 RETURNING ${COLS}`,
      [
        appId,
        id,
        v.def.nome,
        v.def.alvo_tipo,
        JSON.stringify(v.def),
        v.def.regras.prioridade,
        v.def.regras.cap_total,
        v.usesNotificationSettings,
        now,
      ],
    )
    return r.rows[0] as CampaignRow
  })
}

/** A state change, only from the accepted origins: answers the row, or the current state when refused (null: none). */
export async function transition(
  db: Db | Tx,
  appId: string,
  id: string,
  origins: readonly CampaignState[],
  to: CampaignState,
  now: Date,
): Promise<{ row: CampaignRow } | { state: CampaignState } | null> {
  const stamp = to === 'ativa' ? ', publicado_em = $5' : to === 'encerrada' ? ', encerrado_em = $5' : ''
  const r = await query<CampaignRow>(
    db,
    `UPDATE inapp_campaigns SET estado = $4, atualizado_em = $5 ${stamp}
     WHERE app_id = $1 AND id = $2 AND estado = ANY($3::text[]) RETURNING ${COLS}`,
    [appId, id, origins, to, now],
  )
  if (r.rows[0]) return { row: r.rows[0] }
  const cur = await findCampaign(db, appId, id)
  return cur ? { state: cur.estado } : null
}

/** Deletes the campaign and its whole trail in one transaction; `allowActive` false refuses an active one. */
export async function deleteCampaign(
  db: Db,
  appId: string,
  id: string,
  allowActive: boolean,
): Promise<'deleted' | 'active' | 'missing'> {
  return tx(db, async (c) => {
    const row = await findCampaign(c, appId, id, true)
    if (!row) return 'missing'
    if (row.estado === 'ativa' && !allowActive) return 'active'
    for (const t of ['inapp_events', 'inapp_served', 'inapp_reactivations']) {
      await query(c, `DELETE FROM ${t} WHERE campanha_id = $1 AND app_id = $2`, [id, appId])
    }
    await query(c, 'DELETE FROM inapp_campaigns WHERE app_id = $1 AND id = $2', [appId, id])
    return 'deleted'
  })
}

/** Newest first, keyset-paginated on (criado_em, id). */
export async function listCampaigns(
  db: Db,
  appId: string,
  o: { limit: number; state: CampaignState | null; after: { at: Date; id: string } | null },
): Promise<CampaignRow[]> {
  const r = await query<CampaignRow>(
    db,
    `SELECT ${COLS} FROM inapp_campaigns
     WHERE app_id = $1 AND ($2::text IS NULL OR estado = $2)
       AND ($3::timestamptz IS NULL OR (criado_em, id) < ($3, $4::uuid))
     ORDER BY criado_em DESC, id DESC LIMIT $5`,
    [appId, o.state, o.after?.at ?? null, o.after?.id ?? null, o.limit],
  )
  return r.rows
}

/** Every active campaign of an app (the package cache's load). */
export async function activeCampaigns(db: Db, appId: string): Promise<CampaignRow[]> {
  const r = await query<CampaignRow>(db, `SELECT ${COLS} FROM inapp_campaigns WHERE app_id = $1 AND estado = 'ativa'`, [appId])
  return r.rows
}

export async function updateConfig(
  db: Db | Tx,
  appId: string,
  active: boolean | undefined,
  cap: number | undefined,
): Promise<{ inapp_ativo: boolean; inapp_cap_horas: number }> {
  const r = await query<{ inapp_ativo: boolean; inapp_cap_horas: number }>(
    db,
    `UPDATE apps SET inapp_ativo = coalesce($2, inapp_ativo), inapp_cap_horas = coalesce($3, inapp_cap_horas)
     WHERE id = $1 RETURNING inapp_ativo, inapp_cap_horas`,
    [appId, active ?? null, cap ?? null],
  )
  return r.rows[0] as { inapp_ativo: boolean; inapp_cap_horas: number }
}
