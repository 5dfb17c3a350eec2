// HTML for the dashboard's pages. `html` is a tagged template that escapes every interpolated value; only values
// made by `html` itself (or `raw`, for text that is already HTML) pass through as they are. A page therefore
// cannot print a value from outside unescaped by forgetting to escape it.
import { BUSINESS_IANA_ZONE } from '../core/business-time'

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' }

/** Text as HTML: safe in element content and in quoted attribute values. */
export function esc(v: unknown): string {
  return String(v ?? '').replace(/[&<>"'`]/g, (c) => ESC[c] as string)
}

/** Already-safe HTML (a constant of the code, never a value from outside). */
export function raw(s: string): Html {
  return new Html(s)
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof Html) return v.text
  if (Array.isArray(v)) return v.map(render).join('')
  return esc(v)
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] as string
  for (let i = 0; i < values.length; i++) out += render(values[i] as Part) + (strings[i + 1] as string)
  return new Html(out)
}

/** JSON for a `<script type="application/json">` block: `<` escaped so the data can never close the element. */
export function jsonData(v: unknown): Html {
  return new Html(
    JSON.stringify(v)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029'),
  )
}

const dateFmt = new Intl.DateTimeFormat('pt-BR', { dateStyle: 'short', timeStyle: 'medium', timeZone: BUSINESS_IANA_ZONE })

/** A moment in the business zone (src/core/business-time.ts), the zone of the charts' days. */
export function when(d: Date | null | undefined): string {
  return d ? dateFmt.format(d) : '—'
}
