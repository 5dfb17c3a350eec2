// A device deleted on the service (the dashboard deletes a device with its delivery history) registers again on the
// next use of the app instead of at its daily refresh: the service marks its answer to a receipt or an in-app poll
// that named a player_id it has no device for (transport.ts), and the SDK registers its token again at once, which
// gives it a new player_id.
//
// Loops are guarded here: one re-registration at a time; only for the device's current player_id (an answer about
// a previous one, or one that arrives after the device already changed, is stale); and a re-registration that did
// not give the device another player_id (registration refused, unreachable, or answering the same id) makes the
// next one wait a backoff that grows with each such attempt (backoff.ts), so a service that keeps saying "unknown"
// costs one registration per backoff step, never one per answer.
import { backoffMs, type RetryPolicy } from './backoff.js'

export interface RejoinDeps {
  /** The device's player_id now (null before any registration). */
  current: () => string | null
  /** Registers again after the service said it does not know `unknown`; answers whether the player_id changed. */
  register: (unknown: string) => Promise<boolean>
  retry: RetryPolicy
  now: () => number
  random?: () => number
}

export class Rejoin {
  #running: Promise<void> | null = null
  /** Consecutive re-registrations that left the player_id as it was. */
  #failures = 0
  #notBefore = 0

  constructor(private readonly d: RejoinDeps) {}

  /** The service answered that it has no device `player`. Resolves when the re-registration it started (if any) ends. */
  unknown(player: string): Promise<void> {
    if (this.#running) return this.#running
    if (player !== this.d.current() || this.d.now() < this.#notBefore) return Promise.resolve()
    const run = this.#run(player).finally(() => {
      this.#running = null
    })
    this.#running = run
    return run
  }

  /** Resolves when no re-registration is running. */
  idle(): Promise<void> {
    return this.#running ?? Promise.resolve()
  }

  async #run(player: string): Promise<void> {
    let changed = false
    try {
      changed = await this.d.register(player)
    } catch {
      changed = false
    }
    if (changed) {
      this.#failures = 0
      this.#notBefore = 0
      return
    }
    this.#failures++
    this.#notBefore = this.d.now() + backoffMs(this.#failures, this.d.retry, this.d.random)
  }
}
