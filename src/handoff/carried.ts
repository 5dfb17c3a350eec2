// A small list send travels to its worker whole. The hand-off's stream entry (src/handoff/stream.ts) carries what
// loadSends would read back a few milliseconds later: the message, the platforms, and each device with the token
// read when the send was accepted. The worker starts the send without a statement. For the typical sender (one
// device a send, thousands a second) that read was a fifth of Postgres's work per send and a share of the worker's.
//
// Two rules keep it exactly as safe as loading:
//  - Only an entry the worker reads fresh from the stream is trusted (worker.ts). An entry claimed from a dead
//    consumer, moved or re-enqueued may name a send that was already delivered, so that send is loaded, and its
//    completed_at and final deliveries are read as before.
//  - Postgres stays the truth: the entry is only a copy of the committed row. Anything the worker cannot read (a
//    malformed entry, more devices than its page) is loaded instead.
//
// Tokens are read at acceptance: a device whose token changes or dies, or that is deleted, in the milliseconds
// between acceptance and delivery is asked once at its old token, as it would have been had the worker been a few
// milliseconds quicker; the answer is recorded as usual (a dead token is invalidated).
import type { Candidate, LoadedSend } from './send'

/**
 * The largest copy an entry carries, in bytes. A typical one-device send's is 500–800 bytes; a send with a large
 * payload is loaded instead, so that a backlog of capped entries (PM_STREAM_MAX_LEN) stays within a known memory.
 */
export const CARRY_MAX_BYTES = 2_048

/** One device as carried: [id, token, device_type, transporte]. */
type CarriedDevice = [string, string | null, number, 'fcm' | 'apns' | null]

/** [version, target kind, platform bits, ttl_s, queued_at (epoch ms), message, devices]. */
type Carried = [1, 'players' | 'users', number, number, number, Record<string, unknown>, CarriedDevice[]]

export interface CarriedSend {
  targetKind: 'players' | 'users'
  /** Platform bits (ios 1, android 2, web 4), as in the send's `platforms`. */
  platformMask: number
  ttlS: number
  queuedAtMs: number
  /** The message as JSON text (SendInput.message): placed in the copy as it is, not parsed and written again. */
  message: string
  devices: ReadonlyArray<{ id: string; identifier: string | null; deviceType: number; transport: 'fcm' | 'apns' | null }>
}

/** The entry's `c` field, or null when it would exceed CARRY_MAX_BYTES (the send is then loaded). */
export function encodeCarried(s: CarriedSend): string | null {
  const devices: CarriedDevice[] = s.devices.map((d) => [d.id, d.identifier, d.deviceType, d.transport])
  const text = `[1,${JSON.stringify(s.targetKind)},${s.platformMask},${s.ttlS},${s.queuedAtMs},${s.message},${JSON.stringify(devices)}]`
  return Buffer.byteLength(text) <= CARRY_MAX_BYTES ? text : null
}

const isInt = (x: unknown): x is number => Number.isSafeInteger(x)

function deviceOf(x: unknown): Candidate | null {
  if (!Array.isArray(x) || x.length !== 4) return null
  const [id, token, deviceType, transport] = x as unknown[]
  if (typeof id !== 'string' || (token !== null && typeof token !== 'string') || !isInt(deviceType)) return null
  if (transport !== null && transport !== 'fcm' && transport !== 'apns') return null
  // As loadSends builds it (audience.ts candidate): the device was reachable when the send was accepted.
  return { deviceId: id, token, deviceType, transport: transport ?? 'fcm', valid: true }
}

/**
 * The send as loadSends would answer it while it is fresh (nothing delivered, nothing expanded), or null when the
 * entry cannot be read or holds more devices than one page (`pageSize`): then the send is loaded.
 */
export function decodeCarried(appId: string, sendId: string, lane: 0 | 1, text: string, pageSize: number): LoadedSend | null {
  let c: unknown
  try {
    c = JSON.parse(text)
  } catch {
    return null
  }
  if (!Array.isArray(c) || c.length !== 7 || c[0] !== 1) return null
  const [, kind, mask, ttlS, queuedAtMs, message, devices] = c as Carried
  if (kind !== 'players' && kind !== 'users') return null
  if (!isInt(mask) || !isInt(ttlS) || !isInt(queuedAtMs)) return null
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null
  if (!Array.isArray(devices) || devices.length === 0 || devices.length > pageSize) return null
  const firstPage: Candidate[] = []
  for (const d of devices) {
    const cand = deviceOf(d)
    if (!cand) return null
    firstPage.push(cand)
  }
  return {
    meta: {
      appId,
      id: sendId,
      lane,
      targetKind: kind,
      segments: [],
      platformMask: mask,
      message,
      ttlS,
      startMs: queuedAtMs,
      audienceLength: firstPage.length,
      expandedUntil: null,
      expansionDone: true,
      completed: false,
      recipients: firstPage.length,
      sliced: false,
    },
    firstPage,
  }
}
