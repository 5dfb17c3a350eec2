// Array parameters for values that need no quoting (UUIDs validated at the door or read from Postgres, integers):
// one join into a Postgres array literal instead of the driver's per-element escaping, which showed in profiles of
// 2,000-id sends and 1,000-outcome batches.
export function arrayLiteral(values: ReadonlyArray<string | number>): string {
  return `{${values.join(',')}}`
}

/** Element types arrayOf writes. */
export type ElementType = 'uuid' | 'int' | 'smallint' | 'bool' | 'timestamptz' | 'text' | 'jsonb'

// Inside a quoted element Postgres reads a backslash as "take the next character as is". JSON.stringify escapes `"`
// and `\` exactly so, and natively (2.5× the driver's two regex replaces on a message here), but it also writes
// control characters and lone surrogates as JSON escapes, which Postgres would misread: text holding them takes the
// general path. JSON text made by JSON.stringify holds neither (it escaped them itself).
function jsonQuotable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) return false
  }
  return true
}

function quoted(s: string, isJsonText: boolean): string {
  if (isJsonText || jsonQuotable(s)) return JSON.stringify(s)
  return `"${s.replace(/[\\"]/g, '\\$&')}"`
}

function element(type: ElementType, v: unknown): string {
  if (v === null || v === undefined) return 'NULL'
  switch (type) {
    case 'bool':
      return v ? 't' : 'f'
    case 'timestamptz':
      return (v as Date).toISOString()
    case 'text':
      return quoted(String(v), false)
    case 'jsonb':
      return quoted(v as string, true)
    default:
      return String(v)
  }
}

/**
 * The Postgres array literal of `values` as elements of `type` (the statement casts the parameter to `type[]`). For
 * multi-row statements over unnest: one string per column instead of the driver's per-element encoding (its quoting
 * and date formatting showed in profiles of the send write). Values: uuids and integers as validated, booleans,
 * Dates, any text, and for jsonb the JSON text made by JSON.stringify.
 */
export function arrayOf(type: ElementType, values: readonly unknown[]): string {
  let out = '{'
  for (let i = 0; i < values.length; i++) out += (i === 0 ? '' : ',') + element(type, values[i])
  return `${out}}`
}
