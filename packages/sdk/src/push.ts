// What a push carries, read the way the service writes it:
//   FCM (Android, web): a data-only message; `data` is a map of strings: the sender's data, `pm_url`, `pm_msg_id`
//     (the send id), `pm_rcpt` (the proof of arrival), the display block `pmx_title`, `pmx_body`, `pmx_small_icon`,
//     `pmx_large_icon`, `pmx_accent_color`, `pmx_sound`, `pmx_channel_id`, `pmx_big_picture`, `pmx_collapse_id`, and
//     the full language maps `pmx_contents` / `pmx_headings` / `pmx_subtitle` as JSON text when they fit.
//   APNs (iOS): `aps` {alert {title, subtitle, body}, sound, ...}, then the sender's data as JSON values, `pm_url`,
//     `pm_msg_id`, `pm_rcpt`, `pm_att` {name: url} and the language maps as objects.
// The texts shown are the ones the service resolved (`pmx_title`/`pmx_body`, or `aps.alert`); the maps travel so an
// app can choose otherwise. The proof is kept exactly as received: the SDK never computes or rewrites it.

export interface PushDisplay {
  /** The send id (`pm_msg_id`). */
  notificationId: string
  title?: string
  subtitle?: string
  body?: string
  /** Where a tap goes (`pm_url`). */
  url?: string
  smallIcon?: string
  largeIcon?: string
  accentColor?: string
  sound?: string
  channelId?: string
  /** Big picture (Android, web). */
  image?: string
  /** Tray tag: a later push with the same tag replaces this one (the send's `collapse_id`). */
  tag?: string
  /** iOS media for a notification service extension (`pm_att`). */
  attachments?: Record<string, string>
  /** The full language maps, when they travelled. */
  contents?: Record<string, string>
  headings?: Record<string, string>
  subtitles?: Record<string, string>
  /** The sender's own `data`, without the service's `pm_*` / `pmx_*` keys. */
  data: Record<string, unknown>
}

export interface ParsedPush {
  notificationId: string
  /** The proof, exactly as the service injected it. */
  rcpt: string
  display: PushDisplay
}

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

/** A language map: an object of strings (APNs), or its JSON text (FCM); anything else is absent. */
function textMap(v: unknown): Record<string, string> | undefined {
  let o = v
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v)
    } catch {
      return undefined
    }
  }
  if (!isObj(o)) return undefined
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(o)) if (typeof x === 'string') out[k] = x
  return Object.keys(out).length > 0 ? out : undefined
}

function stringMap(v: unknown): Record<string, string> | undefined {
  if (!isObj(v)) return undefined
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x
  return out
}

/**
 * The push's flat key/value map, whatever wrapper the platform put around it: the map itself (FCM `data`, an APNs
 * payload / iOS userInfo), an object with `data` (a Firebase web/JS message, a RemoteMessage-like object), or a
 * JavaScript Map (a bridged Android RemoteMessage.getData()).
 */
function flatten(input: unknown): Obj | null {
  if (input instanceof Map) {
    const o: Obj = {}
    for (const [k, v] of input) if (typeof k === 'string') o[k] = v
    return o
  }
  if (!isObj(input)) return null
  if ('pm_msg_id' in input) return input
  if (isObj(input.data) && 'pm_msg_id' in input.data) {
    // An FCM-delivered iOS message can carry `aps` beside `data`.
    return isObj(input.aps) ? { ...input.data, aps: input.aps } : input.data
  }
  if (isObj(input.payload)) return flatten(input.payload)
  return null
}

/** The push's flat key/value map (the wrappers `parsePush` reads taken off), or null for any other value. */
export function pushMap(input: unknown): Record<string, unknown> | null {
  return flatten(input)
}

/** The Pombo part of a push, or null when the push is not one of the service's (no `pm_msg_id` / `pm_rcpt`). */
export function parsePush(input: unknown): ParsedPush | null {
  const m = flatten(input)
  if (!m) return null
  const notificationId = str(m.pm_msg_id)
  const rcpt = str(m.pm_rcpt)
  if (!notificationId || rcpt === undefined) return null
  const data: Obj = {}
  for (const [k, v] of Object.entries(m)) {
    if (k.startsWith('pm_') || k.startsWith('pmx_') || k === 'aps') continue
    data[k] = v
  }
  const d: PushDisplay = { notificationId, data }
  const aps = isObj(m.aps) ? m.aps : undefined
  const alert = aps ? aps.alert : undefined
  if (isObj(alert)) {
    d.title = str(alert.title)
    d.subtitle = str(alert.subtitle)
    d.body = typeof alert.body === 'string' ? alert.body : undefined
  } else if (typeof alert === 'string') {
    d.body = alert
  }
  d.title ??= str(m.pmx_title)
  d.body ??= typeof m.pmx_body === 'string' ? m.pmx_body : undefined
  d.sound = str(aps?.sound) ?? str(m.pmx_sound)
  d.url = str(m.pm_url)
  d.smallIcon = str(m.pmx_small_icon)
  d.largeIcon = str(m.pmx_large_icon)
  d.accentColor = str(m.pmx_accent_color)
  d.channelId = str(m.pmx_channel_id)
  d.image = str(m.pmx_big_picture)
  d.tag = str(m.pmx_collapse_id)
  d.attachments = stringMap(typeof m.pm_att === 'string' ? safeJson(m.pm_att) : m.pm_att)
  d.contents = textMap(m.pmx_contents)
  d.headings = textMap(m.pmx_headings)
  d.subtitles = textMap(m.pmx_subtitle)
  for (const k of Object.keys(d) as Array<keyof PushDisplay>) if (d[k] === undefined) delete d[k]
  return { notificationId, rcpt, display: d }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s)
  } catch {
    return undefined
  }
}
