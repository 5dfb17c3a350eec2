// In-app management routes (the spec, In-app management; app key). Each reads top to bottom: key and app (401/403),
// the body or query checked, then the campaign service acts. The service knows nothing of HTTP.
import { byKey } from '../audit/record'
import type { Auth } from '../apps/auth'
import type { Config } from '../core/config'
import { fieldError } from '../core/errors'
import { created, ok } from '../http/reply'
import type { Request } from '../http/request'
import { isUuid, type Router } from '../http/router'
import { statsWindow } from '../core/validation'
import { type CampaignService, type Operation, parseCapHours } from './service'
import type { CampaignState } from './store'

export interface InappRouteDeps {
  cfg: Config
  auth: Auth
  campaigns: CampaignService
}

const BASE = '/api/v1/in_app_messages'
const CAMPAIGN_STATES: readonly CampaignState[] = ['rascunho', 'ativa', 'pausada', 'encerrada']
const LIST_DEFAULT = 20
const LIST_MAX = 100

function campaignId(req: Request): string {
  const id = req.params[0] as string
  if (!isUuid(id)) throw fieldError('campaign_id', 'deve ser um UUID')
  return id.toLowerCase()
}

export function inappRoutes(r: Router, d: InappRouteDeps): void {
  // Campaign bodies carry content in several languages and audience lists: the send route's cap, not 16 KB.
  const bodyLimit = d.cfg.limits.sendBodyBytes

  r.put(`${BASE}/config`, { bodyLimit: d.cfg.limits.appBodyBytes }, async (req) => {
    const key = await d.auth.appKey(req)
    const body = await req.json()
    const app = await d.auth.appOf(req, key, body.app_id, 'corpo')
    for (const k of Object.keys(body))
      if (!['app_id', 'inapp_ativo', 'inapp_cap_horas'].includes(k)) throw fieldError(k, 'não é um campo aceito aqui')
    const active = body.inapp_ativo
    if (active !== undefined && typeof active !== 'boolean') throw fieldError('inapp_ativo', 'deve ser booleano (true ou false)')
    const cap = parseCapHours(body.inapp_cap_horas, d.cfg.limits.inappCapHoursMax)
    return ok(await d.campaigns.setConfig(app.id, active, cap, byKey(key.kid)))
  })

  r.post(BASE, { bodyLimit }, async (req) => {
    const key = await d.auth.appKey(req)
    const body = await req.json()
    const app = await d.auth.appOf(req, key, body.app_id, 'corpo')
    return created(await d.campaigns.create(app.id, body))
  })

  r.get(BASE, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    const q = req.query
    const rawLimit = q.get('limit')
    let limit = LIST_DEFAULT
    if (rawLimit !== null && rawLimit !== '') {
      if (!/^\d{1,6}$/.test(rawLimit) || Number(rawLimit) < 1) throw fieldError('limit', 'deve ser um inteiro a partir de 1')
      limit = Math.min(Number(rawLimit), LIST_MAX)
    }
    const state = q.get('estado')
    if (state !== null && !(CAMPAIGN_STATES as readonly string[]).includes(state))
      throw fieldError('estado', `deve ser um de: ${CAMPAIGN_STATES.join(', ')}`)
    const cursor = q.get('cursor')
    if (cursor !== null && !/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw fieldError('cursor', 'não é um cursor desta lista')
    return ok(await d.campaigns.list(app.id, { limit, state: state as CampaignState | null, cursor: cursor || null }))
  })

  r.get(`${BASE}/stats`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    const w = statsWindow(req.query)
    return ok({ desde: w.fromText, ate: w.toText, ...(await d.campaigns.stats(app.id, w.from, w.to)) })
  })

  r.get(`${BASE}/:id`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    return ok(await d.campaigns.get(app.id, campaignId(req)))
  })

  r.patch(`${BASE}/:id`, { bodyLimit }, async (req) => {
    const key = await d.auth.appKey(req)
    const body = await req.json()
    const app = await d.auth.appOf(req, key, body.app_id, 'corpo')
    return ok(await d.campaigns.patch(app.id, campaignId(req), body))
  })

  r.del(`${BASE}/:id`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    const id = campaignId(req)
    const c = req.query.get('confirmar')
    if (c !== null && c !== 'true' && c !== 'false') throw fieldError('confirmar', 'deve ser true ou false')
    await d.campaigns.remove(app.id, id, c === 'true')
    return ok({ ok: true, id })
  })

  for (const op of ['publicar', 'pausar', 'encerrar'] as Operation[]) {
    r.post(`${BASE}/:id/${op}`, {}, async (req) => {
      const key = await d.auth.appKey(req)
      const app = await d.auth.appOf(req, key, req.query.get('app_id') ?? undefined, 'query')
      return ok(await d.campaigns.apply(app.id, campaignId(req), op, byKey(key.kid)))
    })
  }

  r.post(`${BASE}/:id/duplicar`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    return created(await d.campaigns.duplicate(app.id, campaignId(req)))
  })

  r.get(`${BASE}/:id/alcance`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    return ok(await d.campaigns.reach(app.id, campaignId(req)))
  })

  r.get(`${BASE}/:id/funil`, {}, async (req) => {
    const app = await d.auth.queryApp(req)
    return ok(await d.campaigns.funnel(app.id, campaignId(req)))
  })
}
