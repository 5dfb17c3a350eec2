// Every label value of a process's metrics comes from a fixed set: a value from anywhere else (a tenant's text, a
// provider's or a webhook server's answer, a path, a bug) is written as `other`. Each family's series are then
// bounded by the product of its labels' sets, whatever arrives; without this, one hostile provider message or one
// origin per port made a new series each, kept for the life of the process and scraped every time.
//
// The sets are written here once. A few are completed where the process is wired, from its own code or settings
// (route patterns as the router registers them, the work partitions, the providers' origins, the group-commit
// writers, the scrape collectors): never from a request or an answer.

export const OTHER = 'other'

/** HTTP status codes as they are written (100-599). */
const STATUSES = Array.from({ length: 500 }, (_, i) => String(100 + i))

/** FCM HTTP v1 error codes and google.rpc status enums (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode). */
const FCM_REASONS = [
  'UNSPECIFIED_ERROR',
  'INVALID_ARGUMENT',
  'UNREGISTERED',
  'SENDER_ID_MISMATCH',
  'QUOTA_EXCEEDED',
  'UNAVAILABLE',
  'INTERNAL',
  'THIRD_PARTY_AUTH_ERROR',
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'DEADLINE_EXCEEDED',
  'CANCELLED',
  'ABORTED',
  'UNKNOWN',
]

/** APNs `reason` strings (developer.apple.com "Handling notification responses from APNs"). */
const APNS_REASONS = [
  'BadCollapseId',
  'BadDeviceToken',
  'BadExpirationDate',
  'BadMessageId',
  'BadPriority',
  'BadTopic',
  'DeviceTokenNotForTopic',
  'DuplicateHeaders',
  'IdleTimeout',
  'InvalidPushType',
  'MissingDeviceToken',
  'MissingTopic',
  'PayloadEmpty',
  'TopicDisallowed',
  'BadCertificate',
  'BadCertificateEnvironment',
  'ExpiredProviderToken',
  'Forbidden',
  'InvalidProviderToken',
  'MissingProviderToken',
  'UnrelatedKeyIdInToken',
  'BadEnvironmentKeyIdInToken',
  'BadEnvironmentKeyInToken',
  'BadPath',
  'MethodNotAllowed',
  'ExpiredToken',
  'Unregistered',
  'PayloadTooLarge',
  'TooManyProviderTokenUpdates',
  'TooManyRequests',
  'InternalServerError',
  'ServiceUnavailable',
  'Shutdown',
]

/** Our own HTTP/2 client's failure kinds (src/h2/types.ts), and `HTTP` for an answer with no reason of its own. */
const TRANSPORT_REASONS = ['timeout', 'connection', 'protocol', 'closed', 'HTTP']

const FIXED: Record<string, readonly string[]> = {
  server: ['api', 'dashboard', ''],
  method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', '*'],
  status: STATUSES,
  lane: ['0', '1'],
  platform: ['android', 'ios', 'web', 'fcm', 'apns', OTHER],
  outcome: ['successful', 'failed', 'errored', 'counted', 'duplicate', 'late'],
  kind: ['accepted', 'dead-token', 'bad-device-token', 'rejected', 'transient', 'quota', 'credential'],
  // A provider's reason by its first word (providerReason).
  reason: ['', ...FCM_REASONS, ...APNS_REASONS, ...TRANSPORT_REASONS],
  evento: ['recebido', 'clique'],
  result: ['ok', 'http', 'timeout', 'refused', 'network'],
  cause: ['rate', 'retry_after'],
  pool: ['main', 'webhooks'],
}

/** A provider's reason is labelled by its first word: "INVALID_ARGUMENT: <message>" is INVALID_ARGUMENT. */
export function providerReason(reason: string): string {
  return /^[^\s:]*/.exec(reason)?.[0] ?? ''
}

/** Labels whose values are reduced to their code before the set is asked. */
const NORMALISE: Record<string, (v: string) => string> = { reason: providerReason }

export class LabelSets {
  readonly #sets = new Map<string, Set<string>>()

  constructor() {
    for (const [label, values] of Object.entries(FIXED)) this.#sets.set(label, new Set(values))
  }

  /** Adds values to a label's set; only wiring code calls this, with values from the code or the settings. */
  allow(label: string, values: Iterable<string>): void {
    let set = this.#sets.get(label)
    if (!set) {
      set = new Set()
      this.#sets.set(label, set)
    }
    for (const v of values) set.add(v)
  }

  /** `value` when the label's set has it, else `other` (a label with no set at all takes only `other`). */
  bound(label: string, value: string): string {
    const v = NORMALISE[label]?.(value) ?? value
    return this.#sets.get(label)?.has(v) ? v : OTHER
  }

  /** The values of `labelNames` (in order), each bounded. */
  boundAll(labelNames: readonly string[], values: readonly string[]): string[] {
    return labelNames.map((n, i) => this.bound(n, values[i] ?? ''))
  }
}
