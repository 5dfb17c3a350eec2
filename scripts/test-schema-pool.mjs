// The run's pool of migrated test schemas (test/helpers/schema-pool.ts says how a schema is emptied and checked):
// scripts/test.mjs makes its tables before tap starts, names the run in PM_TEST_SCHEMA_POOL, and drops the run's
// schemas when tap is done; a run that was killed leaves its schemas to the next run, which drops them first.
import pg from 'pg'
import { alive } from './process-alive.mjs'

const POOL = 'public.pombo_test_schema_pool'
const REFERENCE = 'public.pombo_test_schema_reference'

/** Runs `fn` on a connection of its own, closed after (the pool's helpers and test/helpers/schema-pool.ts use it). */
export async function withClient(url, fn) {
  const c = new pg.Client({ connectionString: url })
  c.on('error', () => {})
  await c.connect()
  try {
    return await fn(c)
  } finally {
    await c.end().catch(() => {})
  }
}

async function dropWhere(c, keep) {
  const r = await c.query(`SELECT schema, run FROM ${POOL}`)
  let n = 0
  for (const { schema, run } of r.rows) {
    if (keep(run)) continue
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.query(`DELETE FROM ${POOL} WHERE schema = $1`, [schema])
    n++
  }
  return n
}

/** System catalogs that making and dropping schemas churns. */
const CATALOGS = [
  'pg_attribute',
  'pg_class',
  'pg_depend',
  'pg_type',
  'pg_index',
  'pg_constraint',
  'pg_trigger',
  'pg_attrdef',
  'pg_proc',
  'pg_namespace',
  'pg_sequence',
  'pg_inherits',
  'pg_partitioned_table',
  'pg_statistic',
  'pg_rewrite',
  'pg_description',
  'pg_shdepend',
]
/** Dead rows in pg_attribute above which the catalogs are vacuumed (one run of the suite leaves ~300,000 without the pool). */
const BLOATED = 50_000

/** Vacuums the catalogs when bloated: FULL (their files shrink back) unless another session holds a lock on one for
 *  more than a few seconds, then a plain VACUUM (their space is reused). Returns what it did, for the run's log. */
export async function vacuumCatalogs(c, bloated = BLOATED) {
  const r = await c.query(`SELECT n_dead_tup::int AS dead FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'`)
  const dead = r.rows[0]?.dead ?? 0
  if (dead < bloated) return null
  const list = CATALOGS.map((t) => `pg_catalog.${t}`).join(', ')
  await c.query(`SET lock_timeout = '5s'`)
  try {
    await c.query(`VACUUM (FULL) ${list}`)
    // A FULL vacuum leaves the statistics' dead-row counts as they were; a plain one after it (quick on the compacted
    // tables) sets them right, or the next run would vacuum again for rows that are gone.
    await c.query(`VACUUM ${list}`)
    return `vacuumed the system catalogs (FULL): pg_attribute had ${dead} dead rows`
  } catch {
    await c.query(`VACUUM ${list}`)
    return `vacuumed the system catalogs: pg_attribute had ${dead} dead rows`
  } finally {
    await c.query('RESET lock_timeout')
  }
}

/** Dead rows in pg_attribute above which the catalogs are vacuumed while a run goes on. */
const BLOATED_DURING = 40_000
/** How often the catalogs' dead rows are looked at while a run goes on. */
const EVERY_MS = 45_000

/**
 * A plain VACUUM of the catalogs whenever their dead rows pass BLOATED_DURING while the run goes on. The machine's
 * Postgres may run without autovacuum (CI's does), and a full run leaves ~110,000 dead rows in pg_attribute: every
 * scan of a catalog (the schema pool's stamps, a new backend's caches) walks them. A plain VACUUM takes no lock that
 * DDL waits for. Returns a function that stops it.
 */
export function vacuumWhileRunning(url, log = () => {}, { everyMs = EVERY_MS, bloated = BLOATED_DURING } = {}) {
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    withClient(url, async (c) => {
      await c.query(`SET lock_timeout = '2s'`)
      const r = await c.query(`SELECT n_dead_tup::int AS dead FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'`)
      if ((r.rows[0]?.dead ?? 0) < bloated) return
      await c.query(`VACUUM ${CATALOGS.map((t) => `pg_catalog.${t}`).join(', ')}`)
    })
      .catch((err) => log(`could not vacuum the system catalogs during the run: ${err.message}`))
      .finally(() => {
        busy = false
      })
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}

/** Makes the pool's tables, drops what runs that are gone left in them, and returns this run's name. */
export async function openSchemaPool(url, log = () => {}) {
  const run = `${process.pid}-${Date.now()}`
  await withClient(url, async (c) => {
    // Two runs starting at once may both create: the loser's error is the winner's table.
    for (const ddl of [
      `CREATE TABLE IF NOT EXISTS ${POOL} (schema text PRIMARY KEY, run text NOT NULL, signature text NOT NULL, free boolean NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${REFERENCE} (signature text PRIMARY KEY, fingerprint text NOT NULL, seeds jsonb NOT NULL, sequences jsonb NOT NULL)`,
      // The stamp of a pooled schema's catalog rows when it last matched the reference (test/helpers/schema-pool.ts).
      `ALTER TABLE ${POOL} ADD COLUMN IF NOT EXISTS stamp text`,
    ])
      await c.query(ddl).catch(() => {})
    await dropWhere(c, (r) => alive(Number(r.split('-')[0])))
    const vacuumed = await vacuumCatalogs(c).catch((err) => `could not vacuum the system catalogs: ${err.message}`)
    if (vacuumed) log(vacuumed)
  })
  return run
}

/** Drops the run's pooled schemas. */
export async function closeSchemaPool(url, run, log = () => {}) {
  return withClient(url, async (c) => {
    const n = await dropWhere(c, (r) => r !== run)
    const vacuumed = await vacuumCatalogs(c).catch((err) => `could not vacuum the system catalogs: ${err.message}`)
    if (vacuumed) log(vacuumed)
    return n
  })
}
