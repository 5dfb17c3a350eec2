// One lane of an actor (transactional or marketing): its sends with work, oldest first, each at most once.
//
// Not a Map in insertion order: V8 leaves a hole for every deleted entry until the table shrinks, and iterating from
// the front walks every hole. Sends leave a lane from the front as they are dispatched, so with 20,000 one-device
// sends waiting each pick would walk thousands of holes (about fifty times the cost of a pick with 100 waiting).
// Here a deleted send leaves a slot that is skipped once and dropped: the front moves past it, and the slots are
// compacted (below) so that they never hold many more sends than the lane does.

interface Slot<T> {
  item: T
  /** The add that made this slot: a send deleted and added again is live only in its newest slot. */
  seq: number
}

export class Lane<T extends { readonly key: string }> {
  /** key → the seq of its live slot. */
  readonly #live = new Map<string, number>()
  #slots: Slot<T>[] = []
  #head = 0
  #seq = 0

  get size(): number {
    return this.#live.size
  }

  /** Slots held, live or not (tests: memory stays bounded by the lane's size). */
  get slotCount(): number {
    return this.#slots.length
  }

  has(key: string): boolean {
    return this.#live.has(key)
  }

  /** At the back, unless already in the lane (then it keeps its place). */
  add(item: T): void {
    if (this.#live.has(item.key)) return
    const seq = ++this.#seq
    this.#live.set(item.key, seq)
    this.#slots.push({ item, seq })
  }

  delete(key: string): void {
    if (!this.#live.delete(key)) return
    // Dead slots hold their sends (meta, message) until dropped: all at once when the lane empties; else once the
    // slots the front has moved past are half the array, or the dead ones behind it outnumber the live ones.
    if (this.#live.size === 0) {
      this.#slots = []
      this.#head = 0
      return
    }
    const dead = this.#slots.length - this.#head - this.#live.size
    if ((this.#head >= 64 && this.#head * 2 >= this.#slots.length) || (dead > 64 && dead > this.#live.size)) this.#compact()
  }

  /** The first answer `fn` gives for the lane's items, oldest first (undefined: ask the next one). `fn` must not add to
   *  or delete from the lane. */
  first<R>(fn: (item: T) => R | undefined): R | undefined {
    for (let i = this.#head; i < this.#slots.length; i++) {
      const slot = this.#slots[i] as Slot<T>
      if (this.#live.get(slot.item.key) !== slot.seq) {
        if (i === this.#head) this.#head++ // a dead slot at the front is never looked at again
        continue
      }
      const r = fn(slot.item)
      if (r !== undefined) return r
    }
    return undefined
  }

  forEach(fn: (item: T) => void): void {
    this.first((item) => {
      fn(item)
      return undefined
    })
  }

  #compact(): void {
    this.#slots = this.#slots.slice(this.#head).filter((s) => this.#live.get(s.item.key) === s.seq)
    this.#head = 0
  }
}
