// Sign-in limits, shared by every instance through Redis. Two guards, so that guessing is slow from anywhere and
// nobody can lock a person out:
//
// - Per network: attempts per 15 minutes per IPv4 address or IPv6 /64 (src/core/ip.ts clientKey: a host owns its
//   whole /64), whatever the account. Past it only that network waits.
// - Per account, growing delays instead of a lock. Each failure is recorded against the account and against its
//   source: a network, or a browser that signed in to this account before (the `pm_conhecido` cookie, signed, bound
//   to the account). After `free` failures of a source, that source waits 1 s, 2 s, 4 s … up to `sourceMaxMs` before
//   its next attempt is looked at: a guesser slows down where it stands. After `free` failures of the account from
//   anywhere, a source without a known-browser cookie also waits between attempts, but at most `accountMaxMs`: a
//   new source's turn is fixed at its first refused attempt and failures elsewhere never push it back, so a person
//   on another network waits a bounded time and then signs in. A known browser never waits for anyone else's
//   failures.
//
// The answers are the same whether the account exists or not (the counters key on the e-mail's digest), and an
// attempt is counted as a failure before the password is checked (so concurrent attempts cannot slip through
// together), then settled: a success clears its source.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { clientKey } from '../core/ip'
import type { Clock } from '../core/time'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { WindowCounter } from '../redis/window-counter'

/** The known-browser cookie: set by a successful sign-in, read only by the sign-in form (SameSite=Strict). */
export const KNOWN_BROWSER_COOKIE = 'pm_conhecido'
export const KNOWN_BROWSER_MAX_AGE_S = 90 * 24 * 3600

/** The first delay past the free failures; each further failure doubles it. */
const BASE_DELAY_MS = 1000

// KEYS: the account's failures (a hash: f), the source's (a hash: f, and r: when its next attempt may be judged).
// ARGV: now, free, base, sourceMax, accountMax, sourceTtl, accountTtl, known (1|0).
// Answers 0 (judge it now: it is counted as a failure until settled) or the milliseconds to wait. A source's turn is
// fixed when it is set (at its last failure, or at its first refusal when it has none): failures elsewhere never
// push it back.
const GATE = `
local now = tonumber(ARGV[1])
local free = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local known = ARGV[8] == '1'
local function delay(f, max)
  if f < free then return 0 end
  local d = base * math.pow(2, math.min(f - free, 40))
  if d > max then return max end
  return d
end
local r = tonumber(redis.call('HGET', KEYS[2], 'r') or '-1')
if r < 0 then
  if not known then
    local d = delay(tonumber(redis.call('HGET', KEYS[1], 'f') or '0'), tonumber(ARGV[5]))
    if d > 0 then
      redis.call('HSET', KEYS[2], 'r', now + d)
      redis.call('PEXPIRE', KEYS[2], ARGV[6])
      return math.ceil(d)
    end
  end
elseif r > now then
  return math.ceil(r - now)
end
local sf = redis.call('HINCRBY', KEYS[2], 'f', 1)
local af = redis.call('HINCRBY', KEYS[1], 'f', 1)
local d = delay(sf, tonumber(ARGV[4]))
if not known then d = math.max(d, delay(af, tonumber(ARGV[5]))) end
redis.call('HSET', KEYS[2], 'r', now + d)
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return 0
`

// KEYS: the account's failures, the source's. ARGV: 'success' (the source starts over) or 'void' (the attempt was
// never judged: its count is taken back and the source may try again now), and now. The account's count loses the
// attempt either way.
const SETTLE = `
if ARGV[1] == 'success' then
  redis.call('DEL', KEYS[2])
else
  if tonumber(redis.call('HGET', KEYS[2], 'f') or '0') > 0 then redis.call('HINCRBY', KEYS[2], 'f', -1) end
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'r', ARGV[2]) end
end
if tonumber(redis.call('HGET', KEYS[1], 'f') or '0') > 0 then redis.call('HINCRBY', KEYS[1], 'f', -1) end
return 0
`

export type SigninGate =
  | {
      ok: true
      /** After the password was checked: a success clears the source; `void`: it was not checked after all. */
      settle(outcome: 'success' | 'failure' | 'void'): Promise<void>
    }
  | { ok: false; retryAfterS: number; scope: 'network' | 'account' }

export interface SigninLimits {
  /** Failures of a source (and of the account) before delays start; 0 turns the account delays off. */
  perAccount: number
  /** Attempts per window per IPv4 address or IPv6 /64; 0 turns it off. */
  perIp: number
  windowMs: number
  /** The longest a failing source waits. */
  sourceMaxMs: number
  /** The longest a source without failures of its own waits while the account is attacked elsewhere. */
  accountMaxMs: number
}

export class SigninLimiter {
  readonly #network: WindowCounter
  readonly #deviceKey: Buffer

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly o: SigninLimits,
    secret: Buffer,
  ) {
    this.#network = new WindowCounter(redis, (net, w) => keys.signinIp(net, w), o.windowMs, o.perIp, clock)
    this.#deviceKey = createHmac('sha256', secret).update('pombo dashboard known browsers').digest()
  }

  /** Whom the counters name: the digest of the e-mail as typed, trimmed and lower-cased (existing or not). */
  static account(email: string): string {
    return createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)
  }

  #sign(account: string, nonce: string): string {
    return createHmac('sha256', this.#deviceKey).update(`${account}:${nonce}`).digest('base64url')
  }

  /** The known-browser cookie's value for an account (after a successful sign-in). */
  knownBrowser(email: string): string {
    const nonce = randomBytes(16).toString('base64url')
    return `${nonce}.${this.#sign(SigninLimiter.account(email), nonce)}`
  }

  /** The browser's nonce when its cookie is valid for this account; null otherwise. */
  #known(account: string, cookie: string | undefined): string | null {
    const m = cookie ? /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(cookie) : null
    if (!m) return null
    const want = Buffer.from(this.#sign(account, m[1] as string))
    const got = Buffer.from(m[2] as string)
    return got.length === want.length && timingSafeEqual(got, want) ? (m[1] as string) : null
  }

  /** Whether this attempt may be judged now; when it may, it is already counted (settle it after the check). */
  async check(email: string, ip: string, knownCookie: string | undefined): Promise<SigninGate> {
    const account = SigninLimiter.account(email)
    const net = clientKey(ip)
    const nonce = this.#known(account, knownCookie)
    // A known browser is this person's own: neither its network's traffic nor other sources hold it back.
    if (nonce === null && !(await this.#network.take(net))) {
      const left = this.o.windowMs - (this.clock() % this.o.windowMs)
      return { ok: false, retryAfterS: Math.ceil(left / 1000), scope: 'network' }
    }
    if (this.o.perAccount <= 0) return { ok: true, settle: async () => {} }
    const keys = [
      this.keys.signinAccountFailures(account),
      this.keys.signinSourceFailures(account, nonce === null ? `n:${net}` : `b:${nonce}`),
    ] as const
    const sourceTtl = Math.max(this.o.windowMs, 2 * this.o.sourceMaxMs)
    const waitMs = Number(
      await this.redis.eval(
        GATE,
        2,
        ...keys,
        this.clock(),
        this.o.perAccount,
        BASE_DELAY_MS,
        this.o.sourceMaxMs,
        this.o.accountMaxMs,
        sourceTtl,
        this.o.windowMs,
        nonce === null ? 0 : 1,
      ),
    )
    if (waitMs > 0) return { ok: false, retryAfterS: Math.ceil(waitMs / 1000), scope: 'account' }
    return {
      ok: true,
      settle: async (outcome) => {
        if (outcome === 'failure') return
        await this.redis.eval(SETTLE, 2, ...keys, outcome, this.clock())
      },
    }
  }
}
