// In-app window statistics (the spec, In-app campaign "In-app window statistics answer"): proven impressions and clicks
// whose `em` falls in [desde, ate), and reactivations stamped in the window, per campaign and in total.
import { type Db, query } from '../db/pool'

export interface WindowStats {
  totais: { impressoes: number; cliques: number; reativados: number }
  campanhas: Array<{
    campanha_id: string
    nome: string
    estado: string
    alvo_tipo: string
    impressoes: number
    cliques: number
    reativados: number
  }>
}

export async function windowStats(db: Db, appId: string, from: Date, to: Date): Promise<WindowStats> {
  const r = await query<{ id: string; nome: string; estado: string; alvo_tipo: string; imp: string; cli: string; rea: string }>(
    db,
    `WITH ev AS (
       SELECT campanha_id, count(*) FILTER (WHERE evento = 1) AS imp, count(*) FILTER (WHERE evento = 2) AS cli
       FROM inapp_events WHERE app_id = $1 AND em >= $2 AND em < $3 GROUP BY campanha_id),
     re AS (
       SELECT campanha_id, count(*) AS rea FROM inapp_reactivations
       WHERE app_id = $1 AND reactivated_at >= $2 AND reactivated_at < $3 GROUP BY campanha_id)
     SELECT c.id, c.nome, c.estado, c.alvo_tipo, coalesce(ev.imp, 0) AS imp, coalesce(ev.cli, 0) AS cli,
            coalesce(re.rea, 0) AS rea
     FROM inapp_campaigns c
     LEFT JOIN ev ON ev.campanha_id = c.id
     LEFT JOIN re ON re.campanha_id = c.id
     WHERE c.app_id = $1 AND (ev.campanha_id IS NOT NULL OR re.campanha_id IS NOT NULL)
     ORDER BY imp DESC, c.criado_em DESC, c.id`,
    [appId, from, to],
  )
  const totals = { impressoes: 0, cliques: 0, reativados: 0 }
  const campaigns = r.rows.map((x) => {
    const c = {
      campanha_id: x.id,
      nome: x.nome,
      estado: x.estado,
      alvo_tipo: x.alvo_tipo,
      impressoes: Number(x.imp),
      cliques: Number(x.cli),
      reativados: Number(x.rea),
    }
    totals.impressoes += c.impressoes
    totals.cliques += c.cliques
    totals.reativados += c.reativados
    return c
  })
  return { totais: totals, campanhas: campaigns }
}
