// What the delivery engine asks of a push provider, and what it gets back. Provider failures are Outcome values,
// never throws: the actor decides what each one means for the device and the send.

/** One device to deliver to: its player id, its push token and its device_type (0 iOS, 1 Android, 5/7/8 web). */
export interface Target {
  deviceId: string
  token: string
  deviceType: number
}

/** One message for one device: the send's rendering (src/message/payload.ts) plus what the server injects. */
export interface Push {
  sendId: string
  /** renderMessage(input) as stored in sends.message. */
  message: Record<string, unknown>
  /** `pm_rcpt` for this device (src/message/proof.ts): 32 characters. */
  proof: string
  /** Seconds the provider may keep trying; 0 = now or never. */
  ttlS: number
  /** 0 transactional (high priority), 1 marketing (normal). */
  lane: 0 | 1
}

export type Outcome =
  /** The provider accepted the message: `successful`. */
  | { kind: 'accepted' }
  /** The token is dead (FCM UNREGISTERED, APNs 410 Unregistered/ExpiredToken): `failed`, device invalidated. */
  | { kind: 'dead-token'; reason: string }
  /**
   * APNs BadDeviceToken: `failed`, but often a sandbox/production mismatch rather than a dead token, so the engine
   * decides from the app's recent APNs answers whether to invalidate (bad-tokens.ts: an environment problem must
   * not wipe the app's iOS base).
   */
  | { kind: 'bad-device-token'; reason: string }
  /** Refused for this message and device, not retried, token kept (e.g. FCM INVALID_ARGUMENT): `failed`. */
  | { kind: 'rejected'; reason: string }
  /** 5xx, timeout, connection loss: retried with backoff, three attempts in all, then `errored`. */
  | { kind: 'transient'; reason: string; retryAfterMs?: number }
  /** 429: back-pressure on the whole app's pace, honouring Retry-After; the device's attempt is not burnt. */
  | { kind: 'quota'; retryAfterMs: number }
  /** The credential itself is refused (FCM 401/403, APNs InvalidProviderToken, BadEnvironmentKeyIdInToken …). */
  | { kind: 'credential'; reason: string }

export interface Provider {
  /** APNs: the credential's environment (an app's BadDeviceToken answers are judged per environment, bad-tokens.ts). */
  readonly apnsEnv?: 'sandbox' | 'production'
  send(target: Target, push: Push): Promise<Outcome>
  close(): Promise<void>
}
