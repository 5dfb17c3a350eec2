// The run's pool of migrated test schemas (test/helpers/schema-pool.ts): a schema a service used is handed to the
// next one only when it is equal to a freshly migrated schema, catalog and rows alike; otherwise it is dropped.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import t, { type Test } from 'tap'
import { migrate } from '../../src/db/migrate'
import { BLOAT_ROWS, claimSchema, fingerprint, recycleSchema, stamps } from '../helpers/schema-pool'
import { DATABASE_URL, PLATFORM_KEY, startService } from '../helpers/service'

const db = new pg.Client({ connectionString: DATABASE_URL })

t.before(async () => {
  await db.connect()
  // This file's own pool, whatever run it is part of: what it claims and drops is its own.
  const { openSchemaPool } = await import('../../scripts/test-schema-pool.mjs')
  process.env.PM_TEST_SCHEMA_POOL = await openSchemaPool(DATABASE_URL)
})
t.teardown(async () => {
  const { closeSchemaPool } = await import('../../scripts/test-schema-pool.mjs')
  await closeSchemaPool(DATABASE_URL, process.env.PM_TEST_SCHEMA_POOL)
  await db.end()
})

/** A receipts day partition, as the service makes them (src/db/partitions.ts). */
const DAY_PARTITION = 'CREATE TABLE receipts_p20000101 PARTITION OF receipts FOR VALUES FROM ($$2000-01-01$$) TO ($$2000-01-02$$)'

const exists = async (schema: string) =>
  (await db.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 1

/** Every table's rows (schema_migrations' times aside), sorted, and every sequence's state: what a test could see. */
async function contents(schema: string): Promise<Record<string, string>> {
  const tables = await db.query<{ t: string }>(
    `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1`,
    [schema],
  )
  const out: Record<string, string> = {}
  for (const { t: table } of tables.rows) {
    const cols = table === 'schema_migrations' ? 'version' : '*'
    const r = await db.query<{ j: string | null }>(
      `SELECT string_agg(j, E'\\n' ORDER BY j) AS j FROM (SELECT row_to_json(x)::text AS j FROM (SELECT ${cols} FROM "${schema}"."${table}") x) y`,
    )
    out[table] = r.rows[0]?.j ?? ''
  }
  const seqs = await db.query<{ name: string; last: string | null }>(
    'SELECT sequencename AS name, last_value::text AS last FROM pg_sequences WHERE schemaname = $1 ORDER BY 1',
    [schema],
  )
  for (const s of seqs.rows) out[`sequence ${s.name}`] = s.last ?? 'not called'
  return out
}

async function freshSchema(t: Test): Promise<string> {
  const schema = `t_fresh_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, schema)
  t.teardown(() => db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return schema
}

t.test('a schema a service used is emptied into the pool equal to a freshly migrated one, and handed out once', async (t) => {
  let used = ''
  await t.test('a service writes across the schema', async (t) => {
    const s = await startService(t)
    used = s.cfg.dbSchema
    const app = await s.createApp()
    const auth = { authorization: `Basic ${app.api_key}` }
    for (let i = 0; i < 5; i++) {
      const r = await s.call('POST', '/api/v1/players', {
        body: { app_id: app.id, device_type: 1, identifier: `token-${i}` },
        headers: auth,
      })
      t.equal(r.status, 200, `device ${i} registered`)
    }
    const send = await s.call('POST', '/api/v1/notifications', {
      body: { app_id: app.id, contents: { en: 'oi' }, included_segments: ['Subscribed Users'] },
      headers: auth,
    })
    t.equal(send.status, 200, `a send accepted: ${send.text}`)
    const rotated = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, {
      headers: { authorization: `Bearer ${PLATFORM_KEY}` },
    })
    t.equal(rotated.status, 200, 'a key rotated (the audit log has rows)')
    const rows = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices')
    t.equal(rows[0]?.n, 5, 'rows written')
  })
  // The service's teardown emptied its schema back into the pool.
  t.ok(await exists(used), 'the used schema was kept')
  const fresh = await freshSchema(t)
  t.equal(await fingerprint(db, used), await fingerprint(db, fresh), 'its catalog is the migrations’ catalog')
  t.strictSame(await contents(used), await contents(fresh), 'its rows and sequences are a fresh schema’s')

  const first = await claimSchema(DATABASE_URL)
  t.equal(first, used, 'the next claim gets it')
  t.equal(await claimSchema(DATABASE_URL), null, 'and nobody else does while it is claimed')
  t.same(await recycleSchema(DATABASE_URL, used), { pooled: true, reason: null }, 'given back empty, it is pooled again')
  const claims = await Promise.all([claimSchema(DATABASE_URL), claimSchema(DATABASE_URL), claimSchema(DATABASE_URL)])
  t.same(
    claims.filter((c) => c !== null),
    [used],
    'three claims at once: one gets it',
  )
  await recycleSchema(DATABASE_URL, used)
})

t.test('a schema whose catalog a test changed is dropped, not pooled', async (t) => {
  const changes = [
    'CREATE TABLE probe (v int)',
    'CREATE SEQUENCE probe_seq',
    `CREATE FUNCTION probe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
    'ALTER TABLE devices ADD COLUMN probe int',
    'CREATE INDEX probe_idx ON devices (language)',
    'ALTER TABLE devices ALTER COLUMN language SET DEFAULT $$pt$$',
    // A partition the service could have made, and a change besides: dropping the partition is not enough.
    `${DAY_PARTITION}; ALTER TABLE devices ADD COLUMN probe int`,
  ]
  for (const [i, change] of changes.entries()) {
    const schema = `t_pool_${randomUUID().slice(0, 8)}`
    await migrate(DATABASE_URL, schema)
    // Every other change is made after the schema was pooled once, and so stamped: the stamp must see it too.
    const stamped = i % 2 === 1
    if (stamped) t.same(await recycleSchema(DATABASE_URL, schema), { pooled: true, reason: null }, 'pooled first')
    await db.query(`SET search_path TO ${schema}; ${change}; SET search_path TO DEFAULT`)
    const r = await recycleSchema(DATABASE_URL, schema)
    t.same(r, { pooled: false, reason: 'its catalog differs from the migrations' }, `${change}${stamped ? ' (stamped)' : ''}`)
    t.notOk(await exists(schema), `dropped after: ${change}`)
  }
})

t.test('partitions the service made are dropped and the schema pooled', async (t) => {
  const tally = (globalThis as { __pmSchemaPool?: { trimmed: number } }).__pmSchemaPool
  const trimmedBefore = tally?.trimmed ?? 0
  const schema = `t_pool_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, schema)
  await db.query(`SET search_path TO ${schema}; ${DAY_PARTITION}; SET search_path TO DEFAULT`)
  t.same(await recycleSchema(DATABASE_URL, schema), { pooled: true, reason: null }, 'pooled')
  t.equal(tally?.trimmed, trimmedBefore + 1, 'after its partition was dropped')
  const left = await db.query(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'receipts_p20000101'`,
    [schema],
  )
  t.equal(left.rowCount, 0, 'the partition is gone')
  t.equal(await fingerprint(db, schema), await fingerprint(db, await freshSchema(t)), 'its catalog is the migrations’ catalog')
  const { now, known } = await stamps(db, schema)
  t.equal(known, now, 'stamped as it is now')
})

t.test('a pooled schema is stamped: back unchanged, its stamp stands for its catalog', async (t) => {
  const tally = (globalThis as { __pmSchemaPool?: { stamped: number } }).__pmSchemaPool
  const schema = `t_pool_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, schema)
  const before = await stamps(db, schema)
  t.equal(before.known, null, 'a schema never pooled has no stamp')
  const stampedBefore = tally?.stamped ?? 0
  t.same(await recycleSchema(DATABASE_URL, schema), { pooled: true, reason: null }, 'pooled')
  t.equal(tally?.stamped, stampedBefore, 'the first time, by its fingerprint')
  const after = await stamps(db, schema)
  t.equal(after.known, after.now, 'and stamped with its catalog as it is')
  t.equal(after.now, before.now, 'emptying it (rows deleted, seeds and sequences put back) changed no catalog row')
  await db.query(`INSERT INTO ${schema}.orgs (id, plan, nome) VALUES (gen_random_uuid(), 'free', 'o')`)
  t.same(await recycleSchema(DATABASE_URL, schema), { pooled: true, reason: null }, 'used and given back')
  t.equal(tally?.stamped, stampedBefore + 1, 'the second time, by its stamp alone')
  // Changes that leave the fingerprint as it was still change the stamp, and are checked again in full.
  await db.query(
    `ALTER TABLE ${schema}.orgs ALTER COLUMN nome SET DEFAULT 'x'; ALTER TABLE ${schema}.orgs ALTER COLUMN nome DROP DEFAULT`,
  )
  t.not((await stamps(db, schema)).now, after.now, 'a default set and dropped again changes the stamp')
  t.same(
    await recycleSchema(DATABASE_URL, schema),
    { pooled: true, reason: null },
    'and the fingerprint, still the migrations’, pools it',
  )
  t.equal(tally?.stamped, stampedBefore + 1, 'by its fingerprint')
})

t.test(`a schema with a table of more than ${BLOAT_ROWS} rows is dropped, not emptied`, async (t) => {
  const schema = `t_pool_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, schema)
  await db.query(
    `INSERT INTO ${schema}.orgs (id, plan, nome) SELECT gen_random_uuid(), 'free', 'o' FROM generate_series(1, ${BLOAT_ROWS + 1}) g`,
  )
  const r = await recycleSchema(DATABASE_URL, schema)
  t.equal(r.pooled, false, 'not pooled')
  t.match(r.reason, /^orgs held 5001 rows$/, 'the reason names the table')
  t.notOk(await exists(schema), 'dropped')
  const small = `t_pool_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, small)
  await db.query(
    `INSERT INTO ${small}.orgs (id, plan, nome) SELECT gen_random_uuid(), 'free', 'o' FROM generate_series(1, ${BLOAT_ROWS}) g`,
  )
  t.same(await recycleSchema(DATABASE_URL, small), { pooled: true, reason: null }, `${BLOAT_ROWS} rows are emptied`)
  t.equal((await db.query(`SELECT count(*)::int AS n FROM ${small}.orgs`)).rows[0].n, 0, 'and the table is empty')
  const pooled = await db.query('SELECT free FROM public.pombo_test_schema_pool WHERE schema = $1', [small])
  t.same(pooled.rows, [{ free: true }], 'and free in the pool')
})

t.test('without a pool, a schema is dropped as before', async (t) => {
  const run = process.env.PM_TEST_SCHEMA_POOL
  t.teardown(() => {
    process.env.PM_TEST_SCHEMA_POOL = run
  })
  process.env.PM_TEST_SCHEMA_POOL = '0'
  t.equal(await claimSchema(DATABASE_URL), null, 'nothing to claim')
  const schema = `t_pool_${randomUUID().slice(0, 8)}`
  await migrate(DATABASE_URL, schema)
  t.same(await recycleSchema(DATABASE_URL, schema), { pooled: false, reason: 'no pool' })
  t.notOk(await exists(schema), 'dropped')
})

t.test('the system catalogs are vacuumed when bloated, and left alone otherwise', async (t) => {
  const { vacuumCatalogs } = await import('../../scripts/test-schema-pool.mjs')
  t.equal(await vacuumCatalogs(db, Number.MAX_SAFE_INTEGER), null, 'under the threshold: nothing done')
  t.match(
    await vacuumCatalogs(db, 0),
    /^vacuumed the system catalogs( \(FULL\))?: pg_attribute had \d+ dead rows$/,
    'over it: vacuumed, and said so',
  )
  const lock = await db.query(`SELECT current_setting('lock_timeout') AS v`)
  t.equal(lock.rows[0].v, '0', 'the session is left as it was')
})

t.test(
  'during a run the catalogs are vacuumed once their dead rows pass the bound; a failure is logged, not thrown',
  async (t) => {
    const { vacuumWhileRunning } = await import('../../scripts/test-schema-pool.mjs')
    const count = async () =>
      Number((await db.query(`SELECT vacuum_count FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'`)).rows[0]?.vacuum_count)
    // Dead catalog rows of our own: a table made and dropped.
    const scratch = `vac_${randomUUID().slice(0, 8)}`
    await db.query(`CREATE TABLE public.${scratch} (a int, b int, c int)`)
    await db.query(`DROP TABLE public.${scratch}`)
    const before = await count()
    const logged: string[] = []
    const stop = vacuumWhileRunning(DATABASE_URL, (m: string) => logged.push(m), { everyMs: 50, bloated: 1 })
    try {
      const deadline = Date.now() + 30_000
      while ((await count()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      t.ok((await count()) > before, 'pg_attribute was vacuumed')
    } finally {
      stop()
    }
    t.same(logged, [], 'nothing went wrong')

    const failed: string[] = []
    const stopBad = vacuumWhileRunning('postgres://nobody@127.0.0.1:1/none', (m: string) => failed.push(m), { everyMs: 20 })
    const deadline = Date.now() + 10_000
    while (failed.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    stopBad()
    t.match(failed[0], /^could not vacuum the system catalogs during the run: /, 'an unreachable Postgres is logged')
  },
)
