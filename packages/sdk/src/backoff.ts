// When to try the service again after a failure it did not refuse (offline, timeout, 5xx, 429). The wait doubles
// with each consecutive failed attempt up to a ceiling, with jitter so a fleet that lost the service at the same
// moment does not come back at the same moment; a `Retry-After` from the service is a floor the SDK never undercuts.

export interface RetryPolicy {
  /** Wait after the first failure (ms). */
  baseMs: number
  /** Ceiling of the wait (ms). */
  maxMs: number
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 2_000, maxMs: 15 * 60_000 }

/**
 * Wait before the next attempt after `failures` consecutive failures (1 = the first): the doubled delay capped at
 * `maxMs`, drawn uniformly from its upper half ("equal jitter": never less than half the nominal wait).
 */
export function backoffMs(failures: number, p: RetryPolicy, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(failures))
  const nominal = Math.min(p.maxMs, p.baseMs * 2 ** Math.min(n - 1, 40))
  const r = Math.min(Math.max(random(), 0), 1)
  return Math.round(nominal / 2 + (r * nominal) / 2)
}

/** RFC 9110 §10.2.3: delay-seconds or an HTTP-date; anything else (or nothing) is no instruction. */
export function retryAfterMs(header: string | null | undefined, nowMs: number): number | undefined {
  if (header === null || header === undefined) return undefined
  const v = header.trim()
  if (/^\d{1,9}$/.test(v)) return Number(v) * 1000
  if (!/[a-z]/i.test(v)) return undefined
  const at = Date.parse(v)
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined
}
