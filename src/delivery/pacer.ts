// An app's pace toward the providers (the spec, App rate_por_min): a token bucket refilled continuously, with a burst
// of one second's worth. A provider 429 pauses the whole bucket (back-pressure, honouring Retry-After). The actor
// that owns the app is the bucket's only user, and an app's partition has one owner (a lease), so the pace holds
// for the app whichever worker runs it.
import type { Clock } from '../time'

export class Pacer {
  #tokens: number
  #at: number
  #pausedUntil = 0

  constructor(
    private ratePerMin: number,
    private readonly clock: Clock,
    private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void> = abortableSleep,
  ) {
    this.#tokens = this.#burst()
    this.#at = clock()
  }

  setRate(ratePerMin: number): void {
    this.#refill()
    this.ratePerMin = ratePerMin
    this.#tokens = Math.min(this.#tokens, this.#burst())
  }

  /** Waits for a token; false when stopped first. */
  async take(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted) return false
      const now = this.clock()
      if (now < this.#pausedUntil) {
        await this.sleep(this.#pausedUntil - now, signal)
        continue
      }
      this.#refill()
      if (this.#tokens >= 1) {
        this.#tokens -= 1
        return true
      }
      const perMs = this.ratePerMin / 60_000
      await this.sleep(Math.max(1, Math.ceil((1 - this.#tokens) / perMs)), signal)
    }
  }

  /** A provider asked to slow down: nothing leaves until `ms` have passed. */
  pause(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.clock() + ms)
  }

  #burst(): number {
    return Math.max(1, this.ratePerMin / 60)
  }

  #refill(): void {
    const now = this.clock()
    this.#tokens = Math.min(this.#burst(), this.#tokens + ((now - this.#at) * this.ratePerMin) / 60_000)
    this.#at = now
  }
}

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}
