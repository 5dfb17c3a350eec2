// APNs BadDeviceToken is often a sandbox/production mismatch, not a dead token, and an app's whole iOS
// base must not be invalidated over an environment problem. At the end of a send: when most of its APNs answers were
// BadDeviceToken, nothing is invalidated and the send names the suspected environment problem; otherwise the
// devices that got it are invalidated like dead tokens.
import { DEFAULT_DELIVERY } from '../config'
import { type Db, query } from '../db/pool'
import { setProblem } from './audience'

export async function invalidateBadTokens(
  db: Db,
  appId: string,
  sendId: string,
  bad: readonly string[],
  accepted: number,
  now: Date,
  /** At or above this share (percent) of BadDeviceToken among the send's APNs answers, the environment is suspected. */
  suspectPercent: number = DEFAULT_DELIVERY.apnsSuspectPercent,
): Promise<'none' | 'invalidated' | 'environment'> {
  if (bad.length === 0) return 'none'
  if (bad.length * 100 >= suspectPercent * (bad.length + accepted)) {
    await setProblem(db, appId, sendId, `apns_ambiente_suspeito:BadDeviceToken em ${bad.length} de ${bad.length + accepted}`)
    return 'environment'
  }
  await query(
    db,
    `UPDATE devices SET invalid_identifier = true, invalid_reason = 'BadDeviceToken', updated_at = $3
      WHERE app_id = $1 AND id = ANY($2::uuid[])`,
    [appId, bad, now],
  )
  return 'invalidated'
}
