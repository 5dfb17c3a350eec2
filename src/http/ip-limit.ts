// Per-source-IP request limits, counted per instance (the spec, Limits). A source is an IPv4 address or an IPv6 /64
// (src/core/ip.ts clientKey): a host owns its whole /64, so counting IPv6 addresses apart would let one host be unlimited.
//
// Memory is fixed however many sources there are: counts live in a count-min sketch (4 rows of 65,536 counters,
// 512 KB per window), not in a map that grows with every new address. A sketch never under-counts; it over-counts a
// source only when other sources' traffic collides with it in all four rows, which at the per-minute volumes one
// instance can serve stays far below the limit (and updates are conservative: only the smallest counters grow).
// Windows share global boundaries, so rolling over is swapping two sketches.
import { clientKey } from '../core/ip'

export type WindowKind = 'sliding' | 'fixed'

const DEPTH = 4
const WIDTH_BITS = 16
const WIDTH = 1 << WIDTH_BITS
const MASK = WIDTH - 1

/** FNV-1a over the key's UTF-16 units, then a second hash derived from it (double hashing picks the 4 cells). */
function hashes(key: string): [number, number] {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  let h2 = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h2 = Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35)
  return [h >>> 0, ((h2 ^ (h2 >>> 16)) | 1) >>> 0]
}

class Sketch {
  readonly cells: Uint16Array | Uint32Array
  readonly #max: number

  constructor(limit: number, width = WIDTH) {
    // Counters only need to reach the limit; 16 bits unless the limit does not fit.
    this.cells = limit < 0xffff ? new Uint16Array(DEPTH * width) : new Uint32Array(DEPTH * width)
    this.#max = limit < 0xffff ? 0xffff : 0xffffffff
  }

  estimate(h1: number, h2: number): number {
    let min = this.#max
    for (let r = 0; r < DEPTH; r++) {
      const v = this.cells[r * WIDTH + ((h1 + r * h2) & MASK)] as number
      if (v < min) min = v
    }
    return min
  }

  /** Conservative update: the source's count becomes `to`; no counter above it is touched. */
  raise(h1: number, h2: number, to: number): void {
    const v = Math.min(to, this.#max)
    for (let r = 0; r < DEPTH; r++) {
      const i = r * WIDTH + ((h1 + r * h2) & MASK)
      if ((this.cells[i] as number) < v) this.cells[i] = v
    }
  }

  clear(): void {
    this.cells.fill(0)
  }
}

export class IpLimiter {
  #index = -1
  #current: Sketch
  #previous: Sketch

  constructor(
    readonly limit: number,
    private readonly kind: WindowKind,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {
    // A disabled limiter holds no counters at all.
    const width = limit > 0 ? WIDTH : 0
    this.#current = new Sketch(limit, width)
    this.#previous = kind === 'sliding' ? new Sketch(limit, width) : this.#current
  }

  /** Bytes held by the counters: constant, whatever the number of sources. */
  get memoryBytes(): number {
    return this.#current.cells.byteLength * (this.kind === 'sliding' ? 2 : 1)
  }

  /** Counts one request from `ip`; false when its source is over the limit (a refused request is not counted). */
  take(ip: string): boolean {
    if (this.limit <= 0) return true
    if (this.#used(ip) >= this.limit) return false
    this.#current.raise(this.#h1, this.#h2, this.#cur + 1)
    return true
  }

  /** True when `ip`'s source is at its limit now; counts nothing (the key check asks before a lookup: src/apps/auth.ts).
   *  Not on the public routes' path, which take() alone serves. */
  over(ip: string): boolean {
    return this.limit > 0 && this.#used(ip) >= this.limit
  }

  // The last source #used measured: its hashes and its current window's count (fields, not a returned object, so
  // the public routes' check allocates nothing).
  #h1 = 0
  #h2 = 0
  #cur = 0

  /** Requests of `ip`'s source within the last window: the current count, plus the previous window's weighted by how
   *  much of it still lies within the last minute (sliding). */
  #used(ip: string): number {
    const t = this.now()
    const index = Math.floor(t / this.windowMs)
    if (index !== this.#index) this.#roll(index)
    const [h1, h2] = hashes(clientKey(ip))
    this.#h1 = h1
    this.#h2 = h2
    this.#cur = this.#current.estimate(h1, h2)
    if (this.kind !== 'sliding') return this.#cur
    const elapsed = (t - index * this.windowMs) / this.windowMs
    return this.#cur + this.#previous.estimate(h1, h2) * (1 - elapsed)
  }

  #roll(index: number): void {
    if (this.kind === 'sliding') {
      const next = index === this.#index + 1 ? this.#previous : this.#current
      if (index === this.#index + 1) {
        this.#previous = this.#current
      } else {
        this.#previous.clear()
      }
      next.clear()
      this.#current = next
    } else {
      this.#current.clear()
    }
    this.#index = index
  }
}
