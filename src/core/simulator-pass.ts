// The fleet pass of `pombo simulate`: one run's devices all register and send receipts from one address, so the
// public routes' per-IP limit (PM_LIMIT_IP_PER_MIN) would refuse most of a fleet. The run, which holds the
// instance's vault key (npm start's .data/local-env.json), mints a pass valid for a bounded time (it names the run's
// app, for whoever reads it); its devices send it in a header, and an instance that allows simulators
// (PM_ALLOW_SIMULATORS, where the same vault key is set) lets those requests past the per-IP limit, and nothing else:
// every other check of the route (the app, its registrations per hour, the body) still applies. Everywhere else the header is never even read,
// so production keeps its limit whatever a caller sends. The key is derived for this purpose alone, so a pass can
// never stand for anything the vault key protects.
import { createHmac, timingSafeEqual } from 'node:crypto'

export const SIMULATOR_PASS_HEADER = 'x-pombo-simulator'
/** The longest a pass may live, whatever the run asks for. */
export const SIMULATOR_PASS_MAX_MS = 24 * 3_600_000

const derived = new WeakMap<Buffer, Buffer>()
function passKey(vaultKey: Buffer): Buffer {
  let k = derived.get(vaultKey)
  if (!k) {
    k = createHmac('sha256', vaultKey).update('pombo simulator pass v1').digest()
    derived.set(vaultKey, k)
  }
  return k
}

const sign = (vaultKey: Buffer, body: string) => createHmac('sha256', passKey(vaultKey)).update(body).digest('base64url')

/** `<app id>.<expiry, ms>.<HMAC>`: valid until `now + ttlMs` (at most SIMULATOR_PASS_MAX_MS). */
export function mintSimulatorPass(vaultKey: Buffer, appId: string, ttlMs: number, now = Date.now()): string {
  const body = `${appId}.${now + Math.min(Math.max(ttlMs, 0), SIMULATOR_PASS_MAX_MS)}`
  return `${body}.${sign(vaultKey, body)}`
}

/** True for an unexpired pass this vault key made; anything else (absent, malformed, forged, expired) is false. */
export function checkSimulatorPass(vaultKey: Buffer, pass: string | undefined, now = Date.now()): boolean {
  if (typeof pass !== 'string' || pass.length > 200) return false
  const m = /^([0-9a-f-]{36})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(pass)
  if (!m) return false
  const expiry = Number(m[2])
  if (!(expiry > now) || expiry > now + SIMULATOR_PASS_MAX_MS) return false
  const want = Buffer.from(sign(vaultKey, `${m[1]}.${m[2]}`))
  const got = Buffer.from(m[3] as string)
  return want.length === got.length && timingSafeEqual(want, got)
}

/** The check an instance that allows simulators gives its router. */
export function simulatorPassCheck(vaultKey: Buffer): (pass: string | undefined) => boolean {
  return (pass) => checkSimulatorPass(vaultKey, pass)
}
