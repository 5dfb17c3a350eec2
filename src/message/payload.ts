// THE message as it travels to a device: one rendering, used at the door for the size check (the spec, Limits "Final
// message payload 3,891 bytes, including 96 bytes the server injects"; Sends "checked before touching the
// database") and by the delivery engine, which builds the FCM and APNs bodies from this same object. If the two
// ever rendered differently, a send accepted here could be refused by a provider; so there is one function.
//
// The rendering is a JSON object whose members appear in this fixed order, absent ones omitted (never null):
//   contents          {lang: text}, every language (the spec, Language selection: "full language maps still travel")
//   headings          {lang: text}, when sent
//   subtitle          {lang: text}, when sent
//   data              always present: the caller's `data` plus `pm_url` (the winning url/app_url/web_url, spec
//                     request fields "reaches the device as pm_url"); the server later adds `pm_msg_id` and
//                     `pm_rcpt` here (the spec, "Payload carried to the device"), accounted as INJECTED_BYTES
//   big_picture, large_icon             strings, when sent
//   ios_attachments   {name: url}, when sent
//   small_icon, android_channel_id, android_accent_color, ios_sound, android_sound, collapse_id   when sent
//   content_available, mutable_content  booleans, always
//   ttl               integer seconds, always
//   priority          10 (lane 0, transactional) or 5 (lane 1, marketing), always (the APNs/FCM high/normal scale)
// Every object inside (language maps, data and anything nested in it, ios_attachments) has its keys sorted by
// UTF-16 code units and arrays kept in order, so the bytes do not depend on how the body or Postgres (jsonb
// reorders keys) handed the values over. Serialisation is JSON.stringify with no whitespace; size is UTF-8 bytes.
// Provider envelopes (token, the `aps` wrapper, FCM's text-only data values) are outside the counted bytes: the
// spec's 3,891 leaves 205 bytes of the providers' 4,096 for them.
import { DEFAULT_LIMITS } from '../core/config'
import { ApiError } from '../core/errors'
import type { MessageFields, TextMap } from './types'

/** `pm_msg_id` + `pm_rcpt` inside `data` (the spec, "Payload carried to the device"). */
export const INJECTED_BYTES = 96

/** A JSON value with object keys sorted at every depth; arrays keep their order. */
function sortedValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedValue)
  if (v === null || typeof v !== 'object') return v
  // A null prototype keeps a `__proto__` key (JSON.parse makes it an own property) an ordinary member.
  const out: Record<string, unknown> = Object.create(null)
  for (const k of Object.keys(v).sort()) out[k] = sortedValue((v as Record<string, unknown>)[k])
  return out
}

export function renderMessage(input: MessageFields): Record<string, unknown> {
  const m: Record<string, unknown> = { contents: sortedValue(input.contents) }
  if (input.headings) m.headings = sortedValue(input.headings)
  if (input.subtitle) m.subtitle = sortedValue(input.subtitle)
  // `pm_` keys are refused in the caller's data (the spec, Reserved keys), so pm_url cannot collide.
  const data: Record<string, unknown> = { ...input.data }
  if (input.url !== undefined) data.pm_url = input.url
  m.data = sortedValue(data)
  if (input.bigPicture !== undefined) m.big_picture = input.bigPicture
  if (input.largeIcon !== undefined) m.large_icon = input.largeIcon
  if (input.iosAttachments !== undefined) m.ios_attachments = sortedValue(input.iosAttachments)
  if (input.smallIcon !== undefined) m.small_icon = input.smallIcon
  if (input.androidChannelId !== undefined) m.android_channel_id = input.androidChannelId
  if (input.androidAccentColor !== undefined) m.android_accent_color = input.androidAccentColor
  if (input.iosSound !== undefined) m.ios_sound = input.iosSound
  if (input.androidSound !== undefined) m.android_sound = input.androidSound
  if (input.collapseId !== undefined) m.collapse_id = input.collapseId
  m.content_available = input.contentAvailable
  m.mutable_content = input.mutableContent
  m.ttl = input.ttlS
  m.priority = input.lane === 0 ? 10 : 5
  return m
}

/** UTF-8 bytes of the rendering plus the bytes the server injects: the number compared with the limit. */
export function payloadBytes(input: MessageFields): number {
  return messageBytes(JSON.stringify(renderMessage(input)))
}

function messageBytes(json: string): number {
  return Buffer.byteLength(json, 'utf8') + INJECTED_BYTES
}

/** The rendering as JSON text, once its size is checked (checkPayloadSize): the text the send stores. */
export function renderChecked(input: MessageFields, limit: number = DEFAULT_LIMITS.payloadMaxBytes): string {
  const json = JSON.stringify(renderMessage(input))
  checkBytes(messageBytes(json), limit)
  return json
}

/** the spec, Send errors: 422 when the final payload is over the limit (PM_LIMIT_PAYLOAD_BYTES, 3,891 bytes);
 *  exactly the limit passes. */
export function checkPayloadSize(input: MessageFields, limit: number = DEFAULT_LIMITS.payloadMaxBytes): number {
  return checkBytes(payloadBytes(input), limit)
}

function checkBytes(bytes: number, limit: number): number {
  if (bytes > limit) {
    throw new ApiError('PAYLOAD_TOO_LARGE', {
      bytes,
      limite: limit,
      bytes_injetados_pelo_servidor: INJECTED_BYTES,
    })
  }
  return bytes
}

// the spec, Language selection: one text is chosen at send time; the full maps still travel (above).

function firstAlphabetical(map: TextMap): string | undefined {
  let best: string | undefined
  for (const k of Object.keys(map)) if (best === undefined || k < best) best = k
  return best === undefined ? undefined : map[best]
}

/** Key `en`, else the first key in alphabetical order (UTF-16 order); undefined for an absent or empty map. */
export function pickText(map: TextMap | undefined): string | undefined {
  if (!map) return undefined
  if (Object.hasOwn(map, 'en')) return map.en
  return firstAlphabetical(map)
}

/** The direct iOS path: `en`, then `pt`, then the first key in alphabetical order. */
export function pickTextIos(map: TextMap | undefined): string | undefined {
  if (!map) return undefined
  if (Object.hasOwn(map, 'en')) return map.en
  if (Object.hasOwn(map, 'pt')) return map.pt
  return firstAlphabetical(map)
}
