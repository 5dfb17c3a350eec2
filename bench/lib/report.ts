// Prints each figure beside its same-run baseline: this machine is shared and noisy, so ratios, not absolute times.
import type { WrkResult } from './wrk'

export function pct(n: number): string {
  return `${(n * 100).toFixed(1)}%`
}

/** `sameWork`: the baseline does what Pombo does (then 1 - ratio is the framework's cost); else only the ratio. */
export function row(name: string, base: WrkResult, head: WrkResult, sameWork = true): string {
  const ratio = head.rps / base.rps
  return [
    name.padEnd(34),
    `baseline ${base.rps.toFixed(0).padStart(7)} req/s (p99 ${base.p99Ms.toFixed(2)} ms)`,
    `pombo ${head.rps.toFixed(0).padStart(7)} req/s (p50 ${head.p50Ms.toFixed(2)} ms, p99 ${head.p99Ms.toFixed(2)} ms)`,
    sameWork ? `ratio ${ratio.toFixed(3)} (framework cost ${pct(1 - ratio)})` : `ratio ${ratio.toFixed(3)}`,
    head.errors || head.non2xx ? `errors ${head.errors} non-2xx ${head.non2xx}` : '',
  ].join(' | ')
}

/** The median of numbers (the mean of the two middle ones when there are an even number). */
export function medianOf(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}

/** Median of alternating runs: base, head, base, head … */
export function median(xs: WrkResult[]): WrkResult {
  const s = [...xs].sort((a, b) => a.rps - b.rps)
  return s[Math.floor(s.length / 2)] as WrkResult
}
