// The send request at the door (the spec, Notification (send): request fields, Segments, Reserved keys, refused
// fields, Send errors, Limits). Pure: no I/O, so a refused body has touched nothing (spec: "Nothing touched the
// database"). Wire names live here; everything after speaks SendInput.
//
// Order of checks, so the answer is stable when a body breaks several rules:
//   1. 400, shape (the spec, Send errors 400 row): refused fields → app_id → target → contents, headings, subtitle →
//      data → typed scalars → ttl → priority (body, then X-Pm-Priority) → collapse_id → send_after readable →
//      channel_for_external_user_ids → ios_attachments, big_picture, large_icon, android_accent_color as texts.
//   2. 422, meaning (422 row): reserved data keys → media URLs → ios_attachments https → accent colour →
//      send_after within 28 days → the final payload size, last because it needs every field.
// `null` means absent for every field (as in src/core/validation.ts); fields the spec does not name are ignored.
import { ApiError, fieldError } from '../core/errors'
import { isUuid } from '../http/router'
import { type Body, byteLength, optBool } from '../core/validation'
import { renderChecked } from '../message/payload'
import { parseSendAfter } from './send-after'
import {
  type Lane,
  type MessageFields,
  SEGMENTS,
  type Segment,
  type SendInput,
  type Target,
  type TextMap,
} from '../message/types'
import { DAY_MS } from '../core/time'
import { DEFAULT_LIMITS, type Limits } from '../core/config'

/** The settings a send is checked against (the spec's Limits table; defaults in src/core/config.ts). */
export type SendLimits = Pick<
  Limits,
  'sendTargetsMax' | 'sendSegmentsMax' | 'ttlDefaultS' | 'ttlMaxS' | 'collapseIdMaxBytes' | 'sendAfterMaxDays' | 'payloadMaxBytes'
>

/** the spec, refused fields: never accepted and ignored; the second element is the replacement the spec names. */
export const REFUSED_FIELDS: ReadonlyArray<readonly [string, string | undefined]> = [
  ['filters', undefined],
  ['excluded_segments', undefined],
  ['delayed_option', undefined],
  ['delivery_time_of_day', undefined],
  ['throttle_rate_per_minute', undefined],
  ['buttons', undefined],
  ['template_id', undefined],
  ['custom_data', 'data'],
  ['existing_android_channel_id', 'android_channel_id'],
  ['android_visibility', undefined],
  ['android_led_color', undefined],
  ['android_group', undefined],
  ['ios_category', undefined],
  ['include_aliases', undefined],
  ['include_subscription_ids', undefined],
]

const TARGET_FIELDS = ['include_player_ids', 'include_external_user_ids', 'included_segments'] as const

export interface SendHeaders {
  /** X-Pm-Priority, as received. */
  priority?: string
}

// Postgres text and jsonb refuse U+0000: refused here so it cannot fail the transaction later.
const NUL = '\u0000'

function absent(v: unknown): v is null | undefined {
  return v === undefined || v === null
}

function str(body: Body, name: string): string | undefined {
  const v = body[name]
  if (absent(v)) return undefined
  if (typeof v !== 'string') throw fieldError(name, 'deve ser um texto')
  if (v.includes(NUL)) throw fieldError(name, 'não pode conter o caractere U+0000')
  return v
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function refused(body: Body): void {
  for (const [field, use] of REFUSED_FIELDS) {
    if (!absent(body[field])) throw new ApiError('REFUSED_FIELD', use ? { campo: field, use } : { campo: field })
  }
}

/** {key: text} maps (contents, headings, subtitle, ios_attachments): every value a string, named when not. */
function stringMap(body: Body, name: string, what: string): TextMap | undefined {
  const v = body[name]
  if (absent(v)) return undefined
  if (!isObject(v)) throw fieldError(name, `deve ser um objeto {${what}: texto}`)
  for (const [k, text] of Object.entries(v)) {
    if (typeof text !== 'string') throw fieldError(`${name}.${k}`, 'deve ser um texto')
    if (text.includes(NUL) || k.includes(NUL)) throw fieldError(`${name}.${k}`, 'não pode conter o caractere U+0000')
  }
  // An empty optional map says nothing: treated as absent (contents, required, is refused by the caller).
  return Object.keys(v).length === 0 ? undefined : (v as TextMap)
}

function targetOf(body: Body, lim: SendLimits): Target {
  const given: Array<[(typeof TARGET_FIELDS)[number], unknown[]]> = []
  for (const name of TARGET_FIELDS) {
    const v = body[name]
    if (absent(v)) continue
    if (!Array.isArray(v)) throw fieldError(name, 'deve ser uma lista')
    // An empty list targets nobody: it counts as no target, so `[]` beside a real target is not "two targets".
    if (v.length > 0) given.push([name, v])
  }
  if (given.length === 0) {
    throw fieldError(TARGET_FIELDS.join('|'), 'é obrigatório: envie exatamente um alvo, com uma lista não vazia')
  }
  if (given.length > 1) {
    throw fieldError(given.map(([n]) => n).join('|'), 'apenas um alvo por envio (ids de dispositivo, ids externos ou segmentos)')
  }
  const [name, list] = given[0] as [(typeof TARGET_FIELDS)[number], unknown[]]
  // The caps count the list as sent: with 4 valid segment names a cap after de-duplication could never bite.
  const max = name === 'included_segments' ? lim.sendSegmentsMax : lim.sendTargetsMax
  if (list.length > max) throw fieldError(name, `aceita no máximo ${max} itens (recebidos ${list.length})`)
  list.forEach((x, i) => {
    if (typeof x !== 'string') throw fieldError(`${name}[${i}]`, 'deve ser um texto')
    if (x.includes(NUL)) throw fieldError(`${name}[${i}]`, 'não pode conter o caractere U+0000')
  })
  const ids = list as string[]
  if (name === 'include_player_ids') return { kind: 'players', ids } // malformed ids are dropped and listed later
  if (name === 'include_external_user_ids') return { kind: 'users', ids }
  const names: Segment[] = []
  for (const s of ids) {
    if (!(SEGMENTS as readonly string[]).includes(s)) throw new ApiError('UNKNOWN_SEGMENT', { segment: s, valid: [...SEGMENTS] })
    if (!names.includes(s as Segment)) names.push(s as Segment) // spec: repeated names deduplicated
  }
  return { kind: 'segments', names }
}

function dataOf(body: Body): Record<string, unknown> | undefined {
  const v = body.data
  if (absent(v)) return undefined
  if (!isObject(v)) throw fieldError('data', 'deve ser um objeto JSON (lista, texto ou número não são aceitos)')
  if (JSON.stringify(v).includes('\\u0000')) throw fieldError('data', 'não pode conter o caractere U+0000')
  return v
}

function ttlOf(body: Body, lim: SendLimits): number {
  const v = body.ttl
  if (absent(v)) return lim.ttlDefaultS
  if (typeof v !== 'number' || !Number.isInteger(v)) throw fieldError('ttl', 'deve ser um número inteiro de segundos')
  if (v < 0 || v > lim.ttlMaxS) throw fieldError('ttl', `deve estar entre 0 e ${lim.ttlMaxS}`)
  return v
}

/**
 * the spec, Sends: `X-Pm-Priority` counts only when the body has no `priority` (body wins, not an error); a header
 * with another value is refused even then, so a typo is never silently ignored. Neither given: lane 0, since
 * the spec lists the default as `high` and 10/transactional is the high priority.
 */
function laneOf(body: Body, header: string | undefined): Lane {
  const v = body.priority
  let fromBody: Lane | undefined
  if (v === 10 || v === 'transactional') fromBody = 0
  else if (v === 5 || v === 'marketing') fromBody = 1
  else if (!absent(v)) throw fieldError('priority', 'deve ser 10 ou "transactional", 5 ou "marketing"')
  let fromHeader: Lane | undefined
  if (header === 'transactional') fromHeader = 0
  else if (header === 'marketing') fromHeader = 1
  else if (header !== undefined && header !== '') throw fieldError('X-Pm-Priority', 'deve ser transactional ou marketing')
  return fromBody ?? fromHeader ?? 0
}

function collapseIdOf(body: Body, lim: SendLimits): string | undefined {
  const v = str(body, 'collapse_id')
  if (v !== undefined && byteLength(v) > lim.collapseIdMaxBytes) {
    throw fieldError('collapse_id', `excede ${lim.collapseIdMaxBytes} bytes (UTF-8)`)
  }
  return v === '' ? undefined : v // an empty collapse key collapses nothing
}

function sendAfterOf(body: Body): { raw: string; ms: number } | undefined {
  const raw = str(body, 'send_after')
  if (raw === undefined) return undefined
  const ms = parseSendAfter(raw)
  if (ms === null) {
    throw fieldError(
      'send_after',
      'ilegível: use ISO 8601 com fuso (2026-01-31T12:00:00-03:00) ou "2026-01-31 12:00:00 GMT-0300"',
    )
  }
  return { raw, ms }
}

// the spec, Reserved keys inside data: matched exactly as written (case-sensitive); `aps_meta` and `apsx` are free.
const RESERVED_PREFIXES = ['pm_', 'pmx_', 'gcm.', 'google.', 'aps.']
const RESERVED_EXACT = new Set(['from', 'message_type', 'aps'])

function checkReservedKeys(data: Record<string, unknown> | undefined): void {
  if (!data) return
  for (const key of Object.keys(data)) {
    if (RESERVED_EXACT.has(key) || RESERVED_PREFIXES.some((p) => key.startsWith(p))) {
      throw new ApiError('RESERVED_DATA_KEY', { chave: key })
    }
  }
}

/**
 * An absolute URL with one of the given schemes and a host; no whitespace (RFC 3986 has none). The WHATWG parser
 * forgives `http:///x` and `http:\\x` (it reads a host out of them), so the `scheme://host` start is checked first.
 */
function isAbsoluteUrl(s: string, schemes: readonly string[]): boolean {
  if (/\s/.test(s) || !/^[a-z][a-z0-9+.-]*:\/\/[^/\\?#]/i.test(s)) return false
  try {
    const u = new URL(s)
    return schemes.includes(u.protocol) && u.hostname !== ''
  } catch {
    return false
  }
}

function mediaUrl(v: string | undefined, field: 'big_picture' | 'large_icon'): string | undefined {
  if (v === undefined || v === '') return undefined // an empty string names no picture
  if (!isAbsoluteUrl(v, ['http:', 'https:'])) throw new ApiError('INVALID_MEDIA_URL', { campo: field })
  return v
}

export function parseSend(
  body: Body,
  headers: SendHeaders = {},
  nowMs: number = Date.now(),
  lim: SendLimits = DEFAULT_LIMITS,
): SendInput {
  // ---- 1. shape: 400 ----
  refused(body)
  if (!isUuid(body.app_id)) throw new ApiError('APP_ID_REQUIRED', { where: 'corpo' })
  const appId = body.app_id.toLowerCase()
  const target = targetOf(body, lim)
  const contents = stringMap(body, 'contents', 'idioma')
  if (!contents) {
    throw fieldError('contents', absent(body.contents) ? 'é obrigatório' : 'não pode ser vazio')
  }
  const headings = stringMap(body, 'headings', 'idioma')
  const subtitle = stringMap(body, 'subtitle', 'idioma')
  const data = dataOf(body)
  const isIos = optBool(body, 'isIos')
  const isAndroid = optBool(body, 'isAndroid')
  const isAnyWeb = optBool(body, 'isAnyWeb')
  const contentAvailable = optBool(body, 'content_available') ?? false
  const mutableContent = optBool(body, 'mutable_content') ?? false
  const smallIcon = str(body, 'small_icon')
  const androidChannelId = str(body, 'android_channel_id')
  const iosSound = str(body, 'ios_sound')
  const androidSound = str(body, 'android_sound')
  const name = str(body, 'name')
  const externalId = str(body, 'external_id')
  const idempotencyKey = str(body, 'idempotency_key')
  // spec: first non-empty of url, app_url, web_url wins; the others are ignored (but still must be texts).
  const urls = [str(body, 'url'), str(body, 'app_url'), str(body, 'web_url')]
  const url = urls.find((u) => u !== undefined && u !== '')
  const ttlS = ttlOf(body, lim)
  const lane = laneOf(body, headers.priority)
  const collapseId = collapseIdOf(body, lim)
  const sendAfter = sendAfterOf(body)
  const channel = str(body, 'channel_for_external_user_ids')
  if (channel !== undefined && channel !== 'push') throw fieldError('channel_for_external_user_ids', 'aceita apenas "push"')
  const iosAttachments = stringMap(body, 'ios_attachments', 'nome')
  const bigPictureRaw = str(body, 'big_picture')
  const largeIconRaw = str(body, 'large_icon')
  const accent = str(body, 'android_accent_color')
  // web_buttons: accepted and ignored (spec).

  // ---- 2. meaning: 422 ----
  checkReservedKeys(data)
  const bigPicture = mediaUrl(bigPictureRaw, 'big_picture')
  const largeIcon = mediaUrl(largeIconRaw, 'large_icon')
  for (const [k, u] of Object.entries(iosAttachments ?? {})) {
    if (!isAbsoluteUrl(u, ['https:'])) throw new ApiError('ATTACHMENT_NOT_HTTPS', { campo: `ios_attachments.${k}` })
  }
  if (accent !== undefined && !/^#[0-9A-Fa-f]{6}$/.test(accent)) throw new ApiError('INVALID_ACCENT_COLOR')
  if (sendAfter && sendAfter.ms - nowMs > lim.sendAfterMaxDays * DAY_MS) {
    throw new ApiError('SEND_AFTER_TOO_FAR', { limite_dias: lim.sendAfterMaxDays })
  }

  const fields: MessageFields = {
    appId,
    contents,
    headings,
    subtitle,
    target,
    // spec: absent includes, false excludes, true includes and restricts nothing.
    platforms: { ios: isIos !== false, android: isAndroid !== false, web: isAnyWeb !== false },
    bigPicture,
    largeIcon,
    smallIcon,
    androidChannelId,
    androidAccentColor: accent,
    iosSound,
    androidSound,
    iosAttachments,
    contentAvailable,
    // spec: turned on automatically when big_picture or ios_attachments is present.
    mutableContent: mutableContent || bigPicture !== undefined || iosAttachments !== undefined,
    name,
    externalId,
    idempotencyKey,
    data,
    url,
    // A past (or present) instant means now (spec: "a past date sends immediately").
    sendAfterMs: sendAfter && sendAfter.ms > nowMs ? sendAfter.ms : null,
    sendAfterRaw: sendAfter?.raw,
    ttlS,
    lane,
    collapseId,
  }
  // Completed in place (a spread copy of the whole request showed in profiles).
  return Object.assign(fields, { message: renderChecked(fields, lim.payloadMaxBytes) })
}
