// Request bodies derived from a JSON Schema and a valid body: for every field the schema describes (nested objects
// and list items included) the field removed, and replaced by a value of each JSON type and by the edges the schema
// names (enum values and an unknown one, const, bounds and one past them, lengths, list sizes, formats). Nothing is
// labelled valid or invalid here: the contract test asks the schema and the route's validator, and wants the same
// answer from both.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
export type Schema = Record<string, unknown>

export interface Case {
  /** Where the body differs from the valid one: `eventos[0].evento`, `(corpo)`. */
  path: string
  body: Record<string, Json>
}

const ONE_OF_EACH_TYPE: Json[] = [null, true, false, 0, 7, -1, 1.5, 'texto', '', [], {}]
const FORMAT_SAMPLES: Record<string, Json[]> = {
  uuid: [
    '0e7a3f9c-4b1d-4c2e-9f8a-1d2c3b4a5e6f',
    'urn:uuid:0e7a3f9c-4b1d-4c2e-9f8a-1d2c3b4a5e6f',
    '0E7A3F9C-4B1D-4C2E-9F8A-1D2C3B4A5E6F',
    'não-é-uuid',
    '0e7a3f9c4b1d4c2e9f8a1d2c3b4a5e6f',
  ],
  'date-time': [
    '2030-01-31T12:00:00Z',
    '2030-01-31T12:00:00.123-03:00',
    '2030-01-31t12:00:00z',
    '2030-01-31T12:00:00-0300',
    '2030-01-31 12:00:00Z',
    '2030-01-31T12:00Z',
    '2030-02-30T12:00:00Z',
    '2030-01-31',
    'amanhã',
  ],
  uri: ['https://exemplo.com/a.png', 'http://exemplo.com/a.png', 'ftp://exemplo.com/a', '/relativo.png', 'não é url'],
}

/** A schema with its `$ref` followed (refs point inside `doc`). */
export function resolve(doc: Schema, s: Schema): Schema {
  let out = s
  for (let i = 0; typeof out.$ref === 'string' && i < 20; i++) {
    const parts = (out.$ref as string).replace(/^#\//, '').split('/')
    out = parts.reduce<Schema>((o, p) => o[p.replace(/~1/g, '/').replace(/~0/g, '~')] as Schema, doc)
  }
  return out
}

function types(s: Schema): string[] {
  return s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string]
}

/** Values worth trying where `s` applies, `example` being the valid value there. */
function values(doc: Schema, s: Schema, example: Json | undefined): Json[] {
  const out = [...ONE_OF_EACH_TYPE]
  for (const branch of [...((s.oneOf ?? []) as Schema[]), ...((s.anyOf ?? []) as Schema[])]) {
    out.push(...values(doc, resolve(doc, branch), example))
  }
  if (Array.isArray(s.enum)) out.push(...(s.enum as Json[]), 'zz_desconhecido', 999)
  if (s.const !== undefined) out.push(s.const as Json)
  if (typeof s.format === 'string') out.push(...(FORMAT_SAMPLES[s.format] ?? []))
  for (const k of ['minimum', 'maximum']) {
    const n = s[k]
    if (typeof n === 'number') out.push(n, n - 1, n + 1, n + 0.5)
  }
  const base = typeof example === 'string' && example.length > 0 ? example[0] : 'a'
  for (const k of ['minLength', 'maxLength']) {
    const n = s[k]
    if (typeof n === 'number') for (const len of [n - 1, n, n + 1]) if (len >= 0) out.push((base as string).repeat(len))
  }
  if (types(s).includes('array')) {
    const item = Array.isArray(example) && example.length > 0 ? (example[0] as Json) : 'x'
    out.push([item], [7], [null], [{}])
    for (const k of ['minItems', 'maxItems']) {
      const n = s[k]
      if (typeof n === 'number')
        for (const len of [n - 1, n, n + 1]) if (len >= 0) out.push(Array.from({ length: len }, () => item))
    }
  }
  if (typeof example === 'string') out.push(`${example}x`, example.toUpperCase())
  return out
}

function clone<T extends Json>(v: T): T {
  return structuredClone(v)
}

function setAt(root: Json, path: Array<string | number>, value: Json | undefined): Json {
  const copy = clone(root)
  let node = copy as Record<string | number, Json>
  for (const p of path.slice(0, -1)) node = node[p] as Record<string | number, Json>
  const last = path[path.length - 1] as string | number
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(last as number, 1)
    else delete node[last]
  } else node[last] = value
  return copy
}

const pathText = (path: Array<string | number>) =>
  path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${p}` : p), '') || '(corpo)'

/** Every case derived from `schema` and the valid body `body`. */
export function cases(doc: Schema, schema: Schema, body: Record<string, Json>): Case[] {
  const out: Case[] = []
  const walk = (s: Schema, v: Json | undefined, path: Array<string | number>) => {
    s = resolve(doc, s)
    for (const part of (s.allOf ?? []) as Schema[]) walk(part, v, path)
    if (path.length > 0) {
      for (const x of values(doc, s, v)) out.push({ path: pathText(path), body: setAt(body, path, x) as Record<string, Json> })
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const props = (s.properties ?? {}) as Record<string, Schema>
      for (const k of Object.keys(v))
        out.push({ path: pathText([...path, k]), body: setAt(body, [...path, k], undefined) as Record<string, Json> })
      if (s.additionalProperties !== undefined || Object.keys(props).length > 0) {
        out.push({
          path: pathText([...path, 'zz_desconhecido']),
          body: setAt(body, [...path, 'zz_desconhecido'], 1) as Record<string, Json>,
        })
      }
      for (const [k, ps] of Object.entries(props)) walk(ps, v[k], [...path, k])
      if (typeof s.additionalProperties === 'object') {
        for (const k of Object.keys(v)) if (!(k in props)) walk(s.additionalProperties as Schema, v[k], [...path, k])
      }
    }
    if (Array.isArray(v) && typeof s.items === 'object') {
      for (const [i, x] of v.entries()) walk(s.items as Schema, x, [...path, i])
    }
  }
  walk(schema, body, [])
  const seen = new Set<string>()
  return out.filter((c) => {
    const key = JSON.stringify(c.body)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
