// `send_after` readings (spec §Notification (send): request fields): "ISO 8601 with offset or the form
// `YYYY-MM-DD HH:MM:SS GMT-0300`". A time with no offset names no instant, so it is unreadable (400), never
// guessed in the server's zone. The raw text is kept apart: the spec says two spellings are different bodies.

// ISO 8601 extended date-time with an offset: seconds and fraction optional (ISO reduced precision), offset `Z`,
// `±HH:MM`, `±HHMM` or `±HH`; `T` or `t` between date and time (RFC 3339 §5.6 allows both cases).
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/
// The spec's second spelling, exactly: one space each side of the time, `GMT`, a sign and four digits.
const GMT_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT([+-])(\d{2})(\d{2})$/

interface Parts {
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

function toEpochMs(p: Parts): number | null {
  if (p.mo < 1 || p.mo > 12 || p.d < 1 || p.d > daysInMonth(p.y, p.mo)) return null
  // Second 60 (a leap second) is refused: neither the providers nor JS time can name it.
  if (p.h > 23 || p.mi > 59 || p.s > 59 || p.oh > 23 || p.om > 59) return null
  const t = new Date(0)
  t.setUTCFullYear(p.y, p.mo - 1, p.d) // not Date.UTC: it maps years 0-99 to 1900-1999
  t.setUTCHours(p.h, p.mi, p.s, p.ms)
  return t.getTime() - p.sign * (p.oh * 60 + p.om) * 60_000
}

/** Epoch ms of a `send_after` text, or null when it is unreadable. */
export function parseSendAfter(raw: string): number | null {
  let m = ISO_RE.exec(raw)
  if (m) {
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
  m = GMT_RE.exec(raw)
  if (m) {
    return toEpochMs({
      y: Number(m[1]),
      mo: Number(m[2]),
      d: Number(m[3]),
      h: Number(m[4]),
      mi: Number(m[5]),
      s: Number(m[6]),
      ms: 0,
      sign: m[7] === '+' ? 1 : -1,
      oh: Number(m[8]),
      om: Number(m[9]),
    })
  }
  return null
}
