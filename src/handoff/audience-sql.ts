// Which devices a send reaches, as SQL shared by the door (sends/: the audience is resolved and counted when a send
// is accepted) and the delivery engine (delivery/: segments are expanded, pages re-checked as devices die). One
// definition, so a device counted at the door is the device the worker delivers to.

/** A device's platform as the bit of a send's `platforms` mask (ios 1, android 2, web 4). */
export const TYPE_BIT_SQL = `(CASE d.device_type WHEN 0 THEN 1 WHEN 1 THEN 2 ELSE 4 END)`

/** the spec, Notification: reachable = valid token, subscribed, not a sandbox device. */
export const REACHABLE_SQL = 'NOT d.invalid_identifier AND NOT d.sandbox AND d.notification_types = 1'

/** the spec, Segments: which devices each segment holds (all reachable ones, then narrowed by activity). */
export function segmentWhere(names: readonly string[], nowParam: string): string {
  const parts = names.map((n) => {
    if (n === 'Active Users') return `d.last_active >= ${nowParam} - interval '7 days'`
    if (n === 'Engaged Users') return `d.last_receipt_at >= ${nowParam} - interval '7 days'`
    return 'true' // Subscribed Users, Total Subscriptions: every reachable device
  })
  // The parameter is always referenced, so the statement's parameter count does not depend on the segments named.
  return `(${nowParam} IS NOT NULL AND (${parts.join(' OR ')}))`
}
