// Reach of a campaign (the spec, In-app campaign "Reach answer", Versioning): the audience counted in Postgres with the
// SDK capability arithmetic. A device whose `sdk_versao` is absent or unreadable is incapable.
// Who is in the audience is audience.ts's one definition.
import { type Db, query } from '../db/pool'
import { audienceSql } from './audience'
import type { CampaignDef } from './validate'

export interface Reach {
  alcance_estimado: number
  alcancaveis_agora: number
  precisam_app_atualizado: number
  sem_versao_reportada: number
}

/** Counts the audience, the capable part (`level` as major*1000+minor) and the devices reporting no version. */
export async function countReach(
  db: Db,
  appId: string,
  def: Pick<CampaignDef, 'alvo_tipo' | 'alvo'>,
  level: number,
): Promise<Reach> {
  const r = await query<{ total: string; capable: string; unversioned: string }>(
    db,
    // Versions are parsed once per distinct value (a handful), not once per device: the audience is grouped first.
    `WITH a AS (
       SELECT d.sdk_versao, count(*) AS n FROM devices d WHERE d.app_id = $1 AND ${audienceSql(def.alvo_tipo)} GROUP BY d.sdk_versao
     ), v AS (
       SELECT n, (regexp_match(sdk_versao, '^v?(\\d{1,4})\\.(\\d{1,3})(?:[.+-]|$)'))::int[] AS v FROM a
     )
     SELECT COALESCE(sum(n), 0) AS total,
            COALESCE(sum(n) FILTER (WHERE v IS NOT NULL AND v[1] * 1000 + v[2] >= $2), 0) AS capable,
            COALESCE(sum(n) FILTER (WHERE v IS NULL), 0) AS unversioned
     FROM v`,
    def.alvo_tipo === 'external_ids' || def.alvo_tipo === 'player_ids' ? [appId, level, def.alvo] : [appId, level],
  )
  const row = r.rows[0] as { total: string; capable: string; unversioned: string }
  const total = Number(row.total)
  const capable = Number(row.capable)
  return {
    alcance_estimado: total,
    alcancaveis_agora: capable,
    precisam_app_atualizado: total - capable,
    sem_versao_reportada: Number(row.unversioned),
  }
}
