// The in-app proof (the spec, In-app device routes: each item of a package carries a signed proof; events echo it).
// `<epoch base36>.<mac>`: mac = base64url of the first 18 bytes of HMAC-SHA256(in-app key,
// `inapp:<campaign>:<device>:<epoch>`), so it binds the campaign, the device and when the package was made. The
// epoch is the start of a 6-hour bucket: one package body per bucket, so a device polling with If-None-Match gets
// 304 within it. Verified in memory, in constant time; "recent" = made within the event window plus the package's
// validity (7 days + 24 h), and not in the future.
//
// The in-app key is derived from the app's receipt key for this purpose alone: HMAC-SHA256(receipt key,
// "pombo inapp proof v1"). The receipt key itself signs only delivery proofs (src/message/proof.ts, the spec's
// construction), so no in-app proof can ever pass as a delivery receipt, nor a receipt's proof as an in-app one,
// whatever ids either is made of. Packages made before this construction carry proofs that no longer verify:
// their events answer `prova_invalida`, and since the label is part of every package's ETag (device-routes.ts), the
// device's next poll brings a new package whose proofs do.
import { createHmac, timingSafeEqual } from 'node:crypto'

export const EPOCH_MS = 6 * 3600_000

/** The label of the in-app key's derivation: changing it is a new construction (v2), never an edit. */
export const INAPP_KEY_LABEL = 'pombo inapp proof v1'

/** Derived keys by receipt-key buffer (the receipt-key cache hands out the same buffer while it holds the app),
 *  with the bytes they were derived from: a buffer whose bytes changed is derived again. */
const derived = new WeakMap<Buffer, { from: Buffer; key: Buffer }>()

/** The app's in-app proof key: HMAC-SHA256(receipt key, INAPP_KEY_LABEL). */
export function inappKey(receiptKey: Buffer): Buffer {
  const hit = derived.get(receiptKey)
  if (hit?.from.equals(receiptKey)) return hit.key
  const key = createHmac('sha256', receiptKey).update(INAPP_KEY_LABEL).digest()
  derived.set(receiptKey, { from: Buffer.from(receiptKey), key })
  return key
}

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

/** The proof of one campaign for one device, from the app's receipt key (the in-app key is derived from it). */
export function inappProof(receiptKey: Buffer, campaignId: string, deviceId: string, epochS: number): string {
  return `${epochS.toString(36)}.${mac(inappKey(receiptKey), campaignId, deviceId, epochS)}`
}

/** True when `presented` is this device's proof for this campaign from a package made in (now - maxAgeMs, now]. */
export function verifyInappProof(
  receiptKey: Buffer,
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
  const expected = Buffer.from(mac(inappKey(receiptKey), campaignId, deviceId, epochS))
  const got = Buffer.from(presented.slice(dot + 1))
  return got.length === expected.length && timingSafeEqual(got, expected)
}
