// Per-source-IP request limits, counted per instance (spec §Limits). Windows share global boundaries, so rolling
// over is swapping two maps: memory is bounded by the addresses seen in the last two minutes.
export type WindowKind = 'sliding' | 'fixed'

export class IpLimiter {
  #index = -1
  #current = new Map<string, number>()
  #previous = new Map<string, number>()

  constructor(
    readonly limit: number,
    private readonly kind: WindowKind,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  /** Counts one request from `ip`; false when it is over the limit (a refused request is not counted). */
  take(ip: string): boolean {
    if (this.limit <= 0) return true
    const t = this.now()
    const index = Math.floor(t / this.windowMs)
    if (index !== this.#index) {
      this.#previous = index === this.#index + 1 ? this.#current : new Map()
      this.#current = new Map()
      this.#index = index
    }
    const cur = this.#current.get(ip) ?? 0
    let used = cur
    if (this.kind === 'sliding') {
      // The previous window's count, weighted by how much of it still lies within the last minute.
      const elapsed = (t - index * this.windowMs) / this.windowMs
      used += (this.#previous.get(ip) ?? 0) * (1 - elapsed)
    }
    if (used >= this.limit) return false
    this.#current.set(ip, cur + 1)
    return true
  }
}
