// Request bodies of the public device routes (the spec, Device (player), Devices). Everything is checked here, with no
// I/O: a body that fails writes nothing. Limits are bytes of UTF-8, not characters.
import { DEFAULT_LIMITS, type Limits } from '../core/config'
import { fieldError } from '../core/errors'
import { isUuid } from '../http/router'
import { type Body, byteLength, has } from '../core/validation'

/** the spec, Device: device_type values (0 iOS, 1 Android, 5 Chrome/web, 7 Safari, 8 Firefox). */
export const DEVICE_TYPES: ReadonlyMap<number, string> = new Map([
  [0, 'iOS'],
  [1, 'Android'],
  [5, 'Chrome/web'],
  [7, 'Safari'],
  [8, 'Firefox'],
])
/** The settings a device body is checked against (the spec's Limits table; defaults in src/core/config.ts). */
export type DeviceLimits = Pick<
  Limits,
  'identifierMaxBytes' | 'externalUserIdMaxBytes' | 'tagsMaxBytes' | 'languageMaxBytes' | 'timezoneMaxS' | 'profileTruncateBytes'
>
const INT4_MAX = 2_147_483_647

export type Transport = 'fcm' | 'apns'

/**
 * One registration, keyed exactly as the devices columns (the writer sends rows as JSON to json_to_recordset).
 * `null` means "absent": identity fields are then erased, `transporte` and profile fields preserved.
 */
export interface RegistrationRow {
  app_id: string
  identifier: string
  device_type: number
  transporte: Transport | null
  external_user_id: string | null
  app_version: string | null
  device_model: string | null
  tags: Record<string, unknown> | null
  language: string | null
  timezone: number | null
  device_os: string | null
  fabricante: string | null
  sdk_versao: string | null
  timezone_id: string | null
  pais: string | null
  net_type: string | null
  carrier: string | null
  standby_bucket: string | null
  instalacao_id: string | null
  rooted: boolean | null
  bateria_irrestrita: boolean | null
  sessoes: number | null
  notif_permissoes: number | null
}

/** the spec, Devices PUT: `undefined` = keep the stored value; `external_user_id: null` = logout. */
export interface DeviceUpdate {
  app_id: string
  external_user_id: string | null | undefined
  tags: Record<string, unknown> | undefined
  app_version: string | undefined
  transporte: Transport | undefined
}

// Postgres text and jsonb refuse U+0000; refusing it here keeps one bad body from failing a whole batch.
const NUL = '\u0000'

export function appIdOf(body: Body): string {
  const v = body.app_id
  if (!isUuid(v)) throw fieldError('app_id', 'é obrigatório e deve ser um UUID')
  return v.toLowerCase()
}

/** A stored text field: absent/null → null; anything but a string is refused. */
function text(body: Body, name: string, maxBytes?: number): string | null {
  const v = body[name]
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw fieldError(name, 'deve ser um texto')
  if (v.includes(NUL)) throw fieldError(name, 'não pode conter o caractere U+0000')
  if (maxBytes !== undefined && byteLength(v) > maxBytes) throw fieldError(name, `excede ${maxBytes} bytes`)
  return v
}

function deviceType(body: Body): number {
  const v = body.device_type
  if (v === undefined || v === null) throw fieldError('device_type', 'é obrigatório')
  if (typeof v !== 'number' || !DEVICE_TYPES.has(v)) {
    throw fieldError(
      'device_type',
      `valor ${JSON.stringify(v)} não suportado (aceitos: 0 iOS, 1 Android, 5 Chrome/web, 7 Safari, 8 Firefox)`,
    )
  }
  return v
}

function identifier(body: Body, lim: DeviceLimits): string {
  const v = body.identifier
  if (typeof v !== 'string' || v === '') throw fieldError('identifier', 'é obrigatório e não pode ser vazio')
  if (v.includes(NUL)) throw fieldError('identifier', 'não pode conter o caractere U+0000')
  if (byteLength(v) > lim.identifierMaxBytes) throw fieldError('identifier', `excede ${lim.identifierMaxBytes} bytes`)
  return v
}

/** An empty external_user_id binds nobody: it is read as "no user" (logout), never as a shared "" user. */
function externalUserId(body: Body, lim: DeviceLimits): string | null {
  const v = text(body, 'external_user_id', lim.externalUserIdMaxBytes)
  return v === '' ? null : v
}

/** spec: legacy alias `game_version`; when both are sent, `app_version` wins. */
function appVersion(body: Body): string | null {
  return text(body, 'app_version') ?? text(body, 'game_version')
}

function tags(body: Body, lim: DeviceLimits): Record<string, unknown> | null {
  const v = body.tags
  if (v === undefined || v === null) return null
  if (typeof v !== 'object' || Array.isArray(v))
    throw fieldError('tags', 'deve ser um objeto JSON (lista ou texto não são aceitos)')
  const json = JSON.stringify(v)
  if (byteLength(json) > lim.tagsMaxBytes) throw fieldError('tags', `excede ${lim.tagsMaxBytes} bytes serializado`)
  if (json.includes('\\u0000')) throw fieldError('tags', 'não pode conter o caractere U+0000')
  return v as Record<string, unknown>
}

function timezone(body: Body, lim: DeviceLimits): number | null {
  const v = body.timezone
  if (v === undefined || v === null) return null
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw fieldError('timezone', 'deve ser um inteiro em segundos (o nome do fuso vai em timezone_id)')
  }
  const max = lim.timezoneMaxS
  if (v < -max || v > max) throw fieldError('timezone', `deve estar entre -${max} e ${max}`)
  return v
}

function parseTransport(body: Body): Transport | null {
  const v = body.transporte
  if (v === undefined || v === null) return null
  if (v !== 'fcm' && v !== 'apns') throw fieldError('transporte', 'deve ser "fcm" ou "apns"')
  return v
}

/** Cuts a string at `maxBytes` of UTF-8 without splitting a character. */
export function truncateUtf8(s: string, maxBytes: number): string {
  const buf = Buffer.from(s, 'utf8')
  if (buf.length <= maxBytes) return s
  let end = maxBytes
  // Step back over continuation bytes (10xxxxxx) to the start of the character that would be cut.
  while (end > 0 && ((buf[end] as number) & 0xc0) === 0x80) end--
  return buf.subarray(0, end).toString('utf8')
}

// Best-effort profile readers: a strange value is treated as absent, never refused (the spec, Device).
function softText(body: Body, name: string, truncateBytes?: number): string | null {
  const v = body[name]
  // A text that cannot be stored exactly is absent, never changed (the route's body guard drops it the same way).
  if (typeof v !== 'string' || v.includes(NUL) || !v.isWellFormed()) return null
  return truncateBytes === undefined ? v : truncateUtf8(v, truncateBytes)
}

function softBool(body: Body, name: string): boolean | null {
  const v = body[name]
  return typeof v === 'boolean' ? v : null
}

/** Negative, fractional, oversized or non-numeric values are absent. */
function softCount(body: Body, name: string): number | null {
  const v = body[name]
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= INT4_MAX ? v : null
}

/** The best-effort profile fields a later registration keeps from an earlier one when it omits them
 *  (`sessoes` apart: the highest value seen is kept). */
export const PROFILE_KEYS = [
  'device_os',
  'fabricante',
  'sdk_versao',
  'timezone_id',
  'pais',
  'net_type',
  'carrier',
  'standby_bucket',
  'instalacao_id',
  'rooted',
  'bateria_irrestrita',
  'notif_permissoes',
] as const

/** Best-effort fields: a value that cannot be stored exactly is dropped at the door (absent), never refused. */
export const PROFILE_FIELDS: ReadonlySet<string> = new Set([...PROFILE_KEYS, 'sessoes'])

/** POST /api/v1/players. */
export function parseRegistration(body: Body, lim: DeviceLimits = DEFAULT_LIMITS): RegistrationRow {
  return {
    app_id: appIdOf(body),
    device_type: deviceType(body),
    identifier: identifier(body, lim),
    external_user_id: externalUserId(body, lim),
    app_version: appVersion(body),
    device_model: text(body, 'device_model'),
    tags: tags(body, lim),
    language: text(body, 'language', lim.languageMaxBytes),
    timezone: timezone(body, lim),
    transporte: parseTransport(body),
    device_os: softText(body, 'device_os', lim.profileTruncateBytes),
    fabricante: softText(body, 'fabricante', lim.profileTruncateBytes),
    pais: softText(body, 'pais', lim.profileTruncateBytes),
    sdk_versao: softText(body, 'sdk_versao'),
    timezone_id: softText(body, 'timezone_id'),
    net_type: softText(body, 'net_type'),
    carrier: softText(body, 'carrier'),
    standby_bucket: softText(body, 'standby_bucket'),
    instalacao_id: softText(body, 'instalacao_id') || null,
    rooted: softBool(body, 'rooted'),
    bateria_irrestrita: softBool(body, 'bateria_irrestrita'),
    sessoes: softCount(body, 'sessoes'),
    notif_permissoes: softCount(body, 'notif_permissoes'),
  }
}

/** PUT /api/v1/players/{id}: omitted fields keep their stored value; external_user_id is tri-state. */
export function parseUpdate(body: Body, lim: DeviceLimits = DEFAULT_LIMITS): DeviceUpdate {
  const hasVersion = has(body, 'app_version') && body.app_version !== null
  const hasAlias = has(body, 'game_version') && body.game_version !== null
  return {
    app_id: appIdOf(body),
    // absent = keep the binding; string = login; explicit null (or "") = logout.
    external_user_id: Object.hasOwn(body, 'external_user_id') ? externalUserId(body, lim) : undefined,
    tags: tags(body, lim) ?? undefined,
    app_version: hasVersion || hasAlias ? (appVersion(body) ?? undefined) : undefined,
    transporte: parseTransport(body) ?? undefined,
  }
}
