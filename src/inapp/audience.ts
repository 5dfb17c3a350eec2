// Who is in each in-app audience (the spec, In-app campaign `alvo_tipo`): the one definition, as SQL over `devices d`.
// Reach counts with it (reach.ts), and the pending route reads each device's memberships computed by the same
// expressions when it loads the device (device-profiles.ts), so what is counted and what is served never disagree.
// The table of device states and audiences is in docs/design/inapp.md (Audiences).
import type { TargetKind } from './validate'

/**
 * The base: every registered device except a record retired by a newer token of the same install (the install lives
 * on in its new record; counting both would count it twice). A token the provider declared dead stays in the base:
 * in-app needs no push token, and the app still polls.
 */
const IN_BASE = "d.invalid_reason IS DISTINCT FROM 'substituido'"

/** Each segment within the base. `notif_permissoes` (bit 1 allowed, bit 2 prompt shown) NULL = never reported: in neither. */
const SEGMENTS = {
  // "whole base"
  todos: 'true',
  // "users who denied push permission": the last report says the prompt was shown and not allowed.
  bloqueados: 'd.notif_permissoes & 3 = 2',
  // "never saw the permission prompt": the last report says neither.
  nunca_pediu: 'd.notif_permissoes & 3 = 0',
  // "unsubscribed": push cannot reach the device any more, whether the token died (its `notification_types` is the
  // last known value) or the device is marked -2.
  desinscritos: '(d.invalid_identifier OR d.notification_types = -2)',
} as const

type Segment = keyof typeof SEGMENTS
const NAMES = Object.keys(SEGMENTS) as Segment[]
const BIT = Object.fromEntries(NAMES.map((n, i) => [n, 1 << i])) as Record<Segment, number>

/** The audience predicate of an `alvo_tipo` over `devices d` ($3 = the list, for the list types only). */
export function audienceSql(kind: TargetKind): string {
  if (kind === 'external_ids') return `${IN_BASE} AND d.external_user_id = ANY($3::text[])`
  if (kind === 'player_ids') return `${IN_BASE} AND d.id = ANY($3::uuid[])`
  return `${IN_BASE} AND ${SEGMENTS[kind]}`
}

/** A select-list expression: the device's segments as a bitmask (0 = outside the base). */
export const MEMBERSHIPS_SQL = `(${NAMES.map((n) => `CASE WHEN ${audienceSql(n)} THEN ${BIT[n]} ELSE 0 END`).join(' | ')})`

/** Whether a device with these memberships (MEMBERSHIPS_SQL) is in a campaign's audience. */
export function inAudience(
  kind: TargetKind,
  targets: ReadonlySet<string> | null,
  deviceId: string,
  device: { externalUserId: string | null; memberships: number },
): boolean {
  if (kind === 'player_ids' || kind === 'external_ids') {
    if ((device.memberships & BIT.todos) === 0 || targets === null) return false
    return kind === 'player_ids' ? targets.has(deviceId) : device.externalUserId !== null && targets.has(device.externalUserId)
  }
  return (device.memberships & BIT[kind]) !== 0
}
