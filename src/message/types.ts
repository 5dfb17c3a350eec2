// A send request after validation (the spec, Notification (send): request fields). Wire names live in validate.ts;
// everything below it speaks this shape.

export type Lane = 0 | 1 // 0 transactional, 1 marketing (the spec, Sends: X-Pm-Lane)

export const SEGMENTS = ['Subscribed Users', 'Total Subscriptions', 'Active Users', 'Engaged Users'] as const
export type Segment = (typeof SEGMENTS)[number]

export type Target =
  | { kind: 'players'; ids: string[] }
  | { kind: 'users'; ids: string[] }
  | { kind: 'segments'; names: Segment[] }

/** Platform exclusion flags: absent includes, false excludes, true includes (the spec, Notification). */
export interface PlatformFlags {
  ios: boolean
  android: boolean
  web: boolean
}

export type TextMap = Record<string, string>

export interface SendInput {
  appId: string
  contents: TextMap
  headings?: TextMap
  subtitle?: TextMap
  target: Target
  platforms: PlatformFlags
  bigPicture?: string
  largeIcon?: string
  smallIcon?: string
  androidChannelId?: string
  androidAccentColor?: string
  iosSound?: string
  androidSound?: string
  iosAttachments?: Record<string, string>
  contentAvailable: boolean
  /** Already true when media (big_picture, ios_attachments) is present. */
  mutableContent: boolean
  name?: string
  externalId?: string
  idempotencyKey?: string
  data?: Record<string, unknown>
  /** First non-empty of url, app_url, web_url (spec: reaches the device as pm_url). */
  url?: string
  /** Epoch ms; null = now (a past date also means now). */
  sendAfterMs: number | null
  /** As sent, for the read shape. */
  sendAfterRaw?: string
  ttlS: number
  lane: Lane
  collapseId?: string
  /** The message as it travels (payload.ts), as JSON text: rendered once, at the door where its size is checked, and
   *  stored and carried to the worker as these very bytes. */
  message: string
}

/** What the message is rendered from: the request without its rendering. */
export type MessageFields = Omit<SendInput, 'message'>
