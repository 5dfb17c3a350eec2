// Provider answers → Outcome: pure tables, unit-tested (test/unit/providers-classify.test.ts). Only 429, 5xx and connection failures are
// retryable; text is matched only where the protocol defines it (APNs `reason` strings, FCM `errorCode` and status
// enums, and the one invalid-token message FCM documents, below).
import type { IncomingHttpHeaders } from 'node:http2'
import type { H2Failure } from '../h2/pool'
import type { Outcome } from './types'

/** FCM sends Retry-After with 429 but not always; 60 s is what Google's guidance suggests as a floor. */
export const FCM_QUOTA_DEFAULT_MS = 60_000
/** APNs answers 429 TooManyRequests without Retry-After; we back off the app this long. */
export const APNS_QUOTA_DEFAULT_MS = 30_000

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim()
  if (!v) return undefined
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}

/** A pool failure (timeout, reset, GOAWAY, connect error) is transient: retried with backoff by the actor. */
export function failureOutcome(f: H2Failure): Outcome {
  return { kind: 'transient', reason: `${f.failure}: ${f.detail}` }
}

// ---- FCM HTTP v1 (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode, /docs/cloud-messaging/error-codes)

export interface FcmError {
  /** google.rpc status enum: INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED … */
  status: string
  /** google.firebase.fcm.v1.FcmError errorCode: UNREGISTERED, SENDER_ID_MISMATCH, QUOTA_EXCEEDED … */
  errorCode: string | undefined
  message: string
  /** The first google.rpc.BadRequest field violation: the request itself was malformed (not the token). */
  field: string | undefined
}

const FCM_ERROR = 'type.googleapis.com/google.firebase.fcm.v1.FcmError'
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest'
/** The message FCM documents for an invalid token ("error-codes", example 2: FcmError detail, no BadRequest). */
export const FCM_INVALID_TOKEN_MESSAGE = 'The registration token is not a valid FCM registration token'

export function parseFcmError(body: Buffer | string): FcmError {
  let e: Record<string, unknown> = {}
  try {
    const j = JSON.parse(body.toString())
    if (j && typeof j.error === 'object' && j.error) e = j.error
  } catch {}
  const details = Array.isArray(e.details) ? (e.details as Array<Record<string, unknown>>) : []
  const fcm = details.find((d) => d?.['@type'] === FCM_ERROR)
  const bad = details.find((d) => d?.['@type'] === BAD_REQUEST)
  const violations = Array.isArray(bad?.fieldViolations) ? (bad.fieldViolations as Array<Record<string, unknown>>) : []
  return {
    status: typeof e.status === 'string' ? e.status : '',
    errorCode: typeof fcm?.errorCode === 'string' ? fcm.errorCode : undefined,
    message: typeof e.message === 'string' ? e.message : '',
    field: bad ? String(violations[0]?.field ?? '') : undefined,
  }
}

/** FCM 401 worth one fresh access token: our OAuth token was refused (not the APNs/web-push credential behind it). */
export function fcmTokenRefused(status: number, e: FcmError): boolean {
  return status === 401 && e.errorCode !== 'THIRD_PARTY_AUTH_ERROR'
}

export function classifyFcm(status: number, headers: IncomingHttpHeaders, body: Buffer | string, nowMs: number): Outcome {
  if (status >= 200 && status < 300) return { kind: 'accepted' }
  const e = parseFcmError(body)
  const code = e.errorCode ?? (e.status || `HTTP ${status}`)
  if (e.errorCode === 'UNREGISTERED') return { kind: 'dead-token', reason: 'UNREGISTERED' }
  // Firebase "manage tokens": UNREGISTERED (404) and INVALID_ARGUMENT (400) for an invalid token both mean the token
  // must go, "but make sure INVALID_ARGUMENT is because the token is invalid and not because of the payload": the
  // invalid-token answer carries only the FcmError detail (a payload error carries a BadRequest field violation).
  if (status === 400 && e.field === undefined && e.message.startsWith(FCM_INVALID_TOKEN_MESSAGE)) {
    return { kind: 'dead-token', reason: 'INVALID_ARGUMENT: invalid registration token' }
  }
  if (status === 429) return { kind: 'quota', retryAfterMs: retryAfterMs(headers['retry-after'], nowMs) ?? FCM_QUOTA_DEFAULT_MS }
  if (status >= 500) return transient(code, headers, nowMs)
  // 401/403: the service account, its project or the sender (SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR): surfaced to
  // the caller, never a dead token. 404 without UNREGISTERED: the project (or the base URL) does not exist.
  if (status === 401 || status === 403 || status === 404) return { kind: 'credential', reason: withMessage(code, e.message) }
  if (status >= 400) return { kind: 'rejected', reason: e.field ? `${code} ${e.field}` : withMessage(code, e.message) }
  return transient(code, headers, nowMs)
}

function withMessage(code: string, message: string): string {
  return message ? `${code}: ${message.slice(0, 200)}` : code
}

function transient(reason: string, headers: IncomingHttpHeaders, nowMs: number): Outcome {
  const after = retryAfterMs(headers['retry-after'], nowMs)
  return after === undefined ? { kind: 'transient', reason } : { kind: 'transient', reason, retryAfterMs: after }
}

// ---- APNs (developer.apple.com "Handling notification responses from APNs": status codes and `reason` strings)

/** 400 reasons that say the credential's topic (Bundle ID) is wrong for the app, not the device or the message. */
const APNS_TOPIC_REASONS = new Set(['DeviceTokenNotForTopic', 'TopicDisallowed', 'BadTopic', 'MissingTopic'])

export function apnsReason(body: Buffer | string): string {
  try {
    const j = JSON.parse(body.toString())
    if (j && typeof j.reason === 'string') return j.reason
  } catch {}
  return ''
}

export function classifyApns(status: number, headers: IncomingHttpHeaders, body: Buffer | string, nowMs: number): Outcome {
  if (status === 200) return { kind: 'accepted' }
  const reason = apnsReason(body) || `HTTP ${status}`
  // 410: "The device token is no longer active for the topic" (Unregistered, ExpiredToken).
  if (status === 410) return { kind: 'dead-token', reason }
  if (status === 400 && reason === 'BadDeviceToken') return { kind: 'bad-device-token', reason }
  if (status === 400 && APNS_TOPIC_REASONS.has(reason)) return { kind: 'credential', reason }
  // 403: the provider token or its key (InvalidProviderToken, ExpiredProviderToken after one refresh,
  // BadEnvironmentKeyIdInToken / BadEnvironmentKeyInToken, BadCertificateEnvironment, Forbidden …).
  if (status === 403) return { kind: 'credential', reason }
  // 429: TooManyRequests (one device token too often) or TooManyProviderTokenUpdates; Apple sends no Retry-After.
  if (status === 429) return { kind: 'quota', retryAfterMs: retryAfterMs(headers['retry-after'], nowMs) ?? APNS_QUOTA_DEFAULT_MS }
  if (status >= 500) return transient(reason, headers, nowMs)
  if (status >= 400) return { kind: 'rejected', reason }
  return transient(reason, headers, nowMs)
}
