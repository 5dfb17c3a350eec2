// A least-recently-used cache bounded by `max` whose memory follows what it holds. lru-cache allocates its whole
// capacity when it is made (two arrays of `max` slots and three typed arrays of `max` integers): the process's eight
// caches at their default bounds (about 1.3 million entries) cost 37 MB and, on a busy 2-core machine, a second of
// start before a single entry is stored. This one starts with room for MIN_CAPACITY entries and, when full, moves to
// a cache of twice the room (never past `max`), copying its entries in their recency order; a copy happens at most
// log2(max / MIN_CAPACITY) times, so each entry is copied about once on average. Once at `max`, it evicts the least
// recently used entry, as lru-cache does.
import { LRUCache } from 'lru-cache'

const MIN_CAPACITY = 256

export interface LruOptions<K, V> {
  max: number
  /** Called when an entry is evicted to make room, replaced by `set`, or deleted (lru-cache's reasons). */
  dispose?: (value: V, key: K, reason: LRUCache.DisposeReason) => void
}

export class Lru<K extends {}, V extends {}> {
  readonly max: number
  readonly #dispose: LruOptions<K, V>['dispose']
  #cache: LRUCache<K, V>

  constructor(o: LruOptions<K, V>) {
    if (!Number.isInteger(o.max) || o.max < 1) throw new TypeError(`Lru: max must be a positive integer, got ${o.max}`)
    this.max = o.max
    this.#dispose = o.dispose
    this.#cache = this.#make(Math.min(MIN_CAPACITY, o.max))
  }

  /** The room allocated now (tests read it). */
  get capacity(): number {
    return this.#cache.max
  }

  get size(): number {
    return this.#cache.size
  }

  get(key: K): V | undefined {
    return this.#cache.get(key)
  }

  /** The value without making it the most recently used. */
  peek(key: K): V | undefined {
    return this.#cache.peek(key)
  }

  has(key: K): boolean {
    return this.#cache.has(key)
  }

  set(key: K, value: V): this {
    const c = this.#cache
    if (c.size >= c.max && c.max < this.max && !c.has(key)) this.#grow()
    this.#cache.set(key, value)
    return this
  }

  delete(key: K): boolean {
    return this.#cache.delete(key)
  }

  clear(): void {
    this.#cache.clear()
    // What a full cache grew to is kept: a cache cleared once (a key rotation, say) fills again the same way.
  }

  /** Most recently used first. */
  entries(): Generator<[K, V]> {
    return this.#cache.entries()
  }

  values(): Generator<V> {
    return this.#cache.values()
  }

  #make(max: number): LRUCache<K, V> {
    return new LRUCache<K, V>(this.#dispose ? { max, dispose: this.#dispose } : { max })
  }

  #grow(): void {
    const old = this.#cache
    const next = this.#make(Math.min(old.max * 2, this.max))
    // Least recently used first, so the order survives; nothing is disposed: every entry moves.
    for (const [k, v] of old.rentries() as Generator<[K, V]>) next.set(k, v)
    this.#cache = next
  }
}
