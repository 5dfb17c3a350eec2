// The in-app proof (the spec, In-app device routes: each item of a package carries a signed proof; events echo it).
// `<epoch base36>.<mac>`: mac = base64url of the first 18 bytes of HMAC-SHA256(app receipt key,
// `inapp:<campaign>:<device>:<epoch>`), so it binds the campaign, the device and when the package was made. The
// epoch is the start of a 6-hour bucket: one package body per bucket, so a device polling with If-None-Match gets
// 304 within it. Verified in memory, in constant time; "recent" = made within the event window plus the package's
// validity (7 days + 24 h), and not in the future.
import { createHmac, timingSafeEqual } from 'node:crypto'

export const EPOCH_MS = 6 * 3600_000

export function epochOf(nowMs: number): number {
  return Math.floor(nowMs / EPOCH_MS) * (EPOCH_MS / 1000)
}

function mac(key: Buffer, campaignId: string, deviceId: string, epochS: number): string {
  return createHmac('sha256', key)
    .update(`inapp:${campaignId}:${deviceId}:${epochS}`)
    .digest()
    .subarray(0, 18)
    .toString('base64url')
}

export function inappProof(key: Buffer, campaignId: string, deviceId: string, epochS: number): string {
  return `${epochS.toString(36)}.${mac(key, campaignId, deviceId, epochS)}`
}

/** True when `presented` is this device's proof for this campaign from a package made in (now - maxAgeMs, now]. */
export function verifyInappProof(
  key: Buffer,
  campaignId: string,
  deviceId: string,
  presented: string,
  nowMs: number,
  maxAgeMs: number,
): boolean {
  const dot = presented.indexOf('.')
  if (dot < 1 || dot > 10) return false
  const epochS = Number.parseInt(presented.slice(0, dot), 36)
  if (!Number.isSafeInteger(epochS) || epochS.toString(36) !== presented.slice(0, dot)) return false
  if (epochS * 1000 > nowMs || epochS * 1000 < nowMs - maxAgeMs) return false
  const expected = Buffer.from(mac(key, campaignId, deviceId, epochS))
  const got = Buffer.from(presented.slice(dot + 1))
  return got.length === expected.length && timingSafeEqual(got, expected)
}
