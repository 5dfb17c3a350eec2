// The receipt body (the spec, Receipt): three UUIDs, the proof echoed as received (1-64 characters) and the event.
// Every field is checked before anything is looked up; the proof itself is checked by the route, in constant time.
import { DEFAULT_LIMITS } from '../core/config'
import { fieldError } from '../core/errors'
import { isUuid } from '../http/router'
import type { Body } from '../core/validation'

export type ReceiptEvent = 'recebido' | 'clique'

export interface ReceiptInput {
  appId: string
  sendId: string
  deviceId: string
  rcpt: string
  event: ReceiptEvent
}

function uuid(body: Body, name: string): string {
  const v = body[name]
  if (v === undefined || v === null) throw fieldError(name, 'é obrigatório')
  if (!isUuid(v)) throw fieldError(name, 'deve ser um UUID')
  return v.toLowerCase()
}

export function parseReceipt(body: Body, rcptMaxChars: number = DEFAULT_LIMITS.rcptMaxChars): ReceiptInput {
  const appId = uuid(body, 'app_id')
  const sendId = uuid(body, 'notification_id')
  const deviceId = uuid(body, 'player_id')
  const rcpt = body.rcpt
  if (rcpt === undefined || rcpt === null) throw fieldError('rcpt', 'é obrigatório')
  if (typeof rcpt !== 'string') throw fieldError('rcpt', 'deve ser um texto')
  // the spec, Limits: 1-64 characters (PM_LIMIT_RCPT_CHARS; code points, not UTF-16 units).
  const chars = [...rcpt].length
  if (chars < 1 || chars > rcptMaxChars) throw fieldError('rcpt', `deve ter de 1 a ${rcptMaxChars} caracteres`)
  const e = body.evento ?? 'recebido'
  if (e !== 'recebido' && e !== 'clique') throw fieldError('evento', 'deve ser recebido ou clique')
  return { appId, sendId, deviceId, rcpt, event: e }
}
