// Time as the service sees it: an injectable clock (tests move it; nothing sleeps) and the wire formats.
export type Clock = () => number

export const systemClock: Clock = Date.now

export const DAY_MS = 86_400_000

/** ISO 8601 with an explicit offset (spec §App criado_em). */
export function isoWithOffset(d: Date | number): string {
  return new Date(d).toISOString().replace('Z', '+00:00')
}

export function epochSeconds(d: Date | number): number {
  return Math.floor(new Date(d).getTime() / 1000)
}
