// The SQL of receipts: one statement per batch (autocommitted, so one transaction) that checks each send is this
// app's and inside the acceptance window, inserts what is new, adds exactly that to the send's counters, touches
// the devices and writes the events of apps in webhook or grpc mode (src/confirmations/events.ts), delivery.received
// only where the app's plan shows proof of arrival. Fact and notice commit together or not at all. It also names the
// devices the app no longer has (deleted in the dashboard): their receipts count like any other (the proof binds the
// send to that device), and the answer tells the SDK to register again (src/http/unknown-device.ts).
import { planShowsArrivalsSql } from '../apps/plan'
import { eventCtes } from '../confirmations/events'
import { type Db, queryPrepared } from '../db/pool'

/** One distinct receipt of a batch (duplicates inside the batch were merged before). */
export interface ReceiptRow {
  appId: string
  sendId: string
  deviceId: string
  click: boolean
}

export const KIND_ARRIVAL = 0
export const KIND_CLICK = 1

export interface BatchResult {
  /** `app:send` of every receipt whose send exists for that app inside the window. */
  valid: Set<string>
  /** `send:device:kind` of every row inserted now (counted now). */
  fresh: Set<string>
  /** The part of `fresh` counted through the archive (the send's day was archived). */
  late: Set<string>
  /** `app:device` of every valid receipt whose device the app no longer has. */
  gone: Set<string>
}

/**
 * The batch statement (prepared: Postgres plans it once per connection, not per batch). Every receipt's send and
 * device are looked up by key, under any plan (test/integration/receipts-plans.test.ts).
 */
export const WRITE_RECEIPTS_SQL = `WITH input AS (
   SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::boolean[]) AS x(app_id, send_id, device_id, clique)
 ), valid AS (
   SELECT i.*, d.day, d.day < COALESCE((SELECT archived_before FROM receipt_archive_state), '-infinity') AS archived
     FROM input i JOIN sends s ON s.app_id = i.app_id AND s.id = i.send_id
    CROSS JOIN LATERAL (SELECT (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date AS day) d
    WHERE COALESCE(s.send_after, s.queued_at) >= $6
 ), wanted AS (
   SELECT app_id, send_id, device_id, day, archived, ${KIND_ARRIVAL}::smallint AS kind FROM valid
   UNION
   SELECT app_id, send_id, device_id, day, archived, ${KIND_CLICK}::smallint FROM valid WHERE clique
 ), live AS (
   INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
   SELECT day, send_id, device_id, kind, app_id, $5 FROM wanted WHERE NOT archived ORDER BY send_id, device_id, kind
   ON CONFLICT DO NOTHING
   RETURNING app_id, send_id, device_id, kind, false AS late
 ), late AS (
   -- The slower path: the day's detailed history was archived; the archive still holds every key.
   INSERT INTO receipt_archive (app_id, send_id, device_id, kind, day)
   SELECT app_id, send_id, device_id, kind, day FROM wanted WHERE archived ORDER BY app_id, send_id, device_id, kind
   ON CONFLICT DO NOTHING
   RETURNING app_id, send_id, device_id, kind, true AS late
 ), ins AS (
   SELECT * FROM live UNION ALL SELECT * FROM late
 ), counted AS (
   UPDATE sends s SET recebidos = s.recebidos + c.arrivals, converted = s.converted + c.clicks
     FROM (SELECT app_id, send_id, count(*) FILTER (WHERE kind = ${KIND_ARRIVAL})::int AS arrivals,
                  count(*) FILTER (WHERE kind = ${KIND_CLICK})::int AS clicks
             FROM ins GROUP BY app_id, send_id) c
    WHERE s.app_id = c.app_id AND s.id = c.send_id
   RETURNING s.id
 ), touched AS (
   UPDATE devices d SET last_active = GREATEST(d.last_active, $5),
          last_receipt_at = CASE WHEN v.recebido THEN GREATEST(d.last_receipt_at, $5) ELSE d.last_receipt_at END
     FROM (SELECT app_id, device_id, bool_or(NOT clique) AS recebido FROM valid GROUP BY app_id, device_id) v
    WHERE d.app_id = v.app_id AND d.id = v.device_id
      -- A device seen within the last minute is not rewritten (a receipt and its click seconds apart, bursts):
      -- both times serve 7-day segments and the monthly count; a minute is far below what they can tell apart.
      AND (d.last_active < $5::timestamptz - interval '1 minute'
           OR (v.recebido AND (d.last_receipt_at IS NULL OR d.last_receipt_at < $5::timestamptz - interval '1 minute')))
   RETURNING d.id
 ), gone AS (
   SELECT DISTINCT g.app_id, g.device_id FROM valid g
    WHERE NOT EXISTS (SELECT 1 FROM devices k WHERE k.app_id = g.app_id AND k.id = g.device_id)
 ), ev_in AS (
   SELECT i.app_id, i.send_id, i.device_id, i.kind,
          CASE i.kind WHEN ${KIND_ARRIVAL} THEN 'delivery.received' ELSE 'delivery.clicked' END AS evento,
          jsonb_build_object('evento', CASE i.kind WHEN ${KIND_ARRIVAL} THEN 'delivery.received' ELSE 'delivery.clicked' END,
                             'app_id', i.app_id, 'notification_id', i.send_id, 'player_id', i.device_id,
                             'quando', $7::text) AS body
     FROM ins i
     -- A delivery.received is one device's proof of arrival: none for an app whose plan withholds it (src/apps/plan.ts).
    WHERE i.kind = ${KIND_CLICK}
       OR EXISTS (SELECT 1 FROM apps a JOIN orgs o ON o.id = a.org_id WHERE a.id = i.app_id AND ${planShowsArrivalsSql('o.plan')})
 ), ${eventCtes({ source: 'ev_in', order: 's.send_id, s.device_id, s.kind', at: '$5', after: ['counted', 'touched'] })}
 SELECT DISTINCT 'v' AS t, app_id, send_id, NULL::uuid AS device_id, NULL::smallint AS kind, false AS late FROM valid
 UNION ALL
 SELECT 'n', app_id, send_id, device_id, kind, late FROM ins
 UNION ALL
 SELECT 'g', app_id, NULL::uuid, device_id, NULL::smallint, false FROM gone`

/**
 * Writes a batch. A `clique` writes the arrival row too: if it is new the click also counts as received (the
 * spec, Receipts). `last_active` moves for every accepted receipt; `last_receipt_at` (Engaged Users) only for a
 * `recebido` the device sent itself: a click never sets it, even when it counted as an arrival (the spec, Segments).
 * Both move forward only, and a device already touched within the last minute is left alone.
 */
export async function writeBatch(db: Db, rows: ReceiptRow[], now: Date, horizon: Date, when: string): Promise<BatchResult> {
  const r = await queryPrepared<{
    t: string
    app_id: string
    send_id: string
    device_id: string | null
    kind: number | null
    late: boolean
  }>(db, WRITE_RECEIPTS_SQL, [
    rows.map((x) => x.appId),
    rows.map((x) => x.sendId),
    rows.map((x) => x.deviceId),
    rows.map((x) => x.click),
    now,
    horizon,
    when,
  ])
  const out: BatchResult = { valid: new Set(), fresh: new Set(), late: new Set(), gone: new Set() }
  for (const x of r.rows) {
    if (x.t === 'v') out.valid.add(`${x.app_id}:${x.send_id}`)
    else if (x.t === 'g') out.gone.add(`${x.app_id}:${x.device_id}`)
    else {
      out.fresh.add(`${x.send_id}:${x.device_id}:${x.kind}`)
      if (x.late) out.late.add(`${x.send_id}:${x.device_id}:${x.kind}`)
    }
  }
  return out
}
