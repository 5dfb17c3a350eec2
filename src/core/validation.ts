// Field readers shared by every feature's validate.ts: each names the wire field and says why it was refused.
import { fieldError } from './errors'
import { parseRfc3339 } from './time'

export type Body = Record<string, unknown>

export function has(body: Body, name: string): boolean {
  return Object.hasOwn(body, name) && body[name] !== undefined
}

export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8')
}

export function optBool(body: Body, name: string): boolean | undefined {
  const v = body[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'boolean') throw fieldError(name, 'deve ser booleano (true ou false)')
  return v
}

export function optInt(body: Body, name: string, min: number, max: number): number | undefined {
  const v = body[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v)) throw fieldError(name, 'deve ser um número inteiro')
  if (v < min || v > max) throw fieldError(name, `deve estar entre ${min} e ${max}`)
  return v
}

/**
 * A statistics window from the query (spec: `desde` and `ate`, both RFC 3339 with an offset, `ate` after `desde`,
 * half-open [desde, ate)); the texts are echoed as sent.
 */
export function statsWindow(q: URLSearchParams): { fromText: string; toText: string; from: Date; to: Date } {
  const fromText = q.get('desde') ?? ''
  const toText = q.get('ate') ?? ''
  const a = parseRfc3339(fromText)
  const b = parseRfc3339(toText)
  if (a === null) throw fieldError('desde', 'é obrigatório, em RFC 3339 com fuso')
  if (b === null) throw fieldError('ate', 'é obrigatório, em RFC 3339 com fuso')
  if (b <= a) throw fieldError('ate', 'deve ser posterior a desde')
  return { fromText, toText, from: new Date(a), to: new Date(b) }
}
