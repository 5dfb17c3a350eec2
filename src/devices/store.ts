// SQL of devices, behind intent names. The registration upsert is one multi-row statement (the spec, Devices: the
// writer group-commits); reads and PUT are single-device statements.
import { createHash } from 'node:crypto'
import type { Db, Tx } from '../db/pool'
import { query } from '../db/pool'
import type { DeviceUpdate, RegistrationRow } from './validate'

export interface UpsertRow extends RegistrationRow {
  /** A fresh UUID, used only if the device is new; an existing device keeps its id. */
  id: string
}

const COLUMNS = `app_id uuid, id uuid, identifier text, device_type smallint, transporte text, external_user_id text,
  app_version text, device_model text, tags jsonb, language text, timezone integer, device_os text, fabricante text,
  sdk_versao text, timezone_id text, pais text, net_type text, carrier text, standby_bucket text, instalacao_id text,
  rooted boolean, bateria_irrestrita boolean, sessoes integer, notif_permissoes integer`

// Rows travel as one JSON array (json_to_recordset): V8's JSON.stringify is far cheaper than pg's per-element array
// escaping for ~25 columns x 500 rows, and nested `tags` arrive as jsonb untouched. Rows arrive de-duplicated per
// (app_id, identifier) and sorted by it, so concurrent batches take row locks in one order.
// POST rule (the spec, Devices): identity fields are replaced (absent = erased); transporte and profile fields keep the
// stored value when absent; sessoes never decreases; re-registering a dead token makes it valid again.
// $3 lists the rows that omitted transporte (key app_id||identifier): EXCLUDED cannot tell "absent" from the
// 'fcm' a new device is born with, so the list says which existing rows keep theirs.
const UPSERT = `
INSERT INTO devices AS d (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, app_version,
  device_model, tags, language, timezone, device_os, fabricante, sdk_versao, timezone_id, pais, net_type, carrier,
  standby_bucket, instalacao_id, rooted, bateria_irrestrita, sessoes, notif_permissoes, notification_types,
  invalid_identifier, last_active, created_at, updated_at)
SELECT r.app_id, r.id, r.identifier, r.device_type, starts_with(r.identifier, 'test:'), coalesce(r.transporte, 'fcm'),
  r.external_user_id, r.app_version, r.device_model, r.tags, r.language, r.timezone, r.device_os, r.fabricante,
  r.sdk_versao, r.timezone_id, r.pais, r.net_type, r.carrier, r.standby_bucket, r.instalacao_id, r.rooted,
  r.bateria_irrestrita, r.sessoes, r.notif_permissoes, 1, false, $1, $1, $1
FROM json_to_recordset($2::json) AS r(${COLUMNS})
ON CONFLICT (app_id, identifier) DO UPDATE SET
  device_type = EXCLUDED.device_type,
  transporte = CASE WHEN $3::jsonb ? (EXCLUDED.app_id::text || EXCLUDED.identifier) THEN d.transporte
               ELSE EXCLUDED.transporte END,
  external_user_id = EXCLUDED.external_user_id,
  app_version = EXCLUDED.app_version,
  device_model = EXCLUDED.device_model,
  tags = EXCLUDED.tags,
  language = EXCLUDED.language,
  timezone = EXCLUDED.timezone,
  device_os = coalesce(EXCLUDED.device_os, d.device_os),
  fabricante = coalesce(EXCLUDED.fabricante, d.fabricante),
  sdk_versao = coalesce(EXCLUDED.sdk_versao, d.sdk_versao),
  timezone_id = coalesce(EXCLUDED.timezone_id, d.timezone_id),
  pais = coalesce(EXCLUDED.pais, d.pais),
  net_type = coalesce(EXCLUDED.net_type, d.net_type),
  carrier = coalesce(EXCLUDED.carrier, d.carrier),
  standby_bucket = coalesce(EXCLUDED.standby_bucket, d.standby_bucket),
  instalacao_id = coalesce(EXCLUDED.instalacao_id, d.instalacao_id),
  rooted = coalesce(EXCLUDED.rooted, d.rooted),
  bateria_irrestrita = coalesce(EXCLUDED.bateria_irrestrita, d.bateria_irrestrita),
  sessoes = GREATEST(d.sessoes, EXCLUDED.sessoes),
  notif_permissoes = coalesce(EXCLUDED.notif_permissoes, d.notif_permissoes),
  invalid_identifier = false,
  invalid_reason = NULL,
  last_active = EXCLUDED.last_active,
  updated_at = EXCLUDED.updated_at
RETURNING d.app_id, d.identifier, d.id`

export function rowKey(appId: string, identifier: string): string {
  return appId + identifier
}

/** Upserts a de-duplicated batch; answers the player_id of each row by rowKey. */
export async function upsertBatch(c: Db | Tx, rows: readonly UpsertRow[], now: Date): Promise<Map<string, string>> {
  const keep: Record<string, 1> = {}
  for (const r of rows) if (r.transporte === null) keep[rowKey(r.app_id, r.identifier)] = 1
  const res = await query<{ app_id: string; identifier: string; id: string }>(c, UPSERT, [
    now,
    JSON.stringify(rows),
    JSON.stringify(keep),
  ])
  const ids = new Map<string, string>()
  for (const r of res.rows) ids.set(rowKey(r.app_id, r.identifier), r.id)
  return ids
}

/** A signed 64-bit advisory-lock key for one (app, kind, value), as a decimal string for pg. */
export function lockKey(appId: string, kind: 'user' | 'install', value: string): string {
  return createHash('sha256').update(`${appId}\n${kind}\n${value}`).digest().readBigInt64BE(0).toString()
}

/** Serialises transactions on the same user or install (held until commit). Keys are taken in sorted order. */
export async function lockAll(c: Tx, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  const sorted = [...new Set(keys)].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))
  await query(c, 'SELECT pg_advisory_xact_lock(k) FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) s', [sorted])
}

export interface BoundDevice {
  app_id: string
  external_user_id: string
  identifier: string
  invalid_identifier: boolean
}

/** Devices currently bound to any of the given (app, external_user_id) pairs. */
export async function boundDevices(c: Tx, pairs: ReadonlyArray<[string, string]>): Promise<BoundDevice[]> {
  const res = await query<BoundDevice>(
    c,
    `SELECT d.app_id, d.external_user_id, d.identifier, d.invalid_identifier
       FROM devices d JOIN unnest($1::uuid[], $2::text[]) AS u(app_id, eid)
         ON d.app_id = u.app_id AND d.external_user_id = u.eid`,
    [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
  )
  return res.rows
}

/** the spec, Device validity: a newer token of an install retires the install's other tokens. */
export async function retireInstallTokens(
  c: Tx,
  keepers: ReadonlyArray<{ app_id: string; instalacao_id: string; identifier: string }>,
  now: Date,
): Promise<void> {
  if (keepers.length === 0) return
  await query(
    c,
    `UPDATE devices d SET invalid_identifier = true, invalid_reason = 'substituido', updated_at = $4
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(app_id, inst, identifier)
      WHERE d.app_id = u.app_id AND d.instalacao_id = u.inst AND d.identifier <> u.identifier AND NOT d.invalid_identifier`,
    [keepers.map((k) => k.app_id), keepers.map((k) => k.instalacao_id), keepers.map((k) => k.identifier), now],
  )
}

export interface DeviceRow {
  id: string
  identifier: string
  device_type: number
  notification_types: number
  invalid_identifier: boolean
  external_user_id: string | null
  app_version: string | null
  device_model: string | null
  tags: Record<string, unknown> | null
  language: string | null
  timezone: number | null
  last_active: Date
  created_at: Date
}

export async function findDevice(db: Db, appId: string, id: string): Promise<DeviceRow | null> {
  const res = await query<DeviceRow>(
    db,
    `SELECT id, identifier, device_type, notification_types, invalid_identifier, external_user_id, app_version,
            device_model, tags, language, timezone, last_active, created_at
       FROM devices WHERE app_id = $1 AND id = $2`,
    [appId, id],
  )
  return res.rows[0] ?? null
}

/** The device a PUT acts on, locked for the rest of the transaction. */
export async function lockDevice(c: Tx, appId: string, id: string): Promise<{ external_user_id: string | null } | null> {
  const res = await query<{ external_user_id: string | null }>(
    c,
    'SELECT external_user_id FROM devices WHERE app_id = $1 AND id = $2 FOR UPDATE',
    [appId, id],
  )
  return res.rows[0] ?? null
}

/** Valid devices bound to one user, other than `exceptId`. */
export async function countUserDevices(c: Tx, appId: string, externalUserId: string, exceptId: string): Promise<number> {
  const res = await query<{ n: number }>(
    c,
    `SELECT count(*)::int AS n FROM devices
      WHERE app_id = $1 AND external_user_id = $2 AND id <> $3 AND NOT invalid_identifier`,
    [appId, externalUserId, exceptId],
  )
  return res.rows[0]?.n ?? 0
}

/** the spec, Devices PUT: omitted fields keep their value; external_user_id undefined = keep, null = logout. */
export async function applyUpdate(c: Tx, appId: string, id: string, u: DeviceUpdate, now: Date): Promise<void> {
  await query(
    c,
    `UPDATE devices SET
        external_user_id = CASE WHEN $3 THEN $4 ELSE external_user_id END,
        tags = coalesce($5::jsonb, tags),
        app_version = coalesce($6, app_version),
        transporte = coalesce($7, transporte),
        last_active = $8, updated_at = $8
      WHERE app_id = $1 AND id = $2`,
    [
      appId,
      id,
      u.external_user_id !== undefined,
      u.external_user_id ?? null,
      u.tags === undefined ? null : JSON.stringify(u.tags),
      u.app_version ?? null,
      u.transporte ?? null,
      now,
    ],
  )
}
