// SQL of sends. The hot path writes a whole batch of sends in one transaction: the audience is resolved and the
// delivery rows inserted server-side in one statement per target kind (INSERT … SELECT over unnest: no device row
// travels to Node and back), then the send rows and idempotency records as multi-row inserts.
import { arrayLiteral } from '../db/arrays'
import { type Db, query, type Tx } from '../db/pool'

/** Platform bits of a send's audience: device_type 0 → iOS, 1 → Android, others (5, 7, 8) → web. */
export const PLATFORM_BIT = { ios: 1, android: 2, web: 4 } as const
const TYPE_BIT_SQL = `(CASE d.device_type WHEN 0 THEN 1 WHEN 1 THEN 2 ELSE 4 END)`
/** spec §Notification: reachable = valid token, subscribed, not a sandbox device. */
export const REACHABLE_SQL = 'NOT d.invalid_identifier AND NOT d.sandbox AND d.notification_types = 1'

export interface ListRequest {
  sendId: string
  appId: string
  ids: string[]
  mask: number
}


/**
 * The reachable devices among each send's listed player ids (one statement for the whole batch). Each id is looked
 * up by primary key: LATERAL … OFFSET 0 keeps the planner from turning it into a join whose plan depends on table
 * statistics (a fresh devices table once got a 2,000 × 2,000 nested loop).
 */
export async function resolvePlayers(c: Db | Tx, reqs: ListRequest[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  if (reqs.length === 0) return out
  const ks: number[] = []
  const ids: string[] = []
  reqs.forEach((r, i) => {
    out.set(r.sendId, [])
    for (const id of r.ids) {
      ks.push(i + 1)
      ids.push(id)
    }
  })
  const res = await query<{ send_id: string; id: string }>(
    c,
    `SELECT ($3::uuid[])[r.k] AS send_id, d.id
       FROM unnest($1::int[], $2::uuid[]) AS r(k, device_id)
       CROSS JOIN LATERAL (
         SELECT d.id FROM devices d
          WHERE d.app_id = ($4::uuid[])[r.k] AND d.id = r.device_id AND ${REACHABLE_SQL}
            AND (($5::int[])[r.k] & ${TYPE_BIT_SQL}) <> 0
         OFFSET 0) d`,
    [arrayLiteral(ks), arrayLiteral(ids), reqs.map((r) => r.sendId), reqs.map((r) => r.appId), reqs.map((r) => r.mask)],
  )
  for (const row of res.rows) out.get(row.send_id)?.push(row.id)
  return out
}

/** Every reachable device of each listed user, per send: device ids by user. */
export async function resolveUsers(c: Db | Tx, reqs: ListRequest[]): Promise<Map<string, Map<string, string[]>>> {
  const out = new Map<string, Map<string, string[]>>()
  if (reqs.length === 0) return out
  const sendIds: string[] = []
  const appIds: string[] = []
  const users: string[] = []
  const masks: number[] = []
  for (const r of reqs) {
    out.set(r.sendId, new Map())
    for (const u of r.ids) {
      sendIds.push(r.sendId)
      appIds.push(r.appId)
      users.push(u)
      masks.push(r.mask)
    }
  }
  const res = await query<{ send_id: string; uid: string; id: string }>(
    c,
    `SELECT r.send_id, r.uid, d.id
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[]) AS r(send_id, app_id, uid, mask)
       CROSS JOIN LATERAL (
         SELECT d.id FROM devices d
          WHERE d.app_id = r.app_id AND d.external_user_id = r.uid AND ${REACHABLE_SQL}
            AND (r.mask & ${TYPE_BIT_SQL}) <> 0
         OFFSET 0) d`,
    [sendIds, appIds, users, masks],
  )
  for (const row of res.rows) {
    const byUser = out.get(row.send_id)
    if (!byUser) continue
    const list = byUser.get(row.uid)
    if (list) list.push(row.id)
    else byUser.set(row.uid, [row.id])
  }
  return out
}

/** Dry run and segment estimates: the same audience rules, counted, nothing written. */
export async function countPlayers(db: Db, appId: string, ids: string[], mask: number): Promise<Set<string>> {
  const r = await query<{ id: string }>(
    db,
    `SELECT d.id FROM devices d WHERE d.app_id = $1 AND d.id = ANY($2::uuid[]) AND ${REACHABLE_SQL} AND ($3::int & ${TYPE_BIT_SQL}) <> 0`,
    [appId, ids, mask],
  )
  return new Set(r.rows.map((x) => x.id))
}

export async function countUsers(db: Db, appId: string, users: string[], mask: number): Promise<Map<string, number>> {
  const r = await query<{ uid: string; n: number }>(
    db,
    `SELECT d.external_user_id AS uid, count(*)::int AS n FROM devices d
      WHERE d.app_id = $1 AND d.external_user_id = ANY($2::text[]) AND ${REACHABLE_SQL} AND ($3::int & ${TYPE_BIT_SQL}) <> 0
      GROUP BY d.external_user_id`,
    [appId, users, mask],
  )
  return new Map(r.rows.map((x) => [x.uid, x.n]))
}

/** spec §Segments: which devices each segment holds (all reachable ones, then narrowed by activity). */
export function segmentWhere(names: readonly string[], nowParam: string): string {
  const parts = names.map((n) => {
    if (n === 'Active Users') return `d.last_active >= ${nowParam} - interval '7 days'`
    if (n === 'Engaged Users') return `d.last_receipt_at >= ${nowParam} - interval '7 days'`
    return 'true' // Subscribed Users, Total Subscriptions: every reachable device
  })
  // The parameter is always referenced, so the statement's parameter count does not depend on the segments named.
  return `(${nowParam} IS NOT NULL AND (${parts.join(' OR ')}))`
}

export async function countSegment(db: Db, appId: string, names: readonly string[], mask: number, now: Date): Promise<number> {
  const r = await query<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM devices d
      WHERE d.app_id = $1 AND ${REACHABLE_SQL} AND ($2::int & ${TYPE_BIT_SQL}) <> 0 AND ${segmentWhere(names, '$3::timestamptz')}`,
    [appId, mask, now],
  )
  return r.rows[0]?.n ?? 0
}

export interface SendRow {
  appId: string
  id: string
  lane: number
  targetKind: 'players' | 'users' | 'segments'
  includedSegments: string[]
  includePlayerIds: string[] | null
  includeExternalUserIds: string[] | null
  platforms: unknown
  message: unknown
  name: string | null
  headings: unknown
  contents: unknown
  externalId: string | null
  /** List targets: the reachable device ids; null for segments. */
  audience: string[] | null
  /** The idempotency key the send is recorded under, if any: written only together with its record. */
  idemKey: string | null
  recipients: number
  recipientsExact: boolean
  ttlS: number
  queuedAt: Date
  sendAfter: Date | null
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v))

/**
 * Writes a batch's send rows and idempotency records in ONE autocommitted statement (one round trip, no explicit
 * transaction): the records are inserted first (an expired record under the same key is replaced), and a send that
 * carries a key is inserted only if its record was — so a key already held by a live record (a lost race) writes
 * nothing for that send. Answers the (app, key) pairs that were written.
 */
export async function writeSends(db: Db | Tx, rows: SendRow[], idem: IdemRow[]): Promise<Set<string>> {
  if (rows.length === 0 && idem.length === 0) return new Set()
  const col = <T>(f: (r: SendRow) => T): T[] => rows.map(f)
  const icol = <T>(f: (r: IdemRow) => T): T[] => idem.map(f)
  const r = await query<{ app_id: string; key: string }>(
    db,
    `WITH i AS (
       INSERT INTO idempotency (app_id, key, body_hash, status, lane, exact, response, created_at, expires_at)
       SELECT * FROM unnest($21::uuid[], $22::text[], $23::text[], $24::smallint[], $25::smallint[], $26::bool[],
                            $27::text[], $28::timestamptz[], $29::timestamptz[])
       ON CONFLICT (app_id, key) DO UPDATE
          SET body_hash = excluded.body_hash, status = excluded.status, lane = excluded.lane, exact = excluded.exact,
              response = excluded.response, created_at = excluded.created_at, expires_at = excluded.expires_at
        WHERE idempotency.expires_at <= excluded.created_at -- an expired record is replaced; a live one is a lost race
       RETURNING app_id, key
     ), s AS (
       INSERT INTO sends (app_id, id, lane, target_kind, included_segments, include_player_ids, include_external_user_ids,
                          platforms, message, name, headings, contents, external_id, recipients, recipients_exact,
                          remaining, ttl_s, queued_at, send_after, audience, expansion_done)
       SELECT a, i, l, k, s, p, u, pf, m, n, h, ct, e, rc, rx, rc, t, q, sa, au::uuid[], rx
         FROM unnest($1::uuid[], $2::uuid[], $3::smallint[], $4::text[], $5::jsonb[], $6::jsonb[], $7::jsonb[], $8::jsonb[],
                     $9::jsonb[], $10::text[], $11::jsonb[], $12::jsonb[], $13::text[], $14::int[], $15::bool[], $16::int[],
                     $17::timestamptz[], $18::timestamptz[], $19::text[], $20::text[])
           AS x(a, i, l, k, s, p, u, pf, m, n, h, ct, e, rc, rx, t, q, sa, au, ik)
        WHERE x.ik IS NULL OR EXISTS (SELECT 1 FROM i WHERE i.app_id = x.a AND i.key = x.ik)
     )
     SELECT app_id, key FROM i`,
    [
      col((r) => r.appId),
      col((r) => r.id),
      col((r) => r.lane),
      col((r) => r.targetKind),
      col((r) => json(r.includedSegments)),
      col((r) => json(r.includePlayerIds)),
      col((r) => json(r.includeExternalUserIds)),
      col((r) => json(r.platforms)),
      col((r) => json(r.message)),
      col((r) => r.name),
      col((r) => json(r.headings)),
      col((r) => json(r.contents)),
      col((r) => r.externalId),
      col((r) => r.recipients),
      col((r) => r.recipientsExact),
      col((r) => r.ttlS),
      col((r) => r.queuedAt),
      col((r) => r.sendAfter),
      col((r) => (r.audience ? arrayLiteral(r.audience) : null)),
      col((r) => r.idemKey),
      icol((x) => x.appId),
      icol((x) => x.key),
      icol((x) => x.bodyHash),
      icol((x) => x.status),
      icol((x) => x.lane),
      icol((x) => x.exact),
      icol((x) => x.response),
      icol((x) => x.createdAt),
      icol((x) => x.expiresAt),
    ],
  )
  return new Set(r.rows.map((x) => `${x.app_id}:${x.key}`))
}

export interface IdemRow {
  appId: string
  key: string
  bodyHash: string
  status: number
  lane: number
  exact: boolean
  response: string
  createdAt: Date
  expiresAt: Date
}

export interface StoredAnswer {
  bodyHash: string
  status: number
  lane: number
  exact: boolean
  response: string
}

export async function findIdempotency(db: Db, appId: string, key: string, now: Date): Promise<StoredAnswer | null> {
  const r = await query<{ body_hash: string; status: number; lane: number; exact: boolean; response: string }>(
    db,
    'SELECT body_hash, status, lane, exact, response FROM idempotency WHERE app_id = $1 AND key = $2 AND expires_at > $3',
    [appId, key, now],
  )
  const x = r.rows[0]
  return x ? { bodyHash: x.body_hash, status: x.status, lane: x.lane, exact: x.exact, response: x.response } : null
}

/** Drops expired idempotency records, a bounded number at a time. */
export async function deleteExpiredIdempotency(db: Db, now: Date, limit = 10_000): Promise<number> {
  const r = await query(
    db,
    `DELETE FROM idempotency WHERE ctid IN (SELECT ctid FROM idempotency WHERE expires_at <= $1 LIMIT $2)`,
    [now, limit],
  )
  return r.rowCount ?? 0
}
