// `send_after` readings (the spec, Notification (send): request fields): "ISO 8601 with offset or the form
// `YYYY-MM-DD HH:MM:SS GMT-0300`". A time with no offset names no instant, so it is unreadable (400), never
// guessed in the server's zone. The raw text is kept apart: the spec says two spellings are different bodies.

import { fromIsoGroups, toEpochMs } from '../core/time'

// ISO 8601 extended date-time with an offset: seconds and fraction optional (ISO reduced precision), offset `Z`,
// `±HH:MM`, `±HHMM` or `±HH`; `T` or `t` between date and time (RFC 3339 §5.6 allows both cases).
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/
// The spec's second spelling, exactly: one space each side of the time, `GMT`, a sign and four digits.
const GMT_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT([+-])(\d{2})(\d{2})$/

/** Epoch ms of a `send_after` text, or null when it is unreadable. */
export function parseSendAfter(raw: string): number | null {
  let m = ISO_RE.exec(raw)
  if (m) return fromIsoGroups(m)
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
