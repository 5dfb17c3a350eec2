// Field checks of the in-app validators: each one records a problem (wire path + reason in Portuguese) instead of
// throwing, so a refused campaign lists every offending field at once (the spec, In-app management: `causa`).
import { DEFAULT_LIMITS, type Limits } from '../core/config'
import type { FieldProblem } from '../core/errors'

export type Obj = Record<string, unknown>

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** A lone surrogate is refused, never rewritten (docs/design/hostile-input.md; String.prototype.isWellFormed, ES2024). */
export function wellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed()
}

/** Characters as a person counts them (code points), not UTF-16 units. */
export function chars(s: string): number {
  let n = 0
  for (const _ of s) n++
  return n
}

const COLOR = /^#[0-9a-fA-F]{6}$/
const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/
/** Schemes that run or carry content instead of naming a destination: a card drawn in a web view would run them. */
const SCRIPT_SCHEMES = new Set(['javascript', 'vbscript', 'data', 'file', 'blob', 'about'])

const PATH_MAX = 200

export class Problems {
  readonly list: FieldProblem[] = []

  /** The settings the campaign is checked against (the spec's in-app limits; defaults in src/core/config.ts). */
  constructor(readonly lim: Limits = DEFAULT_LIMITS) {}

  add(field: string, reason: string): void {
    // The caller's keys end up in the path: quoted at most PATH_MAX characters (the answer stays small).
    this.list.push({ campo: field.length > PATH_MAX ? `${field.slice(0, PATH_MAX)}…` : field, motivo: reason })
  }

  get empty(): boolean {
    return this.list.length === 0
  }

  /** Fields of `o` outside `allowed` are refused by name (never accepted and ignored). */
  known(path: string, o: Obj, allowed: readonly string[]): void {
    for (const k of Object.keys(o)) if (!allowed.includes(k)) this.add(join(path, k), 'não é um campo aceito aqui')
  }

  text(path: string, v: unknown, min: number, max: number): string | undefined {
    if (typeof v !== 'string') {
      this.add(path, 'deve ser um texto')
      return undefined
    }
    if (!wellFormed(v)) {
      this.add(path, 'contém texto malformado (surrogate isolado)')
      return undefined
    }
    const n = chars(v)
    if (n < min || n > max) {
      this.add(path, min === max ? `deve ter ${min} caracteres` : `deve ter de ${min} a ${max} caracteres`)
      return undefined
    }
    return v
  }

  int(path: string, v: unknown, min: number, max: number): number | undefined {
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      this.add(path, 'deve ser um número inteiro')
      return undefined
    }
    if (v < min || v > max) {
      this.add(path, `deve estar entre ${min} e ${max}`)
      return undefined
    }
    return v
  }

  num(path: string, v: unknown, min: number, max: number): number | undefined {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      this.add(path, 'deve ser um número')
      return undefined
    }
    if (v < min || v > max) {
      this.add(path, `deve estar entre ${min} e ${max}`)
      return undefined
    }
    return v
  }

  bool(path: string, v: unknown): boolean | undefined {
    if (typeof v !== 'boolean') {
      this.add(path, 'deve ser booleano (true ou false)')
      return undefined
    }
    return v
  }

  oneOf<T extends string>(path: string, v: unknown, values: readonly T[]): T | undefined {
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      this.add(path, `deve ser um de: ${values.join(', ')}`)
      return undefined
    }
    return v as T
  }

  color(path: string, v: unknown): void {
    if (typeof v !== 'string' || !COLOR.test(v)) this.add(path, 'deve ser uma cor #rrggbb')
  }

  /** An absolute https URL with a host, no spaces, up to 2,048 characters. */
  https(path: string, v: unknown): void {
    if (typeof v !== 'string' || !wellFormed(v) || v.length > 2048 || /\s/.test(v)) {
      this.add(path, 'deve ser uma URL https absoluta, sem espaços')
      return
    }
    try {
      const u = new URL(v)
      if (u.protocol !== 'https:' || u.hostname === '') this.add(path, 'deve ser uma URL https absoluta')
    } catch {
      this.add(path, 'deve ser uma URL https absoluta')
    }
  }

  /** spec: `open_url` needs a scheme (https or a custom app scheme); plain http and spaces are refused. */
  openUrl(path: string, v: unknown): void {
    if (typeof v !== 'string' || !wellFormed(v) || v.length === 0 || v.length > 2048) {
      this.add(path, 'deve ser um endereço com esquema (https://... ou esquema do app), até 2048 caracteres')
      return
    }
    if (/\s/.test(v)) {
      this.add(path, 'não pode conter espaços')
      return
    }
    const m = SCHEME.exec(v)
    if (!m) {
      this.add(path, 'precisa de um esquema (https://... ou meuapp://...)')
      return
    }
    const scheme = (m[1] as string).toLowerCase()
    if (scheme === 'http') this.add(path, 'http:// simples é recusado; use https://')
    else if (SCRIPT_SCHEMES.has(scheme)) this.add(path, `o esquema ${scheme}: executa ou embute conteúdo e é recusado`)
    else if (scheme === 'https') this.https(path, v)
    else if (v.length === m[0].length) this.add(path, 'precisa de um destino depois do esquema')
  }
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`
  return path === '' ? key : `${path}.${key}`
}

/** RFC 3339 with an explicit offset (the spec, In-app campaign `inicia_em`/`termina_em`; eventos `em`). */
export { parseRfc3339 } from '../core/time'
