// Deleting a device "with its delivery history" (the spec: only the dashboard does it; the device re-registers on
// next use). One transaction: its deliveries, receipts (live and archived), in-app trail, then the device itself.
// No table but `devices` is indexed by device alone (that would tax every hot write), so each history table is
// probed through its primary key from the app's sends or campaigns: the cost grows with the app's sends, not with
// the size of the tables.
//
// Its audit record (`dispositivo.excluido`) names who and the device's type, not the device: a deletion is often an
// end user's request to be forgotten, which a record keeping their device's id would defeat.
import { type Actor, BY_CODE, record } from '../audit/record'
import { type Db, query, tx } from '../db/pool'

export async function deleteDevice(db: Db, appId: string, deviceId: string, by: Actor = BY_CODE): Promise<boolean> {
  return tx(db, async (c) => {
    const dev = await query<{ device_type: number }>(
      c,
      'SELECT device_type FROM devices WHERE app_id = $1 AND id = $2 FOR UPDATE',
      [appId, deviceId],
    )
    const found = dev.rows[0]
    if (!found) return false
    await record(c, { by, action: 'dispositivo.excluido', appId, details: { device_type: found.device_type } }, new Date())
    await query(
      c,
      'DELETE FROM deliveries d USING sends s WHERE s.app_id = $1 AND d.app_id = $1 AND d.send_id = s.id AND d.device_id = $2',
      [appId, deviceId],
    )
    // Receipts are partitioned by the send's UTC day: naming it lets each probe use the primary key.
    await query(
      c,
      `DELETE FROM receipts r USING sends s
        WHERE s.app_id = $1 AND r.app_id = $1 AND r.day = (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date
          AND r.send_id = s.id AND r.device_id = $2`,
      [appId, deviceId],
    )
    await query(
      c,
      'DELETE FROM receipt_archive r USING sends s WHERE s.app_id = $1 AND r.app_id = $1 AND r.send_id = s.id AND r.device_id = $2',
      [appId, deviceId],
    )
    for (const t of ['inapp_served', 'inapp_events', 'inapp_reactivations']) {
      await query(
        c,
        `DELETE FROM ${t} x USING inapp_campaigns k WHERE k.app_id = $1 AND x.app_id = $1 AND x.campanha_id = k.id AND x.device_id = $2`,
        [appId, deviceId],
      )
    }
    await query(c, 'DELETE FROM devices WHERE app_id = $1 AND id = $2', [appId, deviceId])
    return true
  })
}
