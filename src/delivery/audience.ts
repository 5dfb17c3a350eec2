// The work of one send, in pages (bounded memory whatever the audience): devices not yet final, with their tokens.
// List sends walk their `audience` array by position. Segment sends are expanded page by page into placeholder
// delivery rows (the audience becomes fixed as it is expanded; `expanded_until` remembers where), and their work is
// the placeholder rows still pending, walked by device id.
import { arrayLiteral } from '../db/arrays'
import { type Db, query, queryPrepared } from '../db/pool'
import { REACHABLE_SQL, segmentWhere } from '../handoff/audience-sql'
import type { Candidate, LoadedSend, SendMeta } from '../handoff/send'

/**
 * Where a walk by device id starts. A cursor is always a bound (`id > $n`, never `$n IS NULL OR id > $n`): these
 * statements are prepared, and a generic plan cannot drop the OR, so it would filter every earlier row instead of
 * seeking past them (187,000 rows read for the last page of a 200,000-device send). Device ids are random v4
 * UUIDs, never the nil UUID.
 */
export const BEFORE_ANY_ID = '00000000-0000-0000-0000-000000000000'

interface MetaRow {
  app_id: string
  id: string
  lane: number
  target_kind: SendMeta['targetKind']
  included_segments: string[]
  platforms: { ios: boolean; android: boolean; web: boolean }
  message: Record<string, unknown>
  ttl_s: number
  start: Date
  n: number | null
  expanded_until: string | null
  expansion_done: boolean
  completed_at: Date | null
  recipients: number
  sliced: boolean
}

function metaOf(x: MetaRow): SendMeta {
  return {
    appId: x.app_id,
    id: x.id,
    lane: x.lane as 0 | 1,
    targetKind: x.target_kind,
    segments: x.included_segments,
    platformMask: (x.platforms.ios ? 1 : 0) | (x.platforms.android ? 2 : 0) | (x.platforms.web ? 4 : 0),
    message: x.message,
    ttlS: x.ttl_s,
    startMs: x.start.getTime(),
    audienceLength: x.n ?? 0,
    expandedUntil: x.expanded_until,
    expansionDone: x.expansion_done,
    completed: x.completed_at !== null,
    recipients: x.recipients,
    sliced: x.sliced,
  }
}

export interface SendRef {
  appId: string
  sendId: string
}

/** Read with the device's token, so an accepted push marks only a device not yet marked real (outcomes.ts): a
 *  device already marked costs the outcome batch nothing. */
const PROVEN_SQL = '(d.push_accepted_at IS NOT NULL)'

/** A first-page device as the statement aggregates it: [id, identifier, device_type, transporte, valid, proven]. */
type PageEntry = [string, string | null, number | null, 'fcm' | 'apns' | null, boolean | null, boolean | null]

/** loadSends' statement (its plan is tested: test/integration/delivery-plans.test.ts). */
export const LOAD_SENDS_SQL = `WITH x AS (
       SELECT s.app_id, s.id, s.lane, s.target_kind, s.included_segments, s.platforms, s.message, s.ttl_s,
              COALESCE(s.send_after, s.queued_at) AS start, cardinality(s.audience) AS n, s.expanded_until,
              s.expansion_done, s.completed_at, s.send_after IS NULL AND s.queued_at > $4 AS fresh, s.recipients,
              s.target_kind = 'segments' AND EXISTS (SELECT 1 FROM send_slices k WHERE k.app_id = s.app_id AND k.send_id = s.id) AS sliced,
              CASE WHEN s.completed_at IS NULL AND s.target_kind <> 'segments' AND $5::int > 0 THEN s.audience[1:$5::int] END AS first
         FROM unnest($1::uuid[], $2::uuid[]) AS u(a, i)
         CROSS JOIN LATERAL (SELECT * FROM sends s WHERE s.app_id = u.a AND s.id = u.i OFFSET 0) s
     ), p AS (
       UPDATE sends s SET picked_at = $3 FROM x
        WHERE s.app_id = x.app_id AND s.id = x.id AND x.completed_at IS NULL AND s.picked_at IS NULL AND NOT x.fresh
     )
     SELECT x.app_id, x.id, x.lane, x.target_kind, x.included_segments, x.platforms, x.message, x.ttl_s, x.start, x.n,
            x.expanded_until, x.expansion_done, x.completed_at, x.recipients, x.sliced, f.page
       FROM x LEFT JOIN LATERAL (
         SELECT json_agg(json_build_array(a.id, d.identifier, d.device_type, d.transporte, d.valid, d.proven) ORDER BY a.pos) AS page
           FROM unnest(x.first) WITH ORDINALITY AS a(id, pos)
           LEFT JOIN LATERAL (
             SELECT d.identifier, d.device_type, d.transporte, (${REACHABLE_SQL}) AS valid, ${PROVEN_SQL} AS proven FROM devices d
              WHERE d.app_id = x.app_id AND d.id = a.id OFFSET 0) d ON true
          WHERE NOT COALESCE((SELECT y.status <> 0 FROM deliveries y WHERE y.app_id = x.app_id AND y.send_id = x.id AND y.device_id = a.id), false)
       ) f ON true`

/**
 * Many sends (of many apps) taken by a worker in one statement: their meta, each unfinished one marked picked
 * (the sweeper stops re-enqueueing it), and the first `pageSize` positions of each open list send's audience minus
 * the devices already final, so a small send is wholly read here and its actor never waits for a page. A send
 * that no longer exists is absent from the answer.
 *
 * A send queued less than `freshMs` ago without `send_after` is not written: the sweeper leaves it alone anyway
 * (it was queued within its grace) and the worker's heartbeat stamps it within `freshMs` if it lasts, so with a
 * heartbeat under half the grace it is never re-enqueued while held. That spares most sends a row update.
 *
 * Every lookup is by key, one row at a time (LATERAL … OFFSET 0, a scalar subquery for the final check): the
 * statement is prepared, and a generic plan built on a young table's statistics once chose to scan every open
 * send through sends_open_idx for each send of the batch (2.5 ms for 25 sends with 500 open).
 */
export async function loadSends(
  db: Db,
  refs: readonly SendRef[],
  now: Date,
  freshMs = 0,
  pageSize = 0,
): Promise<Map<string, LoadedSend>> {
  const r = await queryPrepared<MetaRow & { page: PageEntry[] | null }>(db, LOAD_SENDS_SQL, [
    arrayLiteral(refs.map((x) => x.appId)),
    arrayLiteral(refs.map((x) => x.sendId)),
    now,
    new Date(now.getTime() - freshMs),
    pageSize,
  ])
  const out = new Map<string, LoadedSend>()
  for (const x of r.rows) {
    const meta = metaOf(x)
    const firstPage =
      meta.targetKind === 'segments' || pageSize <= 0
        ? null
        : (x.page ?? []).map(([deviceId, identifier, deviceType, transport, valid, proven]) =>
            candidate({ id: deviceId, identifier, transporte: transport, valid, proven }, deviceType ?? 1),
          )
    out.set(x.id, { meta, firstPage })
  }
  return out
}

/** Positions [from, from + size) of a list send's audience, minus devices already final. 1-based positions. */
export async function listPage(db: Db, s: SendMeta, from: number, size: number): Promise<Candidate[]> {
  const r = await queryPrepared<Row & { device_type: number | null }>(
    db,
    `SELECT a.id, d.identifier, d.device_type, d.transporte, d.valid, d.proven
       FROM sends s, unnest(s.audience[$3:$4]) WITH ORDINALITY AS a(id, pos)
       LEFT JOIN LATERAL (
         SELECT d.identifier, d.device_type, d.transporte, (${REACHABLE_SQL}) AS valid, ${PROVEN_SQL} AS proven FROM devices d
          WHERE d.app_id = $1 AND d.id = a.id OFFSET 0) d ON true
      WHERE s.app_id = $1 AND s.id = $2
        AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.app_id = $1 AND x.send_id = $2 AND x.device_id = a.id AND x.status <> 0)
      ORDER BY a.pos`,
    [s.appId, s.id, from, from + size - 1],
  )
  return r.rows.map((x) => candidate(x, x.device_type ?? 1))
}

interface Row {
  id: string
  identifier: string | null
  transporte: 'fcm' | 'apns' | null
  valid: boolean | null
  proven: boolean | null
}

function candidate(x: Row, deviceType: number): Candidate {
  return {
    deviceId: x.id,
    token: x.identifier,
    deviceType,
    transport: x.transporte ?? 'fcm',
    valid: x.valid === true,
    // Absent rather than false: not marked and not known (a carried send's devices) mean the same to the actor.
    ...(x.proven === true ? { proven: true } : {}),
  }
}

/** The last device id there can be: the upper bound of the last slice. */
export const AFTER_ANY_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff'

/**
 * The statement that pages a segment's next devices into placeholder rows ($4: the cursor, BEFORE_ANY_ID first).
 * `bounded`: only devices up to $7 (a slice's upper bound).
 */
export function expandSql(segments: readonly string[], bounded = false): string {
  return `WITH page AS (
       SELECT d.id, d.device_type FROM devices d
        WHERE d.app_id = $1 AND ${REACHABLE_SQL}
          AND ($3::int & (CASE d.device_type WHEN 0 THEN 1 WHEN 1 THEN 2 ELSE 4 END)) <> 0
          AND ${segmentWhere(segments, '$5::timestamptz')}
          AND d.id > $4::uuid${bounded ? ' AND d.id <= $7::uuid' : ''}
        ORDER BY d.id LIMIT $6
     ), ins AS (
       INSERT INTO deliveries (send_id, device_id, app_id, device_type)
       SELECT $2, id, $1, device_type FROM page ON CONFLICT DO NOTHING
     )
     SELECT count(*)::int AS n, (SELECT id FROM page ORDER BY id DESC LIMIT 1) AS last FROM page`
}

/**
 * Pages the next devices of a segment into placeholder rows; answers how many were added (0: expansion is over,
 * and the send's recipients and remaining are set to what was expanded).
 */
export async function expandSegment(db: Db, s: SendMeta, size: number, now: Date): Promise<number> {
  const r = await queryPrepared<{ n: number; last: string | null }>(db, expandSql(s.segments), [
    s.appId,
    s.id,
    s.platformMask,
    s.expandedUntil ?? BEFORE_ANY_ID,
    now,
    size,
  ])
  const { n, last } = r.rows[0] ?? { n: 0, last: null }
  if (n > 0) {
    await queryPrepared(db, 'UPDATE sends SET expanded_until = $3 WHERE app_id = $1 AND id = $2', [s.appId, s.id, last])
    s.expandedUntil = last
  } else {
    await query(
      db,
      // The placeholder count is final now (only this actor expands); `remaining` is derived from the row's own
      // counters, which a concurrent outcome batch may have just moved (the row lock makes this read them fresh).
      `WITH n AS (SELECT count(*)::int AS n FROM deliveries WHERE app_id = $1 AND send_id = $2)
       UPDATE sends SET expansion_done = true, recipients = n.n, remaining = n.n - (successful + failed + errored)
         FROM n WHERE app_id = $1 AND id = $2`,
      [s.appId, s.id],
    )
    s.expansionDone = true
  }
  return n
}

/** A segment send's pending placeholder rows after the cursor $3 (device id order), with tokens. */
export const SEGMENT_PAGE_SQL = segmentPageSql(false)

/** `bounded`: only rows up to device id $5 (a slice's upper bound). */
function segmentPageSql(bounded: boolean): string {
  return `SELECT x.device_id AS id, d.identifier, x.device_type, d.transporte, d.valid, d.proven
       FROM deliveries x
       LEFT JOIN LATERAL (
         SELECT d.identifier, d.transporte, (${REACHABLE_SQL}) AS valid, ${PROVEN_SQL} AS proven FROM devices d
          WHERE d.app_id = $1 AND d.id = x.device_id OFFSET 0) d ON true
      WHERE x.app_id = $1 AND x.send_id = $2 AND x.status = 0 AND x.device_id > $3::uuid${bounded ? ' AND x.device_id <= $5::uuid' : ''}
      ORDER BY x.device_id LIMIT $4`
}

const SLICE_PAGE_SQL = segmentPageSql(true)

/** A segment send's pending placeholder rows after `after` (device id order), up to `upTo` when given, with tokens. */
export async function segmentPage(db: Db, s: SendMeta, after: string | null, size: number, upTo?: string): Promise<Candidate[]> {
  const r = await queryPrepared<Row & { device_type: number }>(
    db,
    upTo === undefined ? SEGMENT_PAGE_SQL : SLICE_PAGE_SQL,
    upTo === undefined ? [s.appId, s.id, after ?? BEFORE_ANY_ID, size] : [s.appId, s.id, after ?? BEFORE_ANY_ID, size, upTo],
  )
  return r.rows.map((x) => candidate(x, x.device_type))
}

export async function setProblem(db: Db, appId: string, sendId: string, problem: string): Promise<void> {
  await query(db, 'UPDATE sends SET problem = COALESCE(problem, $3) WHERE app_id = $1 AND id = $2', [appId, sendId, problem])
}

/**
 * The worker's heartbeat: `picked_at` of the open sends it holds, so the sweeper leaves them alone. A row another
 * statement has locked (an outcome batch moving its counters) is skipped, not waited for: the heartbeat then never
 * waits on a lock, so it can never be half of a deadlock (it was, with outcome batches, and the victim batch's pushes
 * were sent again); the row is refreshed by the next beat, well within the sweeper's grace. Answers the rows refreshed.
 */
export async function refreshPicked(db: Db, sends: ReadonlyArray<{ appId: string; sendId: string }>, now: Date): Promise<number> {
  if (sends.length === 0) return 0
  const r = await query(
    db,
    `UPDATE sends s SET picked_at = $3
       FROM (SELECT k.app_id, k.id FROM sends k JOIN unnest($1::uuid[], $2::uuid[]) AS u(a, i) ON k.app_id = u.a AND k.id = u.i
              WHERE k.completed_at IS NULL FOR UPDATE OF k SKIP LOCKED) l
      WHERE s.app_id = l.app_id AND s.id = l.id`,
    [sends.map((x) => x.appId), sends.map((x) => x.sendId), now],
  )
  return r.rowCount ?? 0
}
