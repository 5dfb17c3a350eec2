// Field readers shared by every feature's validate.ts: each names the wire field and says why it was refused.
import { fieldError } from './errors'

export type Body = Record<string, unknown>

export function has(body: Body, name: string): boolean {
  return Object.hasOwn(body, name) && body[name] !== undefined
}

export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8')
}

export function optString(body: Body, name: string, maxBytes?: number): string | undefined {
  const v = body[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw fieldError(name, 'deve ser um texto')
  if (maxBytes !== undefined && byteLength(v) > maxBytes) throw fieldError(name, `excede ${maxBytes} bytes`)
  return v
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

