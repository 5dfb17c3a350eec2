// The body of POST /api/v1/inapp/eventos (the spec, In-app device routes): `{app_id, player_id, eventos: [1-50 items]}`.
// A malformed item fails the whole request (400 naming `eventos[i].campo`; 422 for an `em` outside the window);
// nothing is looked up before every item is well-formed.
import { DEFAULT_LIMITS } from '../core/config'
import { ApiError, fieldError } from '../core/errors'
import { isUuid } from '../http/router'
import { chars, isObj, parseRfc3339, wellFormed } from './checks'
import { EVENT_CODES, type EventName } from './events-writer'

export interface EventItem {
  campaignId: string
  proof: string
  event: EventName
  n: number
  atMs: number
}

export interface EventsInput {
  appId: string
  playerId: string
  items: EventItem[]
}

const ITEM_FIELDS = ['campanha_id', 'prova', 'evento', 'ocorrencia_n', 'em']

export function parseEvents(
  body: Record<string, unknown>,
  nowMs: number,
  o: { batchMax: number; pastMs: number; futureMs: number; occurrenceMax?: number },
): EventsInput {
  for (const k of Object.keys(body))
    if (!['app_id', 'player_id', 'eventos'].includes(k)) throw fieldError(k, 'não é um campo aceito aqui')
  if (!isUuid(body.app_id)) throw fieldError('app_id', 'é obrigatório, um UUID')
  if (!isUuid(body.player_id)) throw fieldError('player_id', 'é obrigatório, um UUID')
  const list = body.eventos
  if (!Array.isArray(list) || list.length < 1 || list.length > o.batchMax) {
    throw fieldError('eventos', `deve ser uma lista de 1 a ${o.batchMax} itens`)
  }
  const items = list.map((v, i): EventItem => {
    const at = (f: string): string => `eventos[${i}].${f}`
    if (!isObj(v)) throw fieldError(`eventos[${i}]`, 'deve ser um objeto')
    for (const k of Object.keys(v)) if (!ITEM_FIELDS.includes(k)) throw fieldError(at(k), 'não é um campo aceito aqui')
    if (!isUuid(v.campanha_id)) throw fieldError(at('campanha_id'), 'é obrigatório, um UUID')
    const proof = v.prova
    if (typeof proof !== 'string' || !wellFormed(proof) || chars(proof) < 1 || chars(proof) > 64) {
      throw fieldError(at('prova'), 'é obrigatório: o texto da prova do pacote, de 1 a 64 caracteres')
    }
    if (typeof v.evento !== 'string' || !Object.hasOwn(EVENT_CODES, v.evento)) {
      throw fieldError(at('evento'), 'deve ser impressao, clique ou fechou')
    }
    const n = v.ocorrencia_n
    const nMax = o.occurrenceMax ?? DEFAULT_LIMITS.inappOccurrenceMax
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > nMax)
      throw fieldError(at('ocorrencia_n'), `deve ser um inteiro de 1 a ${nMax}`)
    const atMs = parseRfc3339(v.em)
    if (atMs === null) throw fieldError(at('em'), 'é obrigatório, em RFC 3339 com fuso')
    return { campaignId: v.campanha_id.toLowerCase(), proof, event: v.evento as EventName, n, atMs }
  })
  // Every item is well-formed; only then the window (a 422: the value is readable but not acceptable).
  items.forEach((it, i) => {
    if (it.atMs < nowMs - o.pastMs || it.atMs > nowMs + o.futureMs)
      throw new ApiError('INAPP_EVENT_TIME_OUTSIDE', { campo: `eventos[${i}].em` })
  })
  return { appId: body.app_id.toLowerCase(), playerId: body.player_id.toLowerCase(), items }
}
