// Latency histogram with bounded memory: log-linear buckets (16 per power of two, ~4.4% wide) from 1 ms to about
// 18 hours, so a run of millions of pushes keeps a few kilobytes and still answers any percentile within ~4%.

const SUB = 16
const MAX_EXP = 26 // 2^26 ms ≈ 18.6 h; anything longer lands in the last bucket
const SIZE = (MAX_EXP + 1) * SUB

export class Histogram {
  readonly #counts = new Float64Array(SIZE)
  count = 0
  #sum = 0
  #min = Number.POSITIVE_INFINITY
  #max = 0

  /** Records one value in milliseconds (negative values, from clock skew, count as 0). */
  record(ms: number): void {
    const v = Number.isFinite(ms) && ms > 0 ? ms : 0
    const b = bucketOf(v)
    this.#counts[b] = (this.#counts[b] ?? 0) + 1
    this.count++
    this.#sum += v
    if (v < this.#min) this.#min = v
    if (v > this.#max) this.#max = v
  }

  get min(): number {
    return this.count ? this.#min : 0
  }

  get max(): number {
    return this.#max
  }

  get mean(): number {
    return this.count ? this.#sum / this.count : 0
  }

  /** The value at quantile q (0..1): the upper edge of the bucket holding it, capped by the largest value seen. */
  quantile(q: number): number {
    if (this.count === 0) return 0
    const rank = Math.max(1, Math.ceil(q * this.count))
    let seen = 0
    for (let i = 0; i < SIZE; i++) {
      seen += this.#counts[i] ?? 0
      if (seen >= rank) return Math.min(upperOf(i), this.#max)
    }
    return this.#max
  }

  /** Non-empty buckets as [lower ms, upper ms, count], in order: what the report draws. */
  buckets(): Array<[number, number, number]> {
    const out: Array<[number, number, number]> = []
    for (let i = 0; i < SIZE; i++) {
      const c = this.#counts[i] ?? 0
      if (c > 0) out.push([lowerOf(i), upperOf(i), c])
    }
    return out
  }
}

/** Bucket of a value: below 1 ms, one linear range; then 16 sub-buckets per power of two. */
function bucketOf(v: number): number {
  if (v < 1) return 0
  const exp = Math.min(MAX_EXP, Math.floor(Math.log2(v)))
  if (exp >= MAX_EXP) return SIZE - 1
  const base = 2 ** exp
  const sub = Math.min(SUB - 1, Math.floor(((v - base) / base) * SUB))
  return 1 + exp * SUB + sub
}

function lowerOf(i: number): number {
  if (i === 0) return 0
  const exp = Math.floor((i - 1) / SUB)
  const sub = (i - 1) % SUB
  return 2 ** exp * (1 + sub / SUB)
}

function upperOf(i: number): number {
  if (i === 0) return 1
  const exp = Math.floor((i - 1) / SUB)
  const sub = (i - 1) % SUB
  return 2 ** exp * (1 + (sub + 1) / SUB)
}

/** Counts per time slot since a start, with bounded memory: when the run outgrows `maxSlots`, slots double in width. */
export class Timeline {
  #slotMs: number
  #slots: number[] = []
  constructor(
    readonly startMs: number,
    slotMs = 1_000,
    readonly maxSlots = 600,
  ) {
    this.#slotMs = slotMs
  }

  add(atMs: number, n = 1): void {
    let i = Math.floor(Math.max(0, atMs - this.startMs) / this.#slotMs)
    while (i >= this.maxSlots) {
      // Merge pairs: same totals, half the resolution
      const merged: number[] = []
      for (let k = 0; k < this.#slots.length; k += 2) merged.push((this.#slots[k] ?? 0) + (this.#slots[k + 1] ?? 0))
      this.#slots = merged
      this.#slotMs *= 2
      i = Math.floor(Math.max(0, atMs - this.startMs) / this.#slotMs)
    }
    while (this.#slots.length <= i) this.#slots.push(0)
    this.#slots[i] = (this.#slots[i] ?? 0) + n
  }

  get slotMs(): number {
    return this.#slotMs
  }

  /** Counts per slot, from the start. */
  get slots(): readonly number[] {
    return this.#slots
  }
}
