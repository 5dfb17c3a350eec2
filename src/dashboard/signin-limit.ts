// Sign-in attempts are limited per account and per source IP over a fixed window, counted in Redis so every
// instance shares the count: guessing a password is slow whichever instance or address the guesses come from.
import { createHash } from 'node:crypto'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { WindowCounter } from '../redis/window-counter'
import type { Clock } from '../core/time'

export class SigninLimiter {
  readonly #account: WindowCounter
  readonly #ip: WindowCounter

  constructor(redis: RedisClient, keys: Keys, clock: Clock, o: { perAccount: number; perIp: number; windowMs: number }) {
    this.#account = new WindowCounter(redis, (a, w) => keys.signinAccount(a, w), o.windowMs, o.perAccount, clock)
    this.#ip = new WindowCounter(redis, (ip, w) => keys.signinIp(ip, w), o.windowMs, o.perIp, clock)
  }

  /** Counts one attempt; false when the account or the address is past its limit for the window. */
  async take(email: string, ip: string): Promise<boolean> {
    const account = createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)
    const [a, i] = await Promise.all([this.#account.take(account), this.#ip.take(ip)])
    return a && i
  }
}
