// Random identifiers for the simulators' answers (FCM message names), drawn from one buffer filled 4 KB at a time:
// a randomBytes call per message was a tenth of the FCM simulator's CPU under load.
import { randomFillSync } from 'node:crypto'

const POOL_BYTES = 4096

export class RandomHex {
  readonly #pool = Buffer.allocUnsafe(POOL_BYTES)
  #at = POOL_BYTES

  constructor(private readonly bytes: number) {
    if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) throw new RangeError(`bytes must be 1..${POOL_BYTES}`)
  }

  /** `bytes` fresh random bytes as lower-case hex; never the same bytes twice from the pool. */
  next(): string {
    if (this.#at + this.bytes > POOL_BYTES) {
      randomFillSync(this.#pool)
      this.#at = 0
    }
    const hex = this.#pool.toString('hex', this.#at, this.#at + this.bytes)
    this.#at += this.bytes
    return hex
  }
}
