// The proof of arrival (the spec, Receipt): HMAC-SHA256 keyed with the app's receipt key over `<send-id>:<device-id>`,
// rendered as 32 characters (base64url of the first 24 bytes: 192 bits). Computed only on the server, here; the
// receipt route verifies with `verifyProof` in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto'

export function proof(receiptKey: Buffer, sendId: string, deviceId: string): string {
  // 24 bytes are exactly 32 base64url characters (no padding, no partial group), so the first 32 characters of the
  // whole digest's encoding are the encoding of its first 24 bytes, without the intermediate buffers.
  return createHmac('sha256', receiptKey).update(`${sendId}:${deviceId}`).digest('base64url').slice(0, 32)
}

export function verifyProof(receiptKey: Buffer, sendId: string, deviceId: string, presented: string): boolean {
  const expected = Buffer.from(proof(receiptKey, sendId, deviceId))
  const got = Buffer.from(presented)
  return got.length === expected.length && timingSafeEqual(got, expected)
}
