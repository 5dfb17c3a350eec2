// Distribution-ready schema (issue 32, point 5; docs/scaling.md): in a freshly migrated schema, read from the
// catalog, every tenant table's primary key and unique indexes start with its tenant column (src/db/tenancy.ts), and
// every foreign key between tenant tables carries it, so each table could be distributed by that column unchanged;
// every other table is named global there. The same rule finds the breaches of a table made wrong on purpose. Then
// 0025-0027 on a database in use (stopped at 0024, with rows): the keys are swapped, the rows kept, the new column
// filled, every index valid, and the builds of 0025 CONCURRENTLY outside a transaction.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { migrate, migrations, statements } from '../../src/db/migrate'
import { GLOBAL_TABLES, TENANT_COLUMN, tenantColumn } from '../../src/db/tenancy'
import { DATABASE_URL } from '../helpers/service'

async function sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  try {
    return (await c.query<R>(text, params)).rows
  } finally {
    await c.end()
  }
}

function freshSchema(t: Test): string {
  const schema = `ten_${randomBytes(4).toString('hex')}`
  t.teardown(() => sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return schema
}

/** Which tenants' tables may name one another in a foreign key: an app's, or an organisation's own. */
const group = (column: string): string => (column === 'org_id' ? 'org' : 'app')

/** Every way the schema's tables break the rule, one line each (empty: the schema is distribution-ready). */
async function breaches(schema: string): Promise<string[]> {
  const tables = await sql<{ t: string; cols: string[]; notnull: string[] }>(
    `SELECT c.relname AS t,
            array_agg(a.attname::text ORDER BY a.attnum) AS cols,
            array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attnotnull) AS notnull
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      GROUP BY c.relname ORDER BY 1`,
    [schema],
  )
  // Unique indexes (those of primary keys and unique constraints among them): their columns in order.
  const uniques = await sql<{ t: string; idx: string; primary: boolean; cols: Array<string | null> }>(
    `SELECT c.relname AS t, ic.relname AS idx, i.indisprimary AS primary,
            array(SELECT a.attname::text FROM unnest(i.indkey[0:i.indnkeyatts - 1]) WITH ORDINALITY k(attnum, o)
                    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum ORDER BY k.o) AS cols
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND i.indisunique AND NOT c.relispartition AND NOT ic.relispartition
      ORDER BY 1, 2`,
    [schema],
  )
  const fks = await sql<{ t: string; name: string; ref: string; cols: string[]; refcols: string[] }>(
    `SELECT c.relname AS t, co.conname AS name, r.relname AS ref,
            array(SELECT a.attname::text FROM unnest(co.conkey) WITH ORDINALITY k(n, o)
                    JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.n ORDER BY k.o) AS cols,
            array(SELECT a.attname::text FROM unnest(co.confkey) WITH ORDINALITY k(n, o)
                    JOIN pg_attribute a ON a.attrelid = co.confrelid AND a.attnum = k.n ORDER BY k.o) AS refcols
       FROM pg_constraint co JOIN pg_class c ON c.oid = co.conrelid JOIN pg_class r ON r.oid = co.confrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND co.contype = 'f' AND NOT c.relispartition AND co.conparentid = 0
      ORDER BY 1, 2`,
    [schema],
  )
  const out: string[] = []
  const names = new Set(tables.map((x) => x.t))
  for (const g of Object.keys(GLOBAL_TABLES)) if (!names.has(g)) out.push(`${g}: listed as global, but no such table`)
  for (const tb of Object.keys(TENANT_COLUMN)) if (!names.has(tb)) out.push(`${tb}: listed as a tenant table, but no such table`)
  for (const { t: table, cols, notnull } of tables) {
    const tenant = tenantColumn(table)
    if (tenant === null) continue
    if (!cols.includes(tenant)) {
      out.push(`${table}: no ${tenant} column (a tenant table, or list it in GLOBAL_TABLES with why)`)
      continue
    }
    if (!(notnull ?? []).includes(tenant)) out.push(`${table}: ${tenant} may be null`)
    const own = uniques.filter((u) => u.t === table)
    if (!own.some((u) => u.primary)) out.push(`${table}: no primary key`)
    for (const u of own) {
      if (u.cols[0] !== tenant)
        out.push(
          `${table}: ${u.primary ? 'primary key' : 'unique index'} ${u.idx} (${u.cols.join(', ')}) does not start with ${tenant}`,
        )
    }
  }
  for (const fk of fks) {
    const from = tenantColumn(fk.t)
    const to = tenantColumn(fk.ref)
    if (to === null) continue // to a reference table: allowed from anywhere
    if (from === null) {
      out.push(`${fk.t}: global, but its foreign key ${fk.name} names the tenant table ${fk.ref}`)
      continue
    }
    const i = fk.cols.indexOf(from)
    if (group(from) !== group(to))
      out.push(`${fk.t}: foreign key ${fk.name} joins an ${group(from)} table to an ${group(to)} table`)
    else if (i < 0 || fk.refcols[i] !== to) {
      out.push(
        `${fk.t}: foreign key ${fk.name} (${fk.cols.join(', ')}) -> ${fk.ref} (${fk.refcols.join(', ')}) does not carry ${from}`,
      )
    }
  }
  return out
}

t.test('every table of a migrated schema is a tenant table keyed by its tenant, or named global', async (t) => {
  const schema = freshSchema(t)
  await migrate(DATABASE_URL, schema)
  t.same(await breaches(schema), [], 'no table breaks the rule')
  // Not an empty pass: the rule saw the tables it is about.
  const keyed = await sql<{ t: string; def: string }>(
    `SELECT c.relname AS t, pg_get_constraintdef(co.oid) AS def FROM pg_constraint co JOIN pg_class c ON c.oid = co.conrelid
      WHERE c.relnamespace = $1::regnamespace AND co.contype = 'p'
        AND c.relname IN ('deliveries', 'receipts', 'webhook_attempts', 'inapp_served', 'app_keys', 'exports')
      ORDER BY 1`,
    [schema],
  )
  t.same(keyed, [
    { t: 'app_keys', def: 'PRIMARY KEY (app_id, kid)' },
    { t: 'deliveries', def: 'PRIMARY KEY (app_id, send_id, device_id)' },
    { t: 'exports', def: 'PRIMARY KEY (app_id, token_hash)' },
    { t: 'inapp_served', def: 'PRIMARY KEY (app_id, campanha_id, device_id)' },
    { t: 'receipts', def: 'PRIMARY KEY (app_id, day, send_id, device_id, kind)' },
    { t: 'webhook_attempts', def: 'PRIMARY KEY (app_id, id)' },
  ])
})

t.test('the rule names each breach of a table made wrong on purpose', async (t) => {
  const schema = freshSchema(t)
  await migrate(DATABASE_URL, schema)
  await sql(
    `SET search_path TO ${schema};
     CREATE TABLE stray (id uuid PRIMARY KEY, note text);
     CREATE UNIQUE INDEX sends_by_id ON sends (id);
     CREATE TABLE bad_children (
       app_id uuid NOT NULL, id uuid NOT NULL, send_id uuid NOT NULL REFERENCES sends (id), code text NOT NULL,
       PRIMARY KEY (id), UNIQUE (code));
     CREATE UNIQUE INDEX bad_children_pair ON bad_children (send_id, app_id);
     ALTER TABLE dashboard_users ADD COLUMN app_id uuid REFERENCES apps (id);
     ALTER TABLE org_mau ADD COLUMN app_id uuid REFERENCES apps (id);`,
  )
  t.same((await breaches(schema)).sort(), [
    'bad_children: foreign key bad_children_send_id_fkey (send_id) -> sends (id) does not carry app_id',
    'bad_children: primary key bad_children_pkey (id) does not start with app_id',
    'bad_children: unique index bad_children_code_key (code) does not start with app_id',
    'bad_children: unique index bad_children_pair (send_id, app_id) does not start with app_id',
    'dashboard_users: global, but its foreign key dashboard_users_app_id_fkey names the tenant table apps',
    'org_mau: foreign key org_mau_app_id_fkey joins an org table to an app table',
    'sends: unique index sends_by_id (id) does not start with app_id',
    'stray: no app_id column (a tenant table, or list it in GLOBAL_TABLES with why)',
  ])
})

t.test('0025-0027 on a database in use: keys swapped, rows kept, attempts given their app, indexes valid', async (t) => {
  const m = migrations()
  const build = m.find((x) => x.version.startsWith('0025'))
  t.equal(build?.transaction, false, '0025 runs outside a transaction')
  t.ok(
    build && statements(build.sql).every((s) => !/CREATE (UNIQUE )?INDEX(?! CONCURRENTLY)/.test(s)),
    '0025: every index build is CONCURRENTLY',
  )
  const schema = freshSchema(t)
  const upTo24 = mkdtempSync(join(tmpdir(), 'pombo-ten-'))
  for (const x of m.filter((x) => x.version < '0025')) writeFileSync(join(upTo24, x.version), x.sql)
  await migrate(DATABASE_URL, schema, { dir: upTo24 })
  const [org, app, dest, send, dev, camp] = [1, 2, 3, 4, 5, 6].map((i) => `00000000-0000-4000-8000-00000000000${i}`)
  await sql(
    `SET search_path TO ${schema};
     INSERT INTO orgs (id, plan, nome) VALUES ('${org}', 'pro', 'Org');
     INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em) VALUES ('${app}', '${org}', 'App', 60000, '\\x00', now());
     INSERT INTO app_keys (kid, app_id, key_hash, sandbox, created_at) VALUES ('abcd1234', '${app}', '\\x00', false, now());
     INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, expansion_done)
       VALUES ('${app}', '${send}', 0, 'segments', '{}', '{}', '{}', 1, false, 1, 3600, now(), false);
     INSERT INTO deliveries (send_id, device_id, app_id, device_type) VALUES ('${send}', '${dev}', '${app}', 1);
     INSERT INTO send_slices (app_id, send_id, slice, lane, lo, hi)
       VALUES ('${app}', '${send}', 0, 0, '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff');
     INSERT INTO receipts (day, send_id, device_id, kind, app_id, at) VALUES (current_date, '${send}', '${dev}', 0, '${app}', now());
     INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at) VALUES ('${app}', '${camp}', '${dev}', now());
     INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, next_at, created_at)
       VALUES ('${dest}', '${app}', 'https://example.com/h', '\\x00', 0, now(), now());
     INSERT INTO webhook_attempts (destination_id, event_seq, n, attempt_id, result, at)
       SELECT '${dest}', i, 1, gen_random_uuid(), 'http', now() FROM generate_series(1, 12000) AS i;
     INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, abandoned_at)
       VALUES ('${dest}', 1, '${app}', 'delivery.received', '{}', 5, now());`,
  )
  const rest = await migrate(DATABASE_URL, schema)
  t.same(
    rest.applied.slice(0, 3),
    ['0025_tenant_keys_build.sql', '0026_tenant_keys_swap.sql', '0027_receipts_tenant_key.sql'],
    'the three run on it',
  )
  t.same(await breaches(schema), [], 'the schema is distribution-ready')
  const rows = async (q: string) => {
    const c = new pg.Client({ connectionString: DATABASE_URL })
    await c.connect()
    try {
      await c.query(`SET search_path TO ${schema}`)
      return (await c.query(q)).rows
    } finally {
      await c.end()
    }
  }
  t.same(await rows(`SELECT count(*)::int AS n, count(app_id)::int AS filled FROM webhook_attempts`), [
    { n: 12000, filled: 12000 },
  ])
  t.same(await rows(`SELECT kid, app_id FROM app_key_kids`), [{ kid: 'abcd1234', app_id: app }], 'the kid is found')
  for (const table of [
    'deliveries',
    'send_slices',
    'receipts',
    'inapp_served',
    'webhook_abandoned',
    'webhook_destinations',
    'app_keys',
  ]) {
    t.same(await rows(`SELECT count(*)::int AS n FROM ${table}`), [{ n: 1 }], `${table} keeps its row`)
  }
  const invalid = await sql(
    `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace AND NOT i.indisvalid`,
    [schema],
  )
  t.same(invalid, [], 'every index valid')
  // The foreign keys hold each attempt to a destination of its own app.
  await t.rejects(
    rows(
      `INSERT INTO webhook_attempts (app_id, destination_id, event_seq, n, attempt_id, result, at)
       VALUES ('${org}', '${dest}', 1, 1, gen_random_uuid(), 'http', now())`,
    ),
    /webhook_attempts_destination_fkey/,
  )
})
