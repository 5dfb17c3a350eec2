// Replaying an abandoned webhook event (the audit the spec promises, with a replay from the dashboard): the event
// goes back into the app's queue as a new event with the same body, after everything already queued; its
// abandonment record goes in the same transaction, so a replay cannot be doubled by a second click.
//
// An event abandoned by an earlier destination of the app (before the URL or the secret changed) is the app's as
// much as one abandoned by the active one: the active destination took that queue over, and replays it.
import { type Actor, BY_CODE, record } from '../audit/record'
import { type Db, query, tx } from '../db/pool'

/** The app's abandoned events, whichever of its destinations gave them up (the primary key leads with app_id; its
 *  foreign key holds each row to a destination of the same app). */
export const APP_ABANDONED = 'app_id = $1'

/** `by`: who replayed it (its audit record names the event's number and kind, never its body). */
export async function replayAbandoned(db: Db, appId: string, seq: string, now: Date, by: Actor = BY_CODE): Promise<boolean> {
  return tx(db, async (c) => {
    const gone = await query<{ evento: string; body: unknown }>(
      c,
      `DELETE FROM webhook_abandoned WHERE ${APP_ABANDONED} AND event_seq = $2 RETURNING evento, body`,
      [appId, seq],
    )
    const ev = gone.rows[0]
    if (!ev) return false
    // seq left out: the events_assign_seq trigger numbers it from the app's counter (commit order).
    await query(c, `INSERT INTO events (app_id, evento, body, canal, created_at) VALUES ($1, $2, $3, 'webhook', $4)`, [
      appId,
      ev.evento,
      JSON.stringify(ev.body),
      now,
    ])
    await record(c, { by, action: 'evento.reenviado', appId, details: { event_seq: seq, event: ev.evento } }, now)
    return true
  })
}
