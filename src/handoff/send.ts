// A send as a worker starts it: its fixed facts (SendMeta), its first page of devices (Candidate), as the delivery
// engine loads them from Postgres (src/delivery/audience.ts) or reads them from a hand-off entry that carries the
// send whole (carried.ts). One shape for both, so a carried send and a loaded one are the same to the actor.

export interface Candidate {
  deviceId: string
  /** Null when the device no longer exists (deleted since the send was accepted). */
  token: string | null
  deviceType: number
  /** Which provider carries it (the spec, Device transporte): apns → APNs, fcm → FCM. */
  transport: 'fcm' | 'apns'
  /** Still a valid, subscribed device (it may have died since the send was accepted). */
  valid: boolean
  /** A provider already accepted a push to its token (devices.push_accepted_at): its accepted outcome need not mark it
   *  real again. Unknown (absent) for a carried send's devices, which are then marked if they are not yet. */
  proven?: boolean
  /** Its proof of arrival for this send, once the actor has computed it (ahead, in batches: actor.ts). */
  proof?: string
}

export interface SendMeta {
  appId: string
  id: string
  lane: 0 | 1
  targetKind: 'players' | 'users' | 'segments'
  segments: string[]
  platformMask: number
  message: Record<string, unknown>
  ttlS: number
  /** When delivery may start (send_after or queued_at), epoch ms. */
  startMs: number
  audienceLength: number
  expandedUntil: string | null
  expansionDone: boolean
  completed: boolean
  /** The send-time count of the audience (a segment's estimate until its expansion ends). */
  recipients: number
  /** Cut into slices that any worker may lease (slices.ts): its devices are walked there, not by its own actor. */
  sliced: boolean
}

export interface LoadedSend {
  meta: SendMeta
  /** List sends: positions 1..pageSize, minus devices already final. Null for segments (expanded by the actor). */
  firstPage: Candidate[] | null
}
