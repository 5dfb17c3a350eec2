// Provider answers → Outcomes: the FCM and APNs tables, Retry-After in both forms, pool failures.
import t from 'tap'
import {
  APNS_QUOTA_DEFAULT_MS,
  classifyApns,
  classifyFcm,
  FCM_INVALID_TOKEN_MESSAGE,
  FCM_QUOTA_DEFAULT_MS,
  failureOutcome,
  fcmTokenRefused,
  parseFcmError,
  retryAfterMs,
} from '../../src/providers/classify'

const NOW = Date.UTC(2026, 10, 26, 3, 0, 0)

/** FCM's error envelope (firebase.google.com/docs/cloud-messaging/error-codes). */
function fcmBody(code: number, status: string, message: string, errorCode?: string, field?: string): string {
  const details: unknown[] = []
  if (field)
    details.push({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description: message }] })
  if (errorCode) details.push({ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode })
  return JSON.stringify({ error: { code, message, status, details } })
}

t.test('Retry-After: delay-seconds, HTTP-date, absent or unreadable', async (t) => {
  t.equal(retryAfterMs('30', NOW), 30_000)
  t.equal(retryAfterMs(' 0 ', NOW), 0)
  t.equal(retryAfterMs(new Date(NOW + 90_000).toUTCString(), NOW), 90_000)
  t.equal(retryAfterMs(new Date(NOW - 5_000).toUTCString(), NOW), 0, 'a date in the past means now')
  t.equal(retryAfterMs(['7'], NOW), 7_000)
  t.equal(retryAfterMs(undefined, NOW), undefined)
  t.equal(retryAfterMs('', NOW), undefined)
  t.equal(retryAfterMs('soon', NOW), undefined)
})

t.test('FCM: every answer class', async (t) => {
  const cases: Array<[string, number, Record<string, string>, string, unknown]> = [
    ['200', 200, {}, JSON.stringify({ name: 'projects/p/messages/1' }), { kind: 'accepted' }],
    [
      '404 UNREGISTERED',
      404,
      {},
      fcmBody(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'),
      { kind: 'dead-token', reason: 'UNREGISTERED' },
    ],
    [
      '400 invalid token',
      400,
      {},
      fcmBody(400, 'INVALID_ARGUMENT', FCM_INVALID_TOKEN_MESSAGE, 'INVALID_ARGUMENT'),
      { kind: 'dead-token', reason: 'INVALID_ARGUMENT: invalid registration token' },
    ],
    [
      '400 bad field',
      400,
      {},
      fcmBody(
        400,
        'INVALID_ARGUMENT',
        "Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
        'INVALID_ARGUMENT',
        'message.data[0].value',
      ),
      { kind: 'rejected', reason: 'INVALID_ARGUMENT message.data[0].value' },
    ],
    [
      '400 too big, no details',
      400,
      {},
      fcmBody(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.'),
      { kind: 'rejected', reason: 'INVALID_ARGUMENT: Request contains an invalid argument.' },
    ],
    [
      '401 UNAUTHENTICATED',
      401,
      {},
      fcmBody(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'),
      { kind: 'credential', reason: 'UNAUTHENTICATED: Request had invalid authentication credentials.' },
    ],
    [
      '401 THIRD_PARTY_AUTH_ERROR',
      401,
      {},
      fcmBody(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'),
      { kind: 'credential', reason: 'THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service' },
    ],
    [
      '403 SENDER_ID_MISMATCH',
      403,
      {},
      fcmBody(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'),
      { kind: 'credential', reason: 'SENDER_ID_MISMATCH: SenderId mismatch' },
    ],
    [
      '403 PERMISSION_DENIED',
      403,
      {},
      fcmBody(403, 'PERMISSION_DENIED', 'denied'),
      { kind: 'credential', reason: 'PERMISSION_DENIED: denied' },
    ],
    [
      '404 without UNREGISTERED',
      404,
      {},
      fcmBody(404, 'NOT_FOUND', 'The requested URL was not found.'),
      { kind: 'credential', reason: 'NOT_FOUND: The requested URL was not found.' },
    ],
    [
      '429 Retry-After 12',
      429,
      { 'retry-after': '12' },
      fcmBody(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', 'QUOTA_EXCEEDED'),
      { kind: 'quota', retryAfterMs: 12_000 },
    ],
    [
      '429 no Retry-After',
      429,
      {},
      fcmBody(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', 'QUOTA_EXCEEDED'),
      { kind: 'quota', retryAfterMs: FCM_QUOTA_DEFAULT_MS },
    ],
    [
      '503 UNAVAILABLE',
      503,
      {},
      fcmBody(503, 'UNAVAILABLE', 'unavailable', 'UNAVAILABLE'),
      { kind: 'transient', reason: 'UNAVAILABLE' },
    ],
    [
      '503 Retry-After',
      503,
      { 'retry-after': '4' },
      fcmBody(503, 'UNAVAILABLE', 'unavailable', 'UNAVAILABLE'),
      { kind: 'transient', reason: 'UNAVAILABLE', retryAfterMs: 4_000 },
    ],
    ['500 INTERNAL', 500, {}, fcmBody(500, 'INTERNAL', 'Internal error', 'INTERNAL'), { kind: 'transient', reason: 'INTERNAL' }],
    ['502 HTML', 502, {}, '<html>bad gateway</html>', { kind: 'transient', reason: 'HTTP 502' }],
    ['413 no body', 413, {}, '', { kind: 'rejected', reason: 'HTTP 413' }],
  ]
  for (const [name, status, headers, body, want] of cases) t.strictSame(classifyFcm(status, headers, body, NOW), want, name)
})

t.test('FCM: which 401 earns a fresh access token', async (t) => {
  t.ok(fcmTokenRefused(401, parseFcmError(fcmBody(401, 'UNAUTHENTICATED', 'x'))))
  t.notOk(
    fcmTokenRefused(401, parseFcmError(fcmBody(401, 'UNAUTHENTICATED', 'x', 'THIRD_PARTY_AUTH_ERROR'))),
    'the APNs/web credential behind FCM',
  )
  t.notOk(fcmTokenRefused(403, parseFcmError(fcmBody(403, 'PERMISSION_DENIED', 'x'))))
  t.strictSame(parseFcmError('not json'), { status: '', errorCode: undefined, message: '', field: undefined })
})

t.test('APNs: every answer class', async (t) => {
  const r = (reason: string) => JSON.stringify({ reason })
  const cases: Array<[number, string, Record<string, string>, unknown]> = [
    [200, '', {}, { kind: 'accepted' }],
    [410, JSON.stringify({ reason: 'Unregistered', timestamp: NOW }), {}, { kind: 'dead-token', reason: 'Unregistered' }],
    [410, r('ExpiredToken'), {}, { kind: 'dead-token', reason: 'ExpiredToken' }],
    [400, r('BadDeviceToken'), {}, { kind: 'bad-device-token', reason: 'BadDeviceToken' }],
    [400, r('DeviceTokenNotForTopic'), {}, { kind: 'credential', reason: 'DeviceTokenNotForTopic' }],
    [400, r('TopicDisallowed'), {}, { kind: 'credential', reason: 'TopicDisallowed' }],
    [400, r('BadTopic'), {}, { kind: 'credential', reason: 'BadTopic' }],
    [400, r('MissingTopic'), {}, { kind: 'credential', reason: 'MissingTopic' }],
    [400, r('BadCollapseId'), {}, { kind: 'rejected', reason: 'BadCollapseId' }],
    [400, r('PayloadEmpty'), {}, { kind: 'rejected', reason: 'PayloadEmpty' }],
    [413, r('PayloadTooLarge'), {}, { kind: 'rejected', reason: 'PayloadTooLarge' }],
    [403, r('InvalidProviderToken'), {}, { kind: 'credential', reason: 'InvalidProviderToken' }],
    [403, r('ExpiredProviderToken'), {}, { kind: 'credential', reason: 'ExpiredProviderToken' }],
    [403, r('BadEnvironmentKeyIdInToken'), {}, { kind: 'credential', reason: 'BadEnvironmentKeyIdInToken' }],
    [403, r('BadEnvironmentKeyInToken'), {}, { kind: 'credential', reason: 'BadEnvironmentKeyInToken' }],
    [403, r('BadCertificateEnvironment'), {}, { kind: 'credential', reason: 'BadCertificateEnvironment' }],
    [429, r('TooManyRequests'), {}, { kind: 'quota', retryAfterMs: APNS_QUOTA_DEFAULT_MS }],
    [429, r('TooManyProviderTokenUpdates'), { 'retry-after': '3' }, { kind: 'quota', retryAfterMs: 3_000 }],
    [500, r('InternalServerError'), {}, { kind: 'transient', reason: 'InternalServerError' }],
    [503, r('ServiceUnavailable'), {}, { kind: 'transient', reason: 'ServiceUnavailable' }],
    [503, r('Shutdown'), {}, { kind: 'transient', reason: 'Shutdown' }],
    [502, 'gateway', {}, { kind: 'transient', reason: 'HTTP 502' }],
  ]
  for (const [status, body, headers, want] of cases)
    t.strictSame(classifyApns(status, headers, body, NOW), want, `${status} ${body}`)
})

t.test('pool failures are transient', async (t) => {
  t.strictSame(failureOutcome({ status: 0, failure: 'timeout', detail: 'no answer in time' }), {
    kind: 'transient',
    reason: 'timeout: no answer in time',
  })
  t.strictSame(failureOutcome({ status: 0, failure: 'connection', detail: 'rst 2' }), {
    kind: 'transient',
    reason: 'connection: rst 2',
  })
})
