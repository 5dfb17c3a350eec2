// Reads of sends (the spec, Notification read shape, Window statistics): one send, the newest sends, window totals.
import { planShowsArrivals } from '../apps/plan'
import type { Plan } from '../apps/store'
import { atBusinessZone } from '../core/business-time'
import { type Db, query } from '../db/pool'
import { epochSeconds } from '../core/time'

interface SendDbRow {
  id: string
  successful: number
  failed: number
  errored: number
  remaining: number
  converted: number
  recebidos: number
  queued_at: Date
  send_after: Date | null
  completed_at: Date | null
  name: string | null
  external_id: string | null
  headings: unknown
  contents: unknown
  included_segments: string[]
  include_player_ids: string[] | null
  include_external_user_ids: string[] | null
  android_successful: number
  android_failed: number
  ios_successful: number
  ios_failed: number
  problem: string | null
}

const COLUMNS = `id, successful, failed, errored, remaining, converted, recebidos, queued_at, send_after, completed_at, name,
  external_id, headings, contents, included_segments, include_player_ids, include_external_user_ids, android_successful,
  android_failed, ios_successful, ios_failed, problem`

/** What a free-plan reader sees instead of `recebidos` (the spec, Notification read shape), and of `entregues`. */
export const ARRIVALS_GATE = {
  plano_atual: 'free',
  habilita_em: 'pro',
  por_que: 'A prova de chegada por dispositivo (recebidos) é um recurso do plano pro.',
}

export function readShape(r: SendDbRow, plan: Plan): Record<string, unknown> {
  const gated = !planShowsArrivals(plan)
  // Coverage is recebidos over provider acceptance; it is withheld with recebidos and undefined before any acceptance.
  const coverage = gated || r.successful === 0 ? null : Math.round((r.recebidos / r.successful) * 1000) / 10
  return {
    id: r.id,
    successful: r.successful,
    failed: r.failed,
    errored: r.errored,
    remaining: r.remaining,
    converted: r.converted,
    recebidos: gated ? null : r.recebidos,
    ...(gated ? { recebidos_gate: ARRIVALS_GATE } : {}),
    queued_at: epochSeconds(r.queued_at),
    send_after: r.send_after ? epochSeconds(r.send_after) : null,
    completed_at: r.completed_at ? epochSeconds(r.completed_at) : null,
    name: r.name,
    // The request's external_id as stored; null when none was sent (docs/decisions.md).
    external_id: r.external_id,
    headings: r.headings,
    contents: r.contents,
    included_segments: r.included_segments ?? [],
    include_player_ids: r.include_player_ids,
    include_external_user_ids: r.include_external_user_ids,
    platform_delivery_stats: {
      android: { successful: r.android_successful, failed: r.android_failed },
      ios: { successful: r.ios_successful, failed: r.ios_failed },
    },
    pm_metricas: {
      via: 'push',
      cobertura_recibo_pct: coverage,
      ttfd_ms: null,
      duracao_ms: r.completed_at ? r.completed_at.getTime() - r.queued_at.getTime() : null,
    },
    // Why deliveries stopped short, when they did: a missing or refused credential (with the provider's reason,
    // e.g. BadEnvironmentKeyIdInToken), or a suspected sandbox/production mismatch. Null otherwise.
    pm_problema: r.problem,
  }
}

export async function readOne(db: Db, appId: string, id: string): Promise<SendDbRow | null> {
  const r = await query<SendDbRow>(db, `SELECT ${COLUMNS} FROM sends WHERE app_id = $1 AND id = $2`, [appId, id])
  return r.rows[0] ?? null
}

export async function readNewest(db: Db, appId: string, limit: number): Promise<SendDbRow[]> {
  const r = await query<SendDbRow>(
    db,
    `SELECT ${COLUMNS} FROM sends WHERE app_id = $1 ORDER BY queued_at DESC, id DESC LIMIT $2`,
    [appId, limit],
  )
  return r.rows
}

export interface WindowStats {
  totais: { disparos: number; enviados: number; falhas: number; entregues: number | null; cliques: number }
  por_dia: Array<{ dia: string; enviados: number; entregues: number | null; cliques: number }>
  /** Present with null `entregues`: the sum of `recebidos` is withheld with them (src/apps/plan.ts). */
  recebidos_gate?: typeof ARRIVALS_GATE
}

/**
 * Sends queued in [desde, ate), attributed to their queueing time. `falhas` = failed + errored. Days are the business
 * zone's (src/core/business-time.ts: the spec's fixed UTC-03 without daylight saving). `entregues` is the sum of
 * `recebidos`: null, with `recebidos_gate`, on a plan that does not see proof of arrival.
 */
export async function windowStats(db: Db, appId: string, from: Date, to: Date, plan: Plan): Promise<WindowStats> {
  const r = await query<{
    dia: string | null
    disparos: number
    enviados: number
    falhas: number
    entregues: number
    cliques: number
  }>(
    db,
    `SELECT to_char(${atBusinessZone('queued_at')}::date, 'YYYY-MM-DD') AS dia,
            count(*)::int AS disparos, sum(successful)::int AS enviados, sum(failed + errored)::int AS falhas,
            sum(recebidos)::int AS entregues, sum(converted)::int AS cliques
       FROM sends WHERE app_id = $1 AND queued_at >= $2 AND queued_at < $3
      GROUP BY 1 ORDER BY 1`,
    [appId, from, to],
  )
  const shown = planShowsArrivals(plan)
  const totals = { disparos: 0, enviados: 0, falhas: 0, entregues: 0, cliques: 0 }
  for (const x of r.rows) {
    totals.disparos += x.disparos
    totals.enviados += x.enviados
    totals.falhas += x.falhas
    totals.entregues += x.entregues
    totals.cliques += x.cliques
  }
  return {
    totais: { ...totals, entregues: shown ? totals.entregues : null },
    por_dia: r.rows.map((x) => ({
      dia: x.dia as string,
      enviados: x.enviados,
      entregues: shown ? x.entregues : null,
      cliques: x.cliques,
    })),
    ...(shown ? {} : { recebidos_gate: ARRIVALS_GATE }),
  }
}
