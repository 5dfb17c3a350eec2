// Network conditions a simulator plays on top of its per-token scripts: how long an accepted request takes
// (fixed, uniform or log-normal, as provider latencies are long-tailed), what share of requests fail transiently,
// and which device tokens are dead. Dead tokens are chosen by a hash of the token, so a token that is dead stays
// dead on every retry, as on the real services.
import { createHash } from 'node:crypto'

export type Latency =
  | { kind: 'fixed'; ms: number }
  | { kind: 'uniform'; minMs: number; maxMs: number }
  | { kind: 'lognormal'; medianMs: number; p99Ms: number }

/** Longest latency a simulator plays (a value beyond it is a typo, not a network). */
export const MAX_LATENCY_MS = 120_000
const Z99 = 2.3263478740408408 // the standard normal's 99th percentile

/**
 * Reads a latency from text: `40` (fixed ms), `10-80` (uniform), `lognormal:40:250` (median 40 ms, p99 250 ms).
 * Throws with the form expected.
 */
export function parseLatency(text: string): Latency {
  const t = text.trim()
  const ms = (s: string): number => {
    if (!/^\d+(\.\d+)?$/.test(s)) throw new Error(`latency '${text}': '${s}' is not a number of milliseconds`)
    const n = Number(s)
    if (n > MAX_LATENCY_MS) throw new Error(`latency '${text}': at most ${MAX_LATENCY_MS} ms`)
    return n
  }
  const ln = /^lognormal:([^:]+):([^:]+)$/.exec(t)
  if (ln) {
    const medianMs = ms(ln[1] as string)
    const p99Ms = ms(ln[2] as string)
    if (medianMs <= 0 || p99Ms < medianMs) throw new Error(`latency '${text}': needs 0 < median <= p99`)
    return { kind: 'lognormal', medianMs, p99Ms }
  }
  const range = /^([^-]+)-([^-]+)$/.exec(t)
  if (range) {
    const minMs = ms(range[1] as string)
    const maxMs = ms(range[2] as string)
    if (maxMs < minMs) throw new Error(`latency '${text}': the range's end is below its start`)
    return { kind: 'uniform', minMs, maxMs }
  }
  if (/^\d/.test(t)) return { kind: 'fixed', ms: ms(t) }
  throw new Error(`latency '${text}': expected MS, MIN-MAX or lognormal:MEDIAN:P99`)
}

/** One latency draw, in whole milliseconds. */
export function sampleLatency(l: Latency, random: () => number = Math.random): number {
  switch (l.kind) {
    case 'fixed':
      return Math.round(l.ms)
    case 'uniform':
      return Math.round(l.minMs + random() * (l.maxMs - l.minMs))
    case 'lognormal': {
      // Box-Muller; sigma chosen so the 99th percentile lands on p99Ms
      const sigma = Math.log(l.p99Ms / l.medianMs) / Z99
      const u = 1 - random()
      const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random())
      return Math.min(MAX_LATENCY_MS, Math.round(l.medianMs * Math.exp(sigma * z)))
    }
  }
}

export interface ConditionOptions {
  /** Delay of every answer whose script gives none (default: none). */
  latency?: Latency
  /** Share of requests (0..1) answered with each transient error instead of success, e.g. `{ unavailable: 0.01 }`.
   *  Keys are the simulator's step names; a scripted failure always wins over a drawn one. */
  failureRates?: Readonly<Record<string, number>>
  /** Share of device tokens (0..1) that are dead: answered as unregistered every time. */
  deadTokenRate?: number
  /** Random source (tests pass a seeded one). */
  random?: () => number
}

/** The conditions of one simulator; `markDead` adds dead tokens at run time. */
export class Conditions {
  readonly #latency?: Latency
  readonly #failures: Array<[string, number]>
  readonly #deadRate: number
  readonly #dead = new Set<string>()
  readonly #random: () => number

  constructor(o: ConditionOptions, known: ReadonlySet<string>) {
    this.#latency = o.latency
    this.#random = o.random ?? Math.random
    this.#failures = Object.entries(o.failureRates ?? {})
    let sum = 0
    for (const [name, rate] of this.#failures) {
      if (!known.has(name)) throw new Error(`unknown failure step '${name}' (known: ${[...known].join(', ')})`)
      if (!(rate >= 0 && rate <= 1)) throw new Error(`failure rate of '${name}' must be within 0..1`)
      sum += rate
    }
    if (sum > 1) throw new Error('failure rates add up to more than 1')
    const dead = o.deadTokenRate ?? 0
    if (!(dead >= 0 && dead <= 1)) throw new Error('dead token rate must be within 0..1')
    this.#deadRate = dead
  }

  /** A delay for a step that has none of its own. */
  delay(): number | undefined {
    return this.#latency ? sampleLatency(this.#latency, this.#random) : undefined
  }

  /** The transient failure drawn for this request, if any. */
  failure(): string | undefined {
    if (this.#failures.length === 0) return undefined
    let r = this.#random()
    for (const [name, rate] of this.#failures) {
      if (r < rate) return name
      r -= rate
    }
    return undefined
  }

  markDead(token: string): void {
    this.#dead.add(token)
  }

  isDead(token: string): boolean {
    if (this.#dead.has(token)) return true
    if (this.#deadRate <= 0) return false
    if (this.#deadRate >= 1) return true
    // The first 32 bits of the token's hash, as a fraction: the same token always falls on the same side
    return createHash('sha256').update(token).digest().readUInt32BE(0) / 0x1_0000_0000 < this.#deadRate
  }
}
