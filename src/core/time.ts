// Time as the service sees it: an injectable clock (tests move it; nothing sleeps) and the wire formats.
export type Clock = () => number

export const systemClock: Clock = Date.now

export const DAY_MS = 86_400_000

/** ISO 8601 with an explicit offset (the spec, App criado_em). */
export function isoWithOffset(d: Date | number): string {
  return new Date(d).toISOString().replace('Z', '+00:00')
}

export function epochSeconds(d: Date | number): number {
  return Math.floor(new Date(d).getTime() / 1000)
}

export interface Parts {
  y: number
  mo: number
  d: number
  h: number
  mi: number
  s: number
  ms: number
  sign: 1 | -1
  oh: number
  om: number
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysInMonth(y: number, mo: number): number {
  return mo === 2 && isLeap(y) ? 29 : (MONTH_DAYS[mo - 1] ?? 0)
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
}

/** Epoch ms of calendar parts, or null when they name no real instant (Feb 30, hour 24, offset ±24:00). */
export function toEpochMs(p: Parts): number | null {
  if (p.mo < 1 || p.mo > 12 || p.d < 1 || p.d > daysInMonth(p.y, p.mo)) return null
  // Second 60 (a leap second) is refused: neither the providers nor JS time can name it.
  if (p.h > 23 || p.mi > 59 || p.s > 59 || p.oh > 23 || p.om > 59) return null
  const t = new Date(0)
  t.setUTCFullYear(p.y, p.mo - 1, p.d) // not Date.UTC: it maps years 0-99 to 1900-1999
  t.setUTCHours(p.h, p.mi, p.s, p.ms)
  return t.getTime() - p.sign * (p.oh * 60 + p.om) * 60_000
}

// RFC 3339 §5.6 date-time: seconds required, fraction optional, offset `Z` or `±HH:MM`.
const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/**
 * Epoch ms of an RFC 3339 date-time with its offset, or null. Strict: a day or hour that does not exist
 * (`2026-02-30`, `24:00`, `+23:60`) is refused, never rolled over to another instant as Date.parse does.
 */
export function parseRfc3339(v: unknown): number | null {
  if (typeof v !== 'string') return null
  const m = RFC3339_RE.exec(v)
  return m ? fromIsoGroups(m) : null
}

/**
 * Epoch ms from a match whose groups are, in order: year, month, day, hour, minute, second?, fraction?, `Z`?,
 * offset sign, offset hours, offset minutes? (the layout of RFC3339_RE and of send_after's ISO form).
 */
export function fromIsoGroups(m: RegExpExecArray): number | null {
  const zulu = m[8] !== undefined
  return toEpochMs({
    y: Number(m[1]),
    mo: Number(m[2]),
    d: Number(m[3]),
    h: Number(m[4]),
    mi: Number(m[5]),
    s: m[6] === undefined ? 0 : Number(m[6]),
    // Fractions finer than a millisecond are truncated.
    ms: m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0')),
    sign: zulu || m[9] === '+' ? 1 : -1,
    oh: zulu ? 0 : Number(m[10]),
    om: zulu || m[11] === undefined ? 0 : Number(m[11]),
  })
}
