// The campaign service (the spec, In-app management, States In-app campaign): plain methods, no HTTP, so the dashboard
// calls the same code as the routes. Every change that can alter what devices are served tells the package caches
// of every instance (`onChange`).
import { type Action, type Actor, BY_CODE, record } from '../audit/record'
import { randomUUID } from 'node:crypto'
import { DEFAULT_LIMITS, type Limits } from '../core/config'
import { type Db, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import { isUuid } from '../http/router'
import { type Clock, isoWithOffset, parseRfc3339 } from '../core/time'
import { countReach, type Reach } from './reach'
import { windowStats, type WindowStats } from './stats'
import {
  type CampaignRow,
  deleteCampaign,
  editCampaign,
  type CampaignState,
  findCampaign,
  insertCampaign,
  listCampaigns,
  transition,
  updateConfig,
} from './store'
import { type CampaignDef, checkDates, parseCampaign, schemaMin, schemaText } from './validate'

export type Operation = 'publicar' | 'pausar' | 'encerrar'

/** The state machine: accepted origins and destination of each operation. */
export const TRANSITIONS: Record<Operation, { from: readonly CampaignState[]; to: CampaignState }> = {
  publicar: { from: ['rascunho', 'pausada'], to: 'ativa' },
  pausar: { from: ['ativa'], to: 'pausada' },
  encerrar: { from: ['rascunho', 'ativa', 'pausada'], to: 'encerrada' },
}

const AUDITED: Record<Operation, Action> = {
  publicar: 'inapp.publicada',
  pausar: 'inapp.pausada',
  encerrar: 'inapp.encerrada',
}

export interface CampaignShape extends CampaignDef {
  id: string
  app_id: string
  estado: CampaignState
  schema_min: string
  contadores: { servidos: number; impressoes: number; cliques: number; fechados: number }
  origem_id: string | null
  criado_em: string
  atualizado_em: string
  publicado_em: string | null
  encerrado_em: string | null
}

export function campaignShape(r: CampaignRow, nowMs: number): CampaignShape {
  return {
    id: r.id,
    app_id: r.app_id,
    estado: r.estado,
    ...r.definition,
    schema_min: schemaText(schemaMin(r.definition, nowMs)),
    contadores: {
      servidos: Number(r.servidos),
      impressoes: Number(r.impressoes),
      cliques: Number(r.cliques),
      fechados: Number(r.fechados),
    },
    origem_id: r.origem_id,
    criado_em: isoWithOffset(r.criado_em),
    atualizado_em: isoWithOffset(r.atualizado_em),
    publicado_em: r.publicado_em ? isoWithOffset(r.publicado_em) : null,
    encerrado_em: r.encerrado_em ? isoWithOffset(r.encerrado_em) : null,
  }
}

export interface ListPage {
  campanhas: CampaignShape[]
  proximo: string | null
}

/** `inapp_cap_horas`: an integer from 0 to 168 (the API route and the dashboard read it alike). */
export function parseCapHours(cap: unknown, max: number = DEFAULT_LIMITS.inappCapHoursMax): number | undefined {
  if (cap === undefined) return undefined
  if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 0 || cap > max) throw new ApiError('INAPP_CAP_HOURS_INVALID')
  return cap
}

export class CampaignService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** Called after every change that may alter packages (the package caches of every instance drop the app). */
    private readonly onChange: (appId: string) => Promise<void>,
    /** Called after an in-app config change (the app caches of every instance drop the app). */
    private readonly onConfig: (appId: string) => Promise<void> = onChange,
    /** The in-app limits campaigns are checked against (src/core/config.ts). */
    private readonly limits: Limits = DEFAULT_LIMITS,
  ) {}

  async setConfig(
    appId: string,
    active: boolean | undefined,
    capHours: number | undefined,
    by: Actor = BY_CODE,
  ): Promise<{ inapp_ativo: boolean; inapp_cap_horas: number }> {
    const at = new Date(this.clock())
    const out = await tx(this.db, async (c) => {
      const out = await updateConfig(c, appId, active, capHours)
      await record(
        c,
        {
          by,
          action: 'inapp.configurado',
          appId,
          details: { active: out.inapp_ativo, cap_hours: out.inapp_cap_horas },
        },
        at,
      )
      return out
    })
    await this.onConfig(appId)
    return out
  }

  /** Validates (422 listing every problem) and stores a draft: creating never publishes. */
  async create(appId: string, body: Record<string, unknown>): Promise<CampaignShape> {
    const v = parseCampaign(body, undefined, this.limits)
    const row = await insertCampaign(this.db, {
      appId,
      id: randomUUID(),
      def: v.def,
      usesNotificationSettings: v.usesNotificationSettings,
      originId: null,
      now: new Date(this.clock()),
    })
    return campaignShape(row, this.clock())
  }

  async get(appId: string, id: string): Promise<CampaignShape> {
    return campaignShape(await this.#row(appId, id), this.clock())
  }

  async list(appId: string, o: { limit: number; state: CampaignState | null; cursor: string | null }): Promise<ListPage> {
    const after = o.cursor ? decodeCursor(o.cursor) : null
    const rows = await listCampaigns(this.db, appId, { limit: o.limit + 1, state: o.state, after })
    const page = rows.slice(0, o.limit)
    const last = page[page.length - 1]
    return {
      campanhas: page.map((r) => campaignShape(r, this.clock())),
      proximo: rows.length > o.limit && last ? encodeCursor(last) : null,
    }
  }

  /** PATCH: the body's top-level fields replace the stored ones; the result is validated whole. 409 when ended. */
  async patch(appId: string, id: string, body: Record<string, unknown>): Promise<CampaignShape> {
    checkDates(body) // an unreadable date is a 400 whatever the campaign's state, before it is looked up
    const row = await editCampaign(
      this.db,
      appId,
      id,
      (cur) => {
        if (cur.estado === 'encerrada') throw new ApiError('INAPP_CAMPAIGN_ENDED')
        return parseCampaign(body, cur.definition, this.limits)
      },
      new Date(this.clock()),
    )
    if (!row) throw new ApiError('INAPP_CAMPAIGN_NOT_FOUND')
    if (row.estado !== 'rascunho') await this.onChange(appId)
    return campaignShape(row, this.clock())
  }

  /** `by`: who asked; a transition that happened and its audit record commit together. */
  async apply(appId: string, id: string, op: Operation, by: Actor = BY_CODE): Promise<CampaignShape> {
    const t = TRANSITIONS[op]
    const at = new Date(this.clock())
    const r = await tx(this.db, async (c) => {
      const r = await transition(c, appId, id, t.from, t.to, at)
      if (r && 'row' in r) await record(c, { by, action: AUDITED[op], appId, details: { campaign_id: id, name: r.row.nome } }, at)
      return r
    })
    if (!r) throw new ApiError('INAPP_CAMPAIGN_NOT_FOUND')
    if ('state' in r) throw new ApiError('INAPP_TRANSITION_INVALID', { operation: op, state: r.state, origins: t.from })
    await this.onChange(appId)
    return campaignShape(r.row, this.clock())
  }

  /** Only from `encerrada`: a new draft with the same definition and counters at zero. */
  async duplicate(appId: string, id: string): Promise<CampaignShape> {
    const src = await this.#row(appId, id)
    if (src.estado !== 'encerrada') {
      throw new ApiError('INAPP_TRANSITION_INVALID', { operation: 'duplicar', state: src.estado, origins: ['encerrada'] })
    }
    const row = await insertCampaign(this.db, {
      appId,
      id: randomUUID(),
      def: src.definition,
      usesNotificationSettings: src.uses_notification_settings,
      originId: src.id,
      now: new Date(this.clock()),
    })
    return campaignShape(row, this.clock())
  }

  /** Deletes the campaign, its funnel and its trail; an active one only with `confirmar`. */
  async remove(appId: string, id: string, confirmed: boolean): Promise<void> {
    const r = await deleteCampaign(this.db, appId, id, confirmed)
    if (r === 'missing') throw new ApiError('INAPP_CAMPAIGN_NOT_FOUND')
    if (r === 'active') throw new ApiError('INAPP_DELETE_UNCONFIRMED')
    await this.onChange(appId)
  }

  async reach(
    appId: string,
    id: string,
  ): Promise<Reach & { campanha_id: string; alvo_tipo: string; schema_min_efetivo: string }> {
    const row = await this.#row(appId, id)
    const level = schemaMin(row.definition, this.clock())
    const r = await countReach(this.db, appId, row.definition, level)
    return { campanha_id: row.id, alvo_tipo: row.alvo_tipo, ...r, schema_min_efetivo: schemaText(level) }
  }

  async funnel(appId: string, id: string): Promise<Record<string, unknown>> {
    const row = await this.#row(appId, id)
    const r = await countReach(this.db, appId, row.definition, schemaMin(row.definition, this.clock()))
    return {
      campanha_id: row.id,
      nome: row.nome,
      estado: row.estado,
      servidos: Number(row.servidos),
      impressoes: Number(row.impressoes),
      cliques: Number(row.cliques),
      fechados: Number(row.fechados),
      alcance_estimado: r.alcance_estimado,
    }
  }

  stats(appId: string, from: Date, to: Date): Promise<WindowStats> {
    return windowStats(this.db, appId, from, to)
  }

  async #row(appId: string, id: string): Promise<CampaignRow> {
    const row = await findCampaign(this.db, appId, id)
    if (!row) throw new ApiError('INAPP_CAMPAIGN_NOT_FOUND')
    return row
  }
}

/** Opaque list cursor: the last row's (criado_em in µs-free ms, id). */
function encodeCursor(r: CampaignRow): string {
  return Buffer.from(`${r.criado_em.toISOString()}|${r.id}`).toString('base64url')
}

/** A cursor this list handed out: a real instant and a UUID, else 400 (a forged one never reaches Postgres). */
export function decodeCursor(c: string): { at: Date; id: string } {
  const [at, id, extra] = Buffer.from(c, 'base64url').toString('utf8').split('|')
  const ms = parseRfc3339(at)
  if (extra !== undefined || !isUuid(id) || ms === null)
    throw new ApiError('INVALID_FIELD', { campo: 'cursor', motivo: 'não é um cursor desta lista' })
  return { at: new Date(ms), id: id.toLowerCase() }
}
