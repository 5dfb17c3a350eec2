// SQL of sends. The hot path writes a whole batch of sends in two statements and no explicit transaction: the
// listed ids are resolved server-side (one read per target kind, over unnest: only the reachable ids come back),
// then one statement inserts the send rows, each with its delivery list as a `uuid[]` column, and their
// idempotency records. Per-device delivery rows are written later, once, by the delivery engine with each outcome.
import { arrayLiteral, arrayOf, type ElementType } from '../db/arrays'
import { type Db, query, queryPrepared, type Tx } from '../db/pool'
import { REACHABLE_SQL, segmentWhere, TYPE_BIT_SQL } from '../handoff/audience-sql'

/** Platform bits of a send's audience: device_type 0 → iOS, 1 → Android, others (5, 7, 8) → web. */
export const PLATFORM_BIT = { ios: 1, android: 2, web: 4 } as const

/**
 * The reachable devices among each send's listed player ids (one statement for the whole batch). Each id is looked
 * up by primary key: LATERAL … OFFSET 0 keeps the planner from turning it into a join whose plan depends on table
 * statistics (a fresh devices table can get a 2,000 × 2,000 nested loop). Prepared, like the send write below:
 * parsing and planning them for every batch would be ~40% of Postgres's time per accepted send
 * (docs/design/throughput.md).
 */
export const RESOLVE_PLAYERS_SQL = `SELECT ($3::uuid[])[r.k] AS send_id, d.id, d.identifier, d.device_type, d.transporte
   FROM unnest($1::int[], $2::uuid[]) AS r(k, device_id)
   CROSS JOIN LATERAL (
     SELECT d.id, d.identifier, d.device_type, d.transporte FROM devices d
      WHERE d.app_id = ($4::uuid[])[r.k] AND d.id = r.device_id AND ${REACHABLE_SQL}
        AND (($5::int[])[r.k] & ${TYPE_BIT_SQL}) <> 0
     OFFSET 0) d`

/** Every reachable device of each listed user, one lookup through the app's external-user index per user. */
export const RESOLVE_USERS_SQL = `SELECT r.send_id, r.uid, d.id, d.identifier, d.device_type, d.transporte
   FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[]) AS r(send_id, app_id, uid, mask)
   CROSS JOIN LATERAL (
     SELECT d.id, d.identifier, d.device_type, d.transporte FROM devices d
      WHERE d.app_id = r.app_id AND d.external_user_id = r.uid AND ${REACHABLE_SQL}
        AND (r.mask & ${TYPE_BIT_SQL}) <> 0
     OFFSET 0) d`

/** A reachable device of a list send, as read when the send is accepted (its token travels with the hand-off). */
export interface Target {
  id: string
  identifier: string | null
  deviceType: number
  transport: 'fcm' | 'apns' | null
}

interface TargetRow {
  id: string
  identifier: string | null
  device_type: number
  transporte: 'fcm' | 'apns' | null
}

const targetOf = (x: TargetRow): Target => ({
  id: x.id,
  identifier: x.identifier,
  deviceType: x.device_type,
  transport: x.transporte,
})

export interface ListRequest {
  sendId: string
  appId: string
  ids: string[]
  mask: number
}

/** The reachable devices among each send's listed player ids: send id → devices (RESOLVE_PLAYERS_SQL). */
export async function resolvePlayers(c: Db | Tx, reqs: ListRequest[]): Promise<Map<string, Target[]>> {
  const out = new Map<string, Target[]>()
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
  const res = await queryPrepared<TargetRow & { send_id: string }>(c, RESOLVE_PLAYERS_SQL, [
    arrayLiteral(ks),
    arrayLiteral(ids),
    reqs.map((r) => r.sendId),
    reqs.map((r) => r.appId),
    reqs.map((r) => r.mask),
  ])
  for (const row of res.rows) out.get(row.send_id)?.push(targetOf(row))
  return out
}

/** Every reachable device of each listed user, per send: devices by user. */
export async function resolveUsers(c: Db | Tx, reqs: ListRequest[]): Promise<Map<string, Map<string, Target[]>>> {
  const out = new Map<string, Map<string, Target[]>>()
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
  const res = await queryPrepared<TargetRow & { send_id: string; uid: string }>(c, RESOLVE_USERS_SQL, [
    sendIds,
    appIds,
    users,
    masks,
  ])
  for (const row of res.rows) {
    const byUser = out.get(row.send_id)
    if (!byUser) continue
    const list = byUser.get(row.uid)
    if (list) list.push(targetOf(row))
    else byUser.set(row.uid, [targetOf(row)])
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
  /** JSON text (SendInput.message), stored as is. */
  message: string
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
 * One column of a multi-row insert over unnest: the array parameter it travels in (`as`, its Postgres element
 * type, its value per row; the column is written as one literal by arrayOf), and the table columns it fills
 * (`into`; none: read by the statement only). `cast` converts the element when stored (an array travels as its
 * literal text). jsonb values are JSON text.
 */
interface Column<R> {
  as: string
  type: ElementType
  of: (r: R) => unknown
  into: string[]
  cast?: string
}

/** The send row as stored; `remaining` starts at `recipients`, and a send with an exact audience is fully expanded. */
const SEND_COLUMNS: ReadonlyArray<Column<SendRow>> = [
  { as: 'a', type: 'uuid', of: (r) => r.appId, into: ['app_id'] },
  { as: 'i', type: 'uuid', of: (r) => r.id, into: ['id'] },
  { as: 'l', type: 'smallint', of: (r) => r.lane, into: ['lane'] },
  { as: 'k', type: 'text', of: (r) => r.targetKind, into: ['target_kind'] },
  { as: 's', type: 'jsonb', of: (r) => json(r.includedSegments), into: ['included_segments'] },
  { as: 'p', type: 'jsonb', of: (r) => json(r.includePlayerIds), into: ['include_player_ids'] },
  { as: 'u', type: 'jsonb', of: (r) => json(r.includeExternalUserIds), into: ['include_external_user_ids'] },
  { as: 'pf', type: 'jsonb', of: (r) => json(r.platforms), into: ['platforms'] },
  { as: 'm', type: 'jsonb', of: (r) => r.message, into: ['message'] },
  { as: 'n', type: 'text', of: (r) => r.name, into: ['name'] },
  { as: 'h', type: 'jsonb', of: (r) => json(r.headings), into: ['headings'] },
  { as: 'ct', type: 'jsonb', of: (r) => json(r.contents), into: ['contents'] },
  { as: 'e', type: 'text', of: (r) => r.externalId, into: ['external_id'] },
  { as: 'rc', type: 'int', of: (r) => r.recipients, into: ['recipients', 'remaining'] },
  { as: 'rx', type: 'bool', of: (r) => r.recipientsExact, into: ['recipients_exact', 'expansion_done'] },
  { as: 't', type: 'int', of: (r) => r.ttlS, into: ['ttl_s'] },
  { as: 'q', type: 'timestamptz', of: (r) => r.queuedAt, into: ['queued_at'] },
  { as: 'sa', type: 'timestamptz', of: (r) => r.sendAfter, into: ['send_after'] },
  { as: 'au', type: 'text', of: (r) => (r.audience ? arrayLiteral(r.audience) : null), into: ['audience'], cast: '::uuid[]' },
  // Not stored in the send: a send carrying a key is inserted only if its idempotency record was.
  { as: 'ik', type: 'text', of: (r) => r.idemKey, into: [] },
]

const IDEM_COLUMNS: ReadonlyArray<Column<IdemRow>> = [
  { as: 'a', type: 'uuid', of: (x) => x.appId, into: ['app_id'] },
  { as: 'k', type: 'text', of: (x) => x.key, into: ['key'] },
  { as: 'bh', type: 'text', of: (x) => x.bodyHash, into: ['body_hash'] },
  { as: 'st', type: 'smallint', of: (x) => x.status, into: ['status'] },
  { as: 'l', type: 'smallint', of: (x) => x.lane, into: ['lane'] },
  { as: 'ex', type: 'bool', of: (x) => x.exact, into: ['exact'] },
  { as: 'r', type: 'text', of: (x) => x.response, into: ['response'] },
  { as: 'c', type: 'timestamptz', of: (x) => x.createdAt, into: ['created_at'] },
  { as: 'x', type: 'timestamptz', of: (x) => x.expiresAt, into: ['expires_at'] },
]

/** The pieces of `INSERT INTO t (<columns>) SELECT <select> FROM <from> AS <alias>`, parameters from `$first` on. */
function unnestInsert<R>(cols: ReadonlyArray<Column<R>>, first: number) {
  const stored = cols.flatMap((c) => c.into.map((column) => ({ column, expr: `${c.as}${c.cast ?? ''}` })))
  return {
    columns: stored.map((x) => x.column).join(', '),
    select: stored.map((x) => x.expr).join(', '),
    from: `unnest(${cols.map((c, k) => `$${first + k}::${c.type}[]`).join(', ')})`,
    alias: `x(${cols.map((c) => c.as).join(', ')})`,
    params: (rows: readonly R[]) => cols.map((c) => arrayOf(c.type, rows.map(c.of))),
  }
}

const SEND_INSERT = unnestInsert(SEND_COLUMNS, 1)
const IDEM_INSERT = unnestInsert(IDEM_COLUMNS, 1 + SEND_COLUMNS.length)

/**
 * Writes a batch's send rows and idempotency records in ONE autocommitted statement (one round trip, no explicit
 * transaction): the records are inserted first (an expired record under the same key is replaced), and a send that
 * carries a key is inserted only if its record was — so a key already held by a live record (a lost race) writes
 * nothing for that send. Answers the (app, key) pairs that were written. The columns are the tables above.
 */
const WRITE_SENDS_SQL = `WITH i AS (
       INSERT INTO idempotency (${IDEM_INSERT.columns})
       SELECT ${IDEM_INSERT.select} FROM ${IDEM_INSERT.from} AS ${IDEM_INSERT.alias}
       ON CONFLICT (app_id, key) DO UPDATE
          SET body_hash = excluded.body_hash, status = excluded.status, lane = excluded.lane, exact = excluded.exact,
              response = excluded.response, created_at = excluded.created_at, expires_at = excluded.expires_at
        WHERE idempotency.expires_at <= excluded.created_at -- an expired record is replaced; a live one is a lost race
       RETURNING app_id, key
     ), s AS (
       INSERT INTO sends (${SEND_INSERT.columns})
       SELECT ${SEND_INSERT.select} FROM ${SEND_INSERT.from} AS ${SEND_INSERT.alias}
        WHERE x.ik IS NULL OR EXISTS (SELECT 1 FROM i WHERE i.app_id = x.a AND i.key = x.ik)
     )
     SELECT app_id, key FROM i`

export async function writeSends(db: Db | Tx, rows: SendRow[], idem: IdemRow[]): Promise<Set<string>> {
  if (rows.length === 0 && idem.length === 0) return new Set()
  const r = await queryPrepared<{ app_id: string; key: string }>(db, WRITE_SENDS_SQL, [
    ...SEND_INSERT.params(rows),
    ...IDEM_INSERT.params(idem),
  ])
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
