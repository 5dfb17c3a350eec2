// What a parsed JSON body may hold before anything reads it: only values Pombo can store and echo back exactly.
// JSON.parse accepts lone surrogates ("\ud800"), U+0000 and numbers beyond a double (1e400 → Infinity); Postgres
// refuses the first two in text and jsonb (22P02, 22P05), and JSON.stringify silently turns the others into U+FFFD
// or null. Deep nesting overflows the stack of every recursive reader downstream. So they are refused at the door,
// by path, never rewritten.

export interface JsonProblem {
  /** The wire path of the offending value: `contents.en`, `include_player_ids[3]`, `tags` (for a key). */
  campo: string
  motivo: string
}

const NOT_WELL_FORMED = 'contém texto que não é Unicode válido (surrogate isolado ou bytes que não são UTF-8)'
const NUL = 'contém o caractere U+0000, que não pode ser armazenado'

function textProblem(s: string): string | null {
  if (!s.isWellFormed()) return NOT_WELL_FORMED
  if (s.includes('\0')) return NUL
  return null
}

/**
 * The first value under `v` that cannot be stored exactly, or null. `depth` is the nesting level of `v` itself;
 * past `maxDepth` the value is refused without being walked (bounded work whatever the input).
 */
export function findUnstorable(v: unknown, maxDepth: number, depth = 1): { path: Array<string | number>; motivo: string } | null {
  if (typeof v === 'string') {
    const m = textProblem(v)
    return m ? { path: [], motivo: m } : null
  }
  if (typeof v === 'number')
    return Number.isFinite(v) ? null : { path: [], motivo: 'é um número fora do intervalo representável' }
  if (v === null || typeof v !== 'object') return null
  if (depth > maxDepth) return { path: [], motivo: `aninha mais de ${maxDepth} níveis de objetos ou listas` }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = findUnstorable(v[i], maxDepth, depth + 1)
      if (p) {
        p.path.unshift(i)
        return p
      }
    }
    return null
  }
  for (const k in v) {
    const km = textProblem(k)
    if (km) return { path: [], motivo: `tem uma chave que ${km}` }
    const p = findUnstorable((v as Record<string, unknown>)[k], maxDepth, depth + 1)
    if (p) {
      p.path.unshift(k)
      return p
    }
  }
  return null
}

/** Field paths quoted in an answer are cut here: the keys are the caller's, and may be as long as the body. */
const PATH_TEXT_MAX = 200

/** `a.b[3].c`: the notation the error texts use for nested fields. */
export function pathText(path: ReadonlyArray<string | number>): string {
  let out = ''
  for (const seg of path) {
    out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`
    if (out.length > PATH_TEXT_MAX) return `${out.slice(0, PATH_TEXT_MAX)}…`
  }
  return out
}

/**
 * Checks a parsed body object field by field. A problem under one of `lenient` top-level fields (best-effort fields
 * whose strange values never fail the request) removes that field, as if it were absent; any other is answered.
 */
export function guardBody(body: Record<string, unknown>, maxDepth: number, lenient?: ReadonlySet<string>): JsonProblem | null {
  for (const k in body) {
    const km = textProblem(k)
    if (km) return { campo: '(corpo)', motivo: `tem uma chave que ${km}` }
    const p = findUnstorable(body[k], maxDepth, 2)
    if (!p) continue
    if (lenient?.has(k)) {
      delete body[k]
      continue
    }
    return { campo: pathText([k, ...p.path]), motivo: p.motivo }
  }
  return null
}
