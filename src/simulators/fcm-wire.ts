// FCM HTTP v1 wire shapes for the simulator: Google's error envelope and the minimal checks of a Message that the real
// API applies before delivery (one target; map<string,string> fields; Duration and enum syntax; payload size).
// Sources: firebase.google.com/docs/cloud-messaging/error-codes (envelope, 'message.data[0].value' violation),
// firebase.google.com/docs/reference/fcm/rest/v1/projects.messages (Message, AndroidConfig, WebpushConfig).

const FCM_ERROR_TYPE = 'type.googleapis.com/google.firebase.fcm.v1.FcmError'
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest'
/** FCM: "4096 bytes for most messages", keys and values of the data payload included. */
const MAX_DATA_BYTES = 4096

export function fcmError(code: number, status: string, message: string, errorCode?: string, field?: string) {
  const details: unknown[] = []
  if (field) details.push({ '@type': BAD_REQUEST_TYPE, fieldViolations: [{ field, description: message }] })
  if (errorCode) details.push({ '@type': FCM_ERROR_TYPE, errorCode })
  return { error: { code, message, status, ...(details.length ? { details } : {}) } }
}

/** The token endpoint's OAuth2 error (RFC 6749 §5.2), as oauth2.googleapis.com renders it. */
export function tokenError(error: string, description: string) {
  return { error, error_description: description }
}

const invalid = (message: string, field: string) => ({
  error: fcmError(400, 'INVALID_ARGUMENT', message, 'INVALID_ARGUMENT', field),
})
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const DURATION = /^\d+(\.\d{1,9})?s$/
const ANDROID_PRIORITY = new Set(['NORMAL', 'HIGH'])
const COLOR = /^#[0-9a-fA-F]{6}$/

export type Checked = { target: string; validateOnly: boolean } | { error: ReturnType<typeof fcmError> }

/** Checks a messages:send body the way FCM refuses it (400 INVALID_ARGUMENT naming the field). */
export function checkMessage(body: unknown): Checked {
  if (!isObject(body) || !isObject(body.message)) return invalid('Recipient of the message is not set.', 'message')
  const m = body.message
  const targets = (['token', 'topic', 'condition'] as const).filter((k) => m[k] !== undefined)
  if (targets.length === 0) return invalid('Recipient of the message is not set.', 'message')
  if (targets.length > 1) {
    return invalid(
      `Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '${targets[1]}'`,
      'message',
    )
  }
  const kind = targets[0] as 'token' | 'topic' | 'condition'
  if (typeof m[kind] !== 'string' || m[kind] === '')
    return invalid(`Invalid value at 'message.${kind}' (TYPE_STRING)`, `message.${kind}`)
  let dataBytes = 0
  for (const [path, map] of [
    ['message.data', m.data],
    ['message.android.data', isObject(m.android) ? m.android.data : undefined],
    ['message.webpush.data', isObject(m.webpush) ? m.webpush.data : undefined],
    ['message.webpush.headers', isObject(m.webpush) ? m.webpush.headers : undefined],
  ] as const) {
    if (map === undefined) continue
    if (!isObject(map))
      return invalid(`Invalid value at '${path}' (type.googleapis.com/google.protobuf.Map), ${JSON.stringify(map)}`, path)
    let i = 0
    for (const [k, v] of Object.entries(map)) {
      if (typeof v !== 'string')
        return invalid(`Invalid value at '${path}[${i}].value' (TYPE_STRING), ${JSON.stringify(v)}`, `${path}[${i}].value`)
      if (path === 'message.data') dataBytes += Buffer.byteLength(k) + Buffer.byteLength(v)
      i++
    }
  }
  if (dataBytes > MAX_DATA_BYTES) return { error: fcmError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.') }
  if (isObject(m.android)) {
    const a = m.android
    if (a.ttl !== undefined && (typeof a.ttl !== 'string' || !DURATION.test(a.ttl))) {
      return invalid(
        `Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), ${JSON.stringify(a.ttl)}`,
        'message.android.ttl',
      )
    }
    if (a.priority !== undefined && !ANDROID_PRIORITY.has(a.priority as string)) {
      return invalid(
        `Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), ${JSON.stringify(a.priority)}`,
        'message.android.priority',
      )
    }
    const color = isObject(a.notification) ? a.notification.color : undefined
    if (color !== undefined && (typeof color !== 'string' || !COLOR.test(color))) {
      return invalid(
        `Invalid value at 'message.android.notification.color', expected #rrggbb: ${JSON.stringify(color)}`,
        'message.android.notification.color',
      )
    }
  }
  for (const k of ['title', 'body', 'image'] as const) {
    const v = isObject(m.notification) ? m.notification[k] : undefined
    if (v !== undefined && typeof v !== 'string')
      return invalid(
        `Invalid value at 'message.notification.${k}' (TYPE_STRING), ${JSON.stringify(v)}`,
        `message.notification.${k}`,
      )
  }
  const target = kind === 'token' ? (m.token as string) : `${kind}:${m[kind] as string}`
  return { target, validateOnly: body.validate_only === true }
}
