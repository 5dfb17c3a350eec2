// APNs BadDeviceToken is often a sandbox/production mismatch, not a dead token, and an app's whole iOS
// base must not be invalidated over an environment problem. At the end of a send: when most of its APNs answers were
// BadDeviceToken, nothing is invalidated and the send names the suspected environment problem; otherwise the
// devices that got it are invalidated like dead tokens.
import { type Db, query } from '../db/pool'
import { setProblem } from './audience'

/** At or above this share of BadDeviceToken among a send's APNs answers, the environment is suspected. */
export const ENVIRONMENT_SUSPECT_SHARE = 0.5

export async function invalidateBadTokens(
  db: Db,
  appId: string,
  sendId: string,
  bad: readonly string[],
  accepted: number,
  now: Date,
): Promise<'none' | 'invalidated' | 'environment'> {
  if (bad.length === 0) return 'none'
  if (bad.length / (bad.length + accepted) >= ENVIRONMENT_SUSPECT_SHARE) {
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
