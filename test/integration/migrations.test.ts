// Migrations as a deployment runs them: `pombo migrate --status` lists what is applied and pending without changing
// anything; concurrent runs apply each migration once (a polled lock per schema, released at the end of the run);
// the index builds of 0009-0011 run CONCURRENTLY outside a transaction and leave valid indexes; `pombo serve` and
// `pombo migrate` refuse a schema newer than they know, and serve one behind it when PM_MIGRATE_ON_START=0, with a
// one-line reason; 0019's column renames keep a database's rows, its check and its trigger; the columns a migrated
// schema has are the ones test/unit/naming.test.ts reads from the migrations' text, and follow docs/naming.md.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { migrate, migrations, NO_TRANSACTION, statements } from '../../src/db/migrate'
import { pombo, type Run } from '../helpers/cli'
import { columnBreaches, listedColumns, NAMING_DOC, schemaColumns, wireWords } from '../helpers/naming'
import { DATABASE_URL, type TestService } from '../helpers/service'

/** A fresh schema name (dropped at the end) and a stand-in service that only names it, for the CLI helper. */
function freshSchema(t: Test): { schema: string; as: TestService } {
  const schema = `mig_${randomBytes(4).toString('hex')}`
  t.teardown(() => sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return { schema, as: { cfg: { dbSchema: schema, redisPrefix: `pmt_${schema}` } } as unknown as TestService }
}

async function sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  try {
    return (await c.query<R>(text, params)).rows
  } finally {
    await c.end()
  }
}

/** Runs `text` (one statement or several) with `schema` as the search path; the rows of the last statement. */
async function inSchema(schema: string, text: string): Promise<pg.QueryResultRow[]> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  try {
    await c.query(`SET search_path TO ${schema}`)
    const r = (await c.query(text)) as pg.QueryResult | pg.QueryResult[]
    return (Array.isArray(r) ? r.at(-1)?.rows : r.rows) ?? []
  } finally {
    await c.end()
  }
}

/** `serve` logs its start on stdout; the refusal is one line on stderr and exit 2. */
function refused(t: Test, r: Run, pattern: RegExp): void {
  t.equal(r.code, 2, 'exits 2')
  t.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr.trim()}`)
  t.match(r.stderr, pattern)
  t.notMatch(r.stdout, /listening/, 'nothing listened')
}

const ALL = migrations().map((m) => m.version)

t.test('migrate --status: everything pending on a fresh schema, then everything applied; it creates nothing', async (t) => {
  const { schema, as } = freshSchema(t)
  const before = await pombo(as, ['migrate', '--status'])
  t.equal(before.code, 0, before.stderr)
  t.same(JSON.parse(before.stdout), { aplicadas: [], pendentes: ALL, desconhecidas: [] })
  t.same(await sql('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]), [], 'status created no schema')

  const run = await pombo(as, ['migrate'])
  t.equal(run.code, 0, run.stderr)
  t.same(JSON.parse(run.stdout), { aplicadas: ALL, total: ALL.length })

  const after = JSON.parse((await pombo(as, ['migrate', '--status'])).stdout)
  t.same(
    after.aplicadas.map((a: { versao: string }) => a.versao),
    ALL,
  )
  t.ok(
    after.aplicadas.every((a: { em: string }) => !Number.isNaN(Date.parse(a.em))),
    'each with its time',
  )
  t.same(after.pendentes, [])
  t.same(JSON.parse((await pombo(as, ['migrate'])).stdout), { aplicadas: [], total: ALL.length }, 'a second run applies nothing')
})

t.test('0009-0011 run outside a transaction on a schema in use; their indexes are built CONCURRENTLY and valid', async (t) => {
  const m = migrations()
  for (const v of ['0009', '0010', '0011']) {
    const one = m.find((x) => x.version.startsWith(v))
    t.equal(one?.transaction, false, `${v} carries ${NO_TRANSACTION}`)
    t.ok(
      one && statements(one.sql).every((s) => !/CREATE INDEX(?! CONCURRENTLY)/.test(s)),
      `${v}: every index build is CONCURRENTLY`,
    )
  }
  t.ok(m.filter((x) => x.transaction).length > 0, 'the others keep their transaction')
  // A deployment that stopped at 0008 (tables in use): 0009-0011 then take the CONCURRENTLY path.
  const { schema } = freshSchema(t)
  const upTo8 = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  for (const x of m.filter((x) => x.version < '0009')) writeFileSync(join(upTo8, x.version), x.sql)
  await migrate(DATABASE_URL, schema, { dir: upTo8 })
  const rest = await migrate(DATABASE_URL, schema)
  t.same(
    rest.applied,
    ALL.filter((v) => v >= '0009'),
  )
  const idx = await sql<{ name: string; valid: boolean }>(
    `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = ANY($2) ORDER BY 1`,
    [schema, ['exports_building_idx', 'sends_deliveries_to_prune_idx', 'webhook_attempts_at_idx']],
  )
  t.same(idx, [
    { name: 'exports_building_idx', valid: true },
    { name: 'sends_deliveries_to_prune_idx', valid: true },
    { name: 'webhook_attempts_at_idx', valid: true },
  ])
})

t.test('statements: split at a semicolon ending a line; comment-only pieces dropped', async (t) => {
  t.same(
    statements(
      `${NO_TRANSACTION}\n-- why\nALTER TABLE a ADD COLUMN b int;\n-- again\nCREATE INDEX CONCURRENTLY x ON a (b)\n  WHERE b > 0;\n-- end\n`,
    ),
    [
      `${NO_TRANSACTION}\n-- why\nALTER TABLE a ADD COLUMN b int`,
      '-- again\nCREATE INDEX CONCURRENTLY x ON a (b)\n  WHERE b > 0',
    ],
  )
})

t.test('concurrent runs: each migration applied once, the lock released with the run', async (t) => {
  const { schema } = freshSchema(t)
  const runs = await Promise.all([migrate(DATABASE_URL, schema), migrate(DATABASE_URL, schema), migrate(DATABASE_URL, schema)])
  t.same(runs.flatMap((r) => r.applied).sort(), ALL, 'every migration applied by exactly one of the runs')
  const rows = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.schema_migrations`)
  t.equal(rows[0]?.n, ALL.length)
  const held = await sql(
    `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
        AND (classid::bigint << 32 | objid::bigint) = (hashtextextended('pombo:migrate:' || $1::text, 0) & x'ffffffffffffffff'::bigint)`,
    [schema],
  )
  t.same(held, [], 'no session keeps the lock after the runs')
})

t.test('a failed no-transaction migration stays unrecorded; fixed, the next run starts it over and finishes', async (t) => {
  const { schema } = freshSchema(t)
  const dir = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  writeFileSync(join(dir, '0001_t.sql'), 'CREATE TABLE t (a int, b int);\n')
  const bad = `${NO_TRANSACTION}\nALTER TABLE t ADD COLUMN IF NOT EXISTS c int;\nDROP INDEX CONCURRENTLY IF EXISTS t_c_idx;\nCREATE INDEX CONCURRENTLY t_c_idx ON t (nope);\n`
  writeFileSync(join(dir, '0002_idx.sql'), bad)
  await t.rejects(migrate(DATABASE_URL, schema, { dir }), /migration 0002_idx\.sql failed: .*nope/)
  t.same(
    (await sql<{ version: string }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY 1`)).map((r) => r.version),
    ['0001_t.sql'],
  )
  writeFileSync(join(dir, '0002_idx.sql'), bad.replace('(nope)', '(c)'))
  t.same((await migrate(DATABASE_URL, schema, { dir })).applied, ['0002_idx.sql'], 'run again from its start')
  t.same(await sql(`SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 't_c_idx'`, [schema]), [{ '?column?': 1 }])
})

t.test('on an empty schema a no-transaction migration runs in a transaction: a failure leaves nothing behind', async (t) => {
  const { schema } = freshSchema(t)
  const dir = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  writeFileSync(join(dir, '0001_t.sql'), 'CREATE TABLE t (a int);\n')
  writeFileSync(
    join(dir, '0002_idx.sql'),
    `${NO_TRANSACTION}\nALTER TABLE t ADD COLUMN c int;\nCREATE INDEX CONCURRENTLY t_c_idx ON t (nope);\n`,
  )
  await t.rejects(migrate(DATABASE_URL, schema, { dir }), /migration 0002_idx\.sql failed/)
  t.same(
    await sql(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 't' ORDER BY 1`, [
      schema,
    ]),
    [{ column_name: 'a' }],
    'the column of the failed migration rolled back with it',
  )
  writeFileSync(
    join(dir, '0002_idx.sql'),
    `${NO_TRANSACTION}\nALTER TABLE t ADD COLUMN c int;\nCREATE INDEX CONCURRENTLY t_c_idx ON t (c);\n`,
  )
  t.same((await migrate(DATABASE_URL, schema, { dir })).applied, ['0002_idx.sql'])
})

t.test('serve refuses a schema newer than it knows, and one behind it without PM_MIGRATE_ON_START', async (t) => {
  const { schema, as } = freshSchema(t)
  await migrate(DATABASE_URL, schema)
  await sql(`INSERT INTO ${schema}.schema_migrations (version) VALUES ('9999_from_the_future.sql')`)
  const env = { PORT: '0', PM_DASHBOARD_PORT: '0', PM_OPS_PORT: '0', PM_GRPC_PORT: '0' }
  refused(t, await pombo(as, ['serve', '--roles', 'api'], env), /schema is newer than this release .*9999_from_the_future\.sql/)
  const status = JSON.parse((await pombo(as, ['migrate', '--status'])).stdout)
  t.same(status.desconhecidas, ['9999_from_the_future.sql'], '--status names it')
  const older = await pombo(as, ['migrate'])
  t.equal(older.code, 2, 'an older release does not migrate beneath a newer one')
  t.match(older.stderr, /^pombo: the database schema is newer than this release .*9999_from_the_future\.sql[^\n]*\n$/)

  await sql(`DELETE FROM ${schema}.schema_migrations WHERE version IN ('9999_from_the_future.sql', $1)`, [ALL.at(-1)])
  refused(
    t,
    await pombo(as, ['serve', '--roles', 'api'], { ...env, PM_MIGRATE_ON_START: '0' }),
    /schema is behind this release \(1 pending: .*\): run `pombo migrate`/,
  )
})

t.test('0019 on a database with rows: they read back under the English names', async (t) => {
  const { schema } = freshSchema(t)
  const before = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  for (const x of migrations().filter((x) => x.version < '0019')) writeFileSync(join(before, x.version), x.sql)
  await migrate(DATABASE_URL, schema, { dir: before })
  const [org, app, dest, user, camp, d1, d2] = [1, 2, 3, 4, 5, 6, 7].map((i) => `00000000-0000-4000-8000-00000000000${i}`)
  const def = { nome: 'Volta', alvo_tipo: 'todos', alvo: [], conteudo: { pt: { titulo: 'Oi' } } }
  const recent = new Date(Date.now() - 3_600_000)
  await inSchema(
    schema,
    `INSERT INTO orgs (id, plan, nome) VALUES ('${org}', 'pro', 'Org');
     INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em, confirm_modo)
       VALUES ('${app}', '${org}', 'App', 60000, '\\x00', now(), 'webhook');
     INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, notif_permissoes, last_active, created_at, updated_at)
       VALUES ('${app}', '${d1}', 'tok-1', 1, false, 'fcm', 0, now(), now(), now()),
              ('${app}', '${d2}', 'tok-2', 1, false, 'fcm', 1, now(), now(), now());
     INSERT INTO inapp_campaigns (app_id, id, estado, nome, alvo_tipo, definicao, prioridade, cap_total, usa_config_notif, criado_em, atualizado_em)
       VALUES ('${app}', '${camp}', 'ativa', 'Volta', 'todos', '${JSON.stringify(def)}', 100, 1, true, now(), now());
     INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, recebido_em)
       VALUES ('${app}', '${camp}', '${d1}', 1, 1, '${recent.toISOString()}', '2026-01-02T03:04:05Z');
     INSERT INTO inapp_served (app_id, campanha_id, device_id, em) VALUES ('${app}', '${camp}', '${d1}', '2026-01-02T03:00:00Z');
     INSERT INTO inapp_reactivations (app_id, campanha_id, device_id, em) VALUES ('${app}', '${camp}', '${d2}', '2026-01-02T04:00:00Z');
     INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, next_at, created_at)
       VALUES ('${dest}', '${app}', 'https://example.com/h', '\\x00', 0, now(), now());
     INSERT INTO webhook_attempts (destination_id, event_seq, n, entrega_id, result, at) VALUES ('${dest}', 1, 1, '${d2}', 'ok', now());
     INSERT INTO dashboard_users (id, email, org_id, operador, senha_hash, created_at)
       VALUES ('${user}', 'op@example.com', NULL, true, 'scrypt$x', now());`,
  )

  // 0019 first; the migrations after it follow.
  t.same((await migrate(DATABASE_URL, schema)).applied.slice(0, 1), ['0019_english_columns.sql'])
  const one = (q: string) => inSchema(schema, q)
  t.same(await one('SELECT confirm_mode FROM apps'), [{ confirm_mode: 'webhook' }])
  t.same(await one('SELECT definition, uses_notification_settings FROM inapp_campaigns'), [
    { definition: def, uses_notification_settings: true },
  ])
  t.same(await one('SELECT received_at FROM inapp_events'), [{ received_at: new Date('2026-01-02T03:04:05Z') }])
  t.same(await one('SELECT served_at FROM inapp_served'), [{ served_at: new Date('2026-01-02T03:00:00Z') }])
  t.same(await one('SELECT device_id, reactivated_at FROM inapp_reactivations'), [
    { device_id: d2, reactivated_at: new Date('2026-01-02T04:00:00Z') },
  ])
  t.same(await one('SELECT attempt_id FROM webhook_attempts'), [{ attempt_id: d2 }])
  t.same(await one('SELECT operator, password_hash FROM dashboard_users'), [{ operator: true, password_hash: 'scrypt$x' }])
  t.same(
    await sql(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = $1 AND column_name IN ('confirm_modo', 'definicao', 'usa_config_notif', 'recebido_em', 'em', 'entrega_id', 'operador', 'senha_hash')
          -- A partition's columns are its table's (inapp_events is partitioned since 0029).
          AND NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = table_schema AND c.relname = table_name AND c.relispartition)
        ORDER BY 1, 2`,
      [schema],
    ),
    [
      { table_name: 'audit_log', column_name: 'em' },
      { table_name: 'inapp_events', column_name: 'em' },
    ],
    'no old name is left (inapp_events.em and audit_log.em are the wire field `em`)',
  )
  await t.rejects(one(`UPDATE apps SET confirm_mode = 'bogus'`), /apps_confirm_mode_check/, 'the check follows, renamed')

  // The reactivation trigger's function names two renamed columns: replaced in the same migration, it still stamps.
  await one(`UPDATE devices SET notif_permissoes = 1, updated_at = now() WHERE id = '${d1}'`)
  t.same(
    (await one(`SELECT device_id FROM inapp_reactivations ORDER BY device_id`)).map((r) => r.device_id),
    [d1, d2],
    'a device allowing notifications again is stamped',
  )
})

t.test("a migrated schema's columns are the ones the naming test reads from the migrations, and follow its rule", async (t) => {
  const { schema } = freshSchema(t)
  await migrate(DATABASE_URL, schema)
  const live = new Map<string, string[]>()
  const rows = await sql<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = $1 AND table_name <> 'schema_migrations' ORDER BY 1, 2`,
    [schema],
  )
  for (const r of rows) live.set(r.table_name, [...(live.get(r.table_name) ?? []), r.column_name])
  const parsed = schemaColumns(migrations().map((m) => m.sql))
  // A partition has its table's columns by construction: the rule is checked on the tables.
  const partitions = await sql<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relispartition`,
    [schema],
  )
  for (const p of partitions) {
    live.delete(p.name)
    parsed.delete(p.name)
  }
  const sorted = (m: Map<string, string[]>) => Object.fromEntries([...m].map(([k, v]) => [k, [...v].sort()]).sort())
  t.same(sorted(live), sorted(parsed))
  const md = readFileSync(join(__dirname, '..', '..', NAMING_DOC), 'utf8')
  t.same(columnBreaches(live, listedColumns(md), wireWords()), [])
})
