// The business time zone (docs/decisions.md): a fixed UTC-03:00 without daylight saving, the zone the spec names
// for the days of `por_dia`. Every calendar count of the service turns at 00:00 of this zone (03:00Z): the days of
// the statistics and of the dashboard's charts, and the months of the free-plan allowance.

/** The zone's ISO 8601 offset. */
export const BUSINESS_OFFSET = '-03:00'

/** The same zone for Intl (IANA's `Etc/GMT` names carry the POSIX sign: `Etc/GMT+3` is UTC-03:00, no DST). */
export const BUSINESS_IANA_ZONE = 'Etc/GMT+3'

/**
 * SQL: `expr AT TIME ZONE` the business zone. A timestamptz becomes the zone's local time (a timestamp); a local
 * timestamp becomes the instant it names. The interval form keeps the ISO sign (a text zone such as 'UTC-3' would be
 * read POSIX-style, three hours the other way).
 */
export function atBusinessZone(expr: string): string {
  return `(${expr} AT TIME ZONE INTERVAL '${BUSINESS_OFFSET}')`
}
