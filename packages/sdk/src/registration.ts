// Registration (`POST /api/v1/players`): an upsert keyed by the push token. The SDK sends every field it can know,
// because on this route an omitted identity field (external_user_id, app_version, device_model, tags, language,
// timezone) ERASES the stored value. `instalacao_id` is a random id kept in storage for the life of the install:
// registering a new token with it retires the install's previous tokens on the service, so a token change never
// leaves a dead twin in the audience. A registration is repeated only when something in it changed (the token
// first of all) or the last one is older than `refreshMs`: a service worker that starts for every push must not
// register for every push.
import {
  detectLanguage,
  detectNetType,
  detectOs,
  detectPermission,
  detectTimezoneId,
  utcOffsetSeconds,
  uuid,
} from './device-info.js'
import type { Store } from './storage.js'
import { call, type Outcome, type Transport } from './transport.js'
import { SDK_VERSION } from './version.js'

export type DeviceType = 0 | 1 | 5 | 7 | 8

/** Profile fields the app may know better than the SDK (all best effort on the service). */
export interface DeviceProfile {
  device_os?: string
  fabricante?: string
  pais?: string
  net_type?: string
  carrier?: string
  standby_bucket?: string
  rooted?: boolean
  bateria_irrestrita?: boolean
}

/** What a registration says of the device and its person (the identity half of `PomboOptions`). */
export interface IdentityOptions {
  /** The app's `app_id` (UUID). */
  appId: string
  /** The host app's version, sent as `app_version`. */
  appVersion: string
  /** 0 iOS, 1 Android, 5 Chrome/web, 7 Safari, 8 Firefox. */
  deviceType: DeviceType
  /** How the service reaches this token: default `apns` for iOS, `fcm` otherwise. */
  transporte?: 'fcm' | 'apns'
  /** The app's own user id for this person (`external_user_id`); sent on every registration. */
  externalUserId?: string | null
  tags?: Record<string, unknown>
  /** Language short code; default from the runtime. */
  language?: string
  deviceModel?: string
  /** Best-effort profile fields the app knows (manufacturer, country, carrier...). */
  profile?: DeviceProfile
  /** The permission bitmask (bit 1 allowed, bit 2 prompt shown); default: read from the Notification API if any. */
  notificationPermission?: () => number | undefined | Promise<number | undefined>
}

export interface Stored {
  token: string
  playerId: string
  /** The registration body without its counters: a change means registering again. */
  fingerprint: string
  at: number
  /** The install's previous devices (newest first, a few), whose in-flight pushes may still arrive. */
  previous?: string[]
}

export const INSTALL_KEY = 'install'
export const REGISTRATION_KEY = 'registration'
export const SESSIONS_KEY = 'sessions'

export async function installId(store: Store): Promise<string> {
  const have = await store.get<string>(INSTALL_KEY)
  if (typeof have === 'string' && have) return have
  const id = uuid()
  await store.set(INSTALL_KEY, id)
  return id
}

/** The registration body for `token` (without `sessoes`, which the caller adds). */
export async function registrationBody(o: IdentityOptions, token: string, install: string): Promise<Record<string, unknown>> {
  let perm: number | undefined
  try {
    perm = o.notificationPermission ? await o.notificationPermission() : detectPermission()
  } catch {
    perm = undefined
  }
  const body: Record<string, unknown> = {
    app_id: o.appId,
    device_type: o.deviceType,
    identifier: token,
    // An iOS token from APNs goes through APNs unless the app says it is an FCM token.
    transporte: o.transporte ?? (o.deviceType === 0 ? 'apns' : 'fcm'),
    app_version: o.appVersion,
    language: o.language ?? detectLanguage(),
    timezone: utcOffsetSeconds(),
    timezone_id: detectTimezoneId(),
    device_os: detectOs(),
    net_type: detectNetType(),
    ...o.profile,
    sdk_versao: SDK_VERSION,
    instalacao_id: install,
    notif_permissoes: Number.isInteger(perm) && (perm as number) >= 0 ? perm : undefined,
  }
  if (o.externalUserId !== undefined && o.externalUserId !== null) body.external_user_id = o.externalUserId
  if (o.tags !== undefined) body.tags = o.tags
  if (o.deviceModel !== undefined) body.device_model = o.deviceModel
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k]
  return body
}

export function fingerprint(body: Record<string, unknown>): string {
  return JSON.stringify(
    Object.keys(body)
      .sort()
      .map((k) => [k, body[k]]),
  )
}

export type RegisterOutcome = { kind: 'registered'; playerId: string } | Exclude<Outcome, { kind: 'ok' }>

export async function register(t: Transport, body: Record<string, unknown>): Promise<RegisterOutcome> {
  const out = await call(t, '/api/v1/players', { method: 'POST', body })
  if (out.kind !== 'ok') return out
  const id = (out.body as { id?: unknown } | undefined)?.id
  if (typeof id !== 'string' || !id)
    return { kind: 'retry', status: out.status, retryAfterMs: undefined, reason: 'resposta sem id' }
  return { kind: 'registered', playerId: id }
}
