// Migrations 0028 and 0029 on a database with rows (a deployment that ran 0027): receipt_archive and inapp_events
// become partitioned tables keyed by the tenant first, their rows kept without being moved (the old table attached
// as the first partition, FROM MINVALUE), the archive's day filled from each row's send; an in-app occurrence is
// still counted once whatever its em; and the legacy partition goes by the same rule as any other once past its time.
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import pino from 'pino'
import t from 'tap'
import { migrate, migrations } from '../../src/db/migrate'
import { dropRangePartitionsBefore, rangePartitions } from '../../src/db/partitions'
import { ARCHIVE_TABLE } from '../../src/receipts/archive'
import { INAPP_EVENTS_TABLE } from '../../src/service/retention'
import { DATABASE_URL } from '../helpers/service'

t.test('0028 and 0029 on tables with rows: partitioned, keyed by app first, every row kept', async (t) => {
  const schema = `mig_${randomBytes(4).toString('hex')}`
  const db = new pg.Pool({ connectionString: DATABASE_URL, options: `-c search_path=${schema}`, max: 2 })
  t.teardown(async () => {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  const before = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  for (const m of migrations()) if (m.version < '0028') writeFileSync(join(before, m.version), m.sql)
  await migrate(DATABASE_URL, schema, { dir: before })

  const app = randomUUID()
  const send = randomUUID()
  const dev = randomUUID()
  await db.query(`INSERT INTO orgs (id, nome, plan) VALUES ($1, 'o', 'pro')`, [app])
  await db.query(
    `INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em) VALUES ($1, $1, 'a', 60, '\\x00', now())`,
    [app],
  )
  // The archive's rows before 0028 have no day: one whose send exists, one whose send is gone.
  await db.query(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, completed_at, expansion_done)
     VALUES ($1, $2, 0, 'players', '{}', '{}', '{}', 1, true, 0, 60, '2026-01-10T12:00:00Z', '2026-01-10T12:00:01Z', true)`,
    [app, send],
  )
  await db.query(
    `INSERT INTO receipt_archive (app_id, send_id, device_id, kind) VALUES ($1, $2, $3, 0), ($1, $2, $3, 1), ($1, $4, $3, 0)`,
    [app, send, dev, randomUUID()],
  )
  const camp = randomUUID()
  await db.query(
    `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
     VALUES ($1, $2, $3, 1, 1, now() - interval '3 days', now()), ($1, $2, $3, 2, 1, now() - interval '1 day', now())`,
    [app, camp, dev],
  )

  const rest = await migrate(DATABASE_URL, schema)
  t.same(
    rest.applied.filter((v) => v >= '0028' && v < '0031'),
    ['0028_receipt_archive_days.sql', '0029_inapp_events_weeks.sql', '0030_retention.sql'],
  )
  const kinds = await db.query<{ relname: string; relkind: string }>(
    `SELECT relname, relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND relname IN ('receipt_archive', 'inapp_events') ORDER BY 1`,
    [schema],
  )
  t.same(
    kinds.rows,
    [
      { relname: 'inapp_events', relkind: 'p' },
      { relname: 'receipt_archive', relkind: 'p' },
    ],
    'both are partitioned tables now',
  )
  const keys = await db.query<{ t: string; def: string }>(
    `SELECT conrelid::regclass::text AS t, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE contype = 'p' AND conrelid IN ('receipt_archive'::regclass, 'inapp_events'::regclass) ORDER BY 1`,
  )
  t.same(keys.rows, [
    { t: 'inapp_events', def: 'PRIMARY KEY (app_id, campanha_id, device_id, evento, ocorrencia_n, em)' },
    { t: 'receipt_archive', def: 'PRIMARY KEY (app_id, send_id, device_id, kind, day)' },
  ])
  const archive = await db.query<{ send_id: string; kind: number; day: string }>(
    'SELECT send_id, kind, day::text FROM receipt_archive ORDER BY day, kind',
  )
  t.same(
    archive.rows.map((r) => [r.send_id === send, r.kind, r.day]),
    [
      [false, 0, '1970-01-01'],
      [true, 0, '2026-01-10'],
      [true, 1, '2026-01-10'],
    ],
    "every archive row kept, its day its send's (1970-01-01 when the send is gone)",
  )
  t.equal((await db.query('SELECT count(*)::int AS n FROM inapp_events')).rows[0].n, 2, 'every in-app event kept')
  const legacy = (await rangePartitions(db, 'receipt_archive')).find((p) => p.name === 'receipt_archive_legacy')
  t.ok(legacy && legacy.fromMs === null && (legacy.toMs ?? 0) > Date.now(), 'the old archive is the first partition')
  t.ok(
    (await rangePartitions(db, 'inapp_events')).some((p) => p.name === 'inapp_events_legacy' && p.fromMs === null),
    'the old in-app events too',
  )

  // An occurrence counts once whatever its em: the writer probes the key's prefix (src/inapp/events-writer.ts);
  // here, the key itself accepts the same occurrence under another em, which is why the probe is there.
  const again = await db.query(
    `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
     SELECT $1, $2, $3, 1, 1, now(), now()
      WHERE NOT EXISTS (SELECT 1 FROM inapp_events e WHERE e.app_id = $1 AND e.campanha_id = $2 AND e.device_id = $3
                          AND e.evento = 1 AND e.ocorrencia_n = 1)`,
    [app, camp, dev],
  )
  t.equal(again.rowCount, 0, 'the probe finds the occurrence in the legacy partition')

  // Past its upper bound plus the lifetime, the legacy partition goes whole, like any other.
  const log = pino({ level: 'silent' })
  t.same(await dropRangePartitionsBefore(db, ARCHIVE_TABLE, Date.now(), log), [], 'not before its range ended')
  t.same(await dropRangePartitionsBefore(db, ARCHIVE_TABLE, (legacy?.toMs ?? 0) + 1, log), ['receipt_archive_legacy'])
  t.same(await dropRangePartitionsBefore(db, INAPP_EVENTS_TABLE, Date.now() + 30 * 86_400_000, log), ['inapp_events_legacy'])
  t.equal((await db.query('SELECT count(*)::int AS n FROM receipt_archive')).rows[0].n, 0)
})
