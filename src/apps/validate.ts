// Request bodies of the operator's app routes (the spec, Apps).
import { fieldError } from '../core/errors'
import { type Body, byteLength, optBool, optInt } from '../core/validation'
import type { CreateAppInput } from './service'

const INT4_MAX = 2_147_483_647

export function parseCreateApp(body: Body, nameMaxBytes: number): CreateAppInput {
  const name = body.nome
  if (typeof name !== 'string' || name.trim() === '') throw fieldError('nome', 'é obrigatório e não pode ser vazio')
  if (byteLength(name.trim()) > nameMaxBytes) throw fieldError('nome', `excede ${nameMaxBytes} bytes`)
  const rate = body.rate_por_min
  if (rate !== undefined && rate !== null && (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0)) {
    throw fieldError('rate_por_min', 'deve ser um inteiro maior que 0')
  }
  return {
    name: name.trim(),
    ratePerMin: optInt(body, 'rate_por_min', 1, INT4_MAX),
    sandbox: optBool(body, 'sandbox'),
  }
}

export function parseRotate(body: Body): { sandbox?: boolean } {
  return { sandbox: optBool(body, 'sandbox') }
}
