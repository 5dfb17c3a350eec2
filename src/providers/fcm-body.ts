// The FCM HTTP v1 `messages:send` body for one device, built from the send's rendering (src/message/payload.ts).
// Fields: firebase.google.com/docs/reference/fcm/rest/v1/projects.messages (Message, AndroidConfig,
// WebpushConfig, ApnsConfig). Pure: same input, same bytes.
//
// Android and web pushes are data-only messages: the SDK shows the notification and sends the delivery receipt on
// arrival (the spec, Client SDK behaviour; "The SDK shows the server-resolved text"). A message with a `notification`
// block is drawn by the OS while the app is in the background, and the SDK's handler never runs, so no receipt
// would come back for most deliveries. What the SDK draws travels as the server-built display block (the spec, Reserved
// keys `pmx_`) inside `data`.
//   data      map<string,string>: the caller's data as text (objects/arrays JSON-encoded, the spec, request fields "on the
//             Android path values travel as text"), pm_url, pm_msg_id, pm_rcpt (the spec, Payload carried to the device);
//             on Android and web the display block (DISPLAY_KEYS: resolved title and text by pickText, icons, accent
//             colour, sound, channel, image, tray tag = collapse id); then the full language maps as pmx_contents/
//             pmx_headings/pmx_subtitle (the spec, Language selection "full language maps still travel") when they fit
//             FCM's 4,096 bytes, else left out (the resolved text is shown).
//   android   device_type 1: priority (HIGH wakes the app for a transactional send), ttl "<n>s", collapse_key.
//   webpush   device_types 5/7/8: headers TTL/Urgency (RFC 8030 §5.2, §5.3; Topic §5.4 when the collapse id is a
//             valid one); the service worker draws the display block (pm_url is where a click goes).
//   apns      device_type 0 when routed through FCM: headers and an `aps` block like the direct path, texts by pickText
//             (iOS draws alerts itself; the SDK's notification service extension sends the receipt).
import { pickText } from '../message/payload'
import type { TextMap } from '../message/types'
import type { Push, Target } from './types'

/** FCM: "4096 bytes for most messages … This includes both the keys and the values." */
export const FCM_DATA_LIMIT_BYTES = 4096
const WEB_TYPES = new Set([5, 7, 8])
/** RFC 8030 §5.4: Topic is at most 32 characters of the URL- and filename-safe base64 alphabet. */
const WEB_TOPIC = /^[A-Za-z0-9_-]{1,32}$/

type Json = Record<string, unknown>

/** The rendering's members as the builders read them (payload.ts header). */
export interface Rendering {
  contents: TextMap
  headings?: TextMap
  subtitle?: TextMap
  data: Json
  big_picture?: string
  large_icon?: string
  ios_attachments?: Record<string, string>
  small_icon?: string
  android_channel_id?: string
  android_accent_color?: string
  ios_sound?: string
  android_sound?: string
  collapse_id?: string
  content_available: boolean
  mutable_content: boolean
}

export const rendering = (push: Push): Rendering => push.message as unknown as Rendering

/** FCM data values are strings: strings as they are, anything else as its JSON text. */
export function asText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v ?? null)
}

/** The display block's keys (the spec, Reserved keys: `pmx_` is the server-built display block), in wire order. */
export const DISPLAY_KEYS = {
  title: 'pmx_title',
  body: 'pmx_body',
  smallIcon: 'pmx_small_icon',
  largeIcon: 'pmx_large_icon',
  accentColor: 'pmx_accent_color',
  sound: 'pmx_sound',
  channel: 'pmx_channel_id',
  image: 'pmx_big_picture',
  tag: 'pmx_collapse_id',
} as const

/** What the SDK draws on this device kind, as data entries (absent members left out). */
export function displayBlock(m: Rendering, deviceType: number): Array<[string, string]> {
  const web = WEB_TYPES.has(deviceType)
  const entries: Array<[string, string | undefined]> = [
    [DISPLAY_KEYS.title, pickText(m.headings)],
    [DISPLAY_KEYS.body, pickText(m.contents)],
    [DISPLAY_KEYS.smallIcon, web ? undefined : m.small_icon],
    [DISPLAY_KEYS.largeIcon, m.large_icon],
    [DISPLAY_KEYS.accentColor, web ? undefined : m.android_accent_color],
    [DISPLAY_KEYS.sound, web ? undefined : m.android_sound],
    [DISPLAY_KEYS.channel, web ? undefined : m.android_channel_id],
    [DISPLAY_KEYS.image, m.big_picture],
    [DISPLAY_KEYS.tag, m.collapse_id],
  ]
  return entries.filter((e): e is [string, string] => e[1] !== undefined)
}

/**
 * Caller data + pm_url as text, then pm_msg_id and pm_rcpt, then `display` (what the SDK draws); the language maps
 * when everything fits `budget` bytes.
 */
export function fcmData(
  m: Rendering,
  push: Push,
  budgetBytes: number,
  display: Array<[string, string]> = [],
): Record<string, string> {
  const data: Record<string, string> = {}
  // UTF-16 lengths first: a text's UTF-8 bytes are at most 3 per UTF-16 unit, so a message whose lengths fit a
  // third of the budget fits it, and only a larger one is measured in bytes (Buffer.byteLength of every entry is a
  // visible part of a single-device send's cost).
  let chars = 0
  const source = m.data ?? {}
  for (const k in source) {
    const v = asText(source[k])
    // A caller's `__proto__` key is an ordinary member (payload.ts keeps it so); assigned, it would set the prototype.
    if (k === '__proto__') Object.defineProperty(data, k, { value: v, enumerable: true, writable: true, configurable: true })
    else data[k] = v
    chars += k.length + v.length
  }
  data.pm_msg_id = push.sendId
  data.pm_rcpt = push.proof
  chars += 'pm_msg_id'.length + push.sendId.length + 'pm_rcpt'.length + push.proof.length
  for (const [k, v] of display) {
    data[k] = v
    chars += k.length + v.length
  }
  const maps: Array<[string, string]> = [['pmx_contents', JSON.stringify(m.contents)]]
  if (m.headings) maps.push(['pmx_headings', JSON.stringify(m.headings)])
  if (m.subtitle) maps.push(['pmx_subtitle', JSON.stringify(m.subtitle)])
  for (const [k, v] of maps) chars += k.length + v.length
  const fits = 3 * chars <= budgetBytes || utf8Bytes(Object.entries(data)) + utf8Bytes(maps) <= budgetBytes
  if (fits) for (const [k, v] of maps) data[k] = v
  return data
}

function utf8Bytes(entries: Iterable<[string, string]>): number {
  let n = 0
  for (const [k, v] of entries) n += Buffer.byteLength(k) + Buffer.byteLength(v)
  return n
}

/** The members that were set, in their order, so the wire shows only those. Copied rather than deleted from: an
 *  object that lost a property is a slower one to serialise. */
function compact<T extends Json>(o: T): T {
  const out: Json = {}
  for (const k in o) if (o[k] !== undefined) out[k] = o[k]
  return out as T
}

const utf8 = (s: string | undefined) => (s === undefined ? 0 : Buffer.byteLength(s))

export function fcmMessage(target: Target, push: Push, nowMs: number): { message: Json } {
  const m = rendering(push)
  if (target.deviceType === 0) {
    const title = pickText(m.headings)
    const body = pickText(m.contents)
    // The alert's texts count against the same 4,096 bytes as data on FCM's side.
    const data = fcmData(m, push, FCM_DATA_LIMIT_BYTES - utf8(title) - utf8(body))
    return { message: { token: target.token, data, apns: apnsConfig(m, push, nowMs, title, body) } }
  }
  const data = fcmData(m, push, FCM_DATA_LIMIT_BYTES, displayBlock(m, target.deviceType))
  const message: Json = { token: target.token, data }
  if (WEB_TYPES.has(target.deviceType)) message.webpush = webpushConfig(m, push)
  else message.android = androidConfig(m, push)
  return { message }
}

function androidConfig(m: Rendering, push: Push): Json {
  return compact({
    priority: push.lane === 0 ? 'HIGH' : 'NORMAL',
    ttl: `${push.ttlS}s`, // google.protobuf.Duration in JSON: seconds with an "s" suffix
    collapse_key: m.collapse_id,
  })
}

function webpushConfig(m: Rendering, push: Push): Json {
  return {
    headers: compact({
      TTL: String(push.ttlS),
      Urgency: push.lane === 0 ? 'high' : 'normal',
      Topic: m.collapse_id !== undefined && WEB_TOPIC.test(m.collapse_id) ? m.collapse_id : undefined,
    }),
  }
}

function apnsConfig(m: Rendering, push: Push, nowMs: number, title: string | undefined, body: string | undefined): Json {
  const subtitle = pickText(m.subtitle)
  const background = m.content_available && !title && !subtitle && !body
  const aps = compact({
    alert: background ? undefined : compact({ title, subtitle, body }),
    sound: background ? undefined : m.ios_sound,
    'mutable-content': m.mutable_content ? 1 : undefined,
    'content-available': m.content_available ? 1 : undefined,
  })
  return compact({
    headers: compact({
      'apns-push-type': background ? 'background' : 'alert',
      'apns-priority': background || push.lane === 1 ? '5' : '10',
      'apns-expiration': String(apnsExpiration(push.ttlS, nowMs)),
      'apns-collapse-id': m.collapse_id,
    }),
    payload: { aps },
    fcm_options: m.big_picture ? { image: m.big_picture } : undefined,
  })
}

/** apns-expiration: epoch seconds until which APNs keeps retrying; 0 = deliver once or drop (Apple, "Sending
 *  notification requests to APNs"). */
export function apnsExpiration(ttlS: number, nowMs: number): number {
  return ttlS <= 0 ? 0 : Math.floor(nowMs / 1000) + ttlS
}
