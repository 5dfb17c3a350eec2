// Migrated schemas used again across a test run. A test service's schema used to be migrated from nothing and
// dropped at the end (31 migrations, then DROP SCHEMA … CASCADE): in a full run that was the largest single share of
// Postgres' work, about 1.6 s of it per service under load, and the catalog churn made every other backend reload its
// caches. Under `npm test` (PM_TEST_SCHEMA_POOL names the run, scripts/test.mjs) a service's schema is instead
// emptied when the service stops, and handed to the next service of the run that asks for a fresh one.
//
// Emptied means made equal to a freshly migrated schema, and it is checked, not assumed (test/integration/
// schema-pool.test.ts compares the two):
//   - the catalog (relations, columns, defaults, indexes, constraints, triggers, functions, sequences) must match the
//     one the run's migrations made, byte for byte with the schema's name taken out: a test that made a table,
//     trigger or function of its own, or a partition the service created (a receipts day), gets its schema dropped;
//   - every table's rows are deleted (schema_migrations aside), without firing triggers or foreign keys
//     (session_replication_role = replica: the audit log's append-only trigger would refuse it), and the rows the
//     migrations seeded are put back; every sequence is set back to where the migrations left it;
//   - a table that held more than BLOAT_ROWS rows gets its schema dropped: its dead rows would slow the next test;
//   - partitions the service made (receipts' days, in-app events' weeks) are dropped first, then the catalog compared.
// The catalog comparison renders every column, default, index, constraint and trigger, and was the largest single
// share of Postgres' CPU in a full run. A schema that matched is stamped (`stamp`: the physical identity of those
// catalog rows); when it comes back with the same stamp, no catalog row of it was added, changed or removed since,
// so it still matches, and only the stamp is read.
// Anything unexpected while emptying drops the schema, as before. Without PM_TEST_SCHEMA_POOL (tap run directly)
// every service migrates a schema of its own and drops it, as before; scripts/test.mjs drops the run's schemas at
// its end (and those of runs that are gone at its start).
import { createHash, randomBytes } from 'node:crypto'
import pg from 'pg'
import { migrate, migrations } from '../../src/db/migrate'

// The pool's two tables are made by scripts/test-schema-pool.mjs before any test runs (one CREATE, not one per process).
const POOL = 'public.pombo_test_schema_pool'
const REFERENCE = 'public.pombo_test_schema_reference'
/** Rows in one table above which a used schema is dropped rather than emptied. */
export const BLOAT_ROWS = 5_000

/** The run whose pool this process uses (set by scripts/test.mjs); null: no pool. */
export const poolRun = (): string | null => {
  const run = process.env.PM_TEST_SCHEMA_POOL
  return run && run !== '0' ? run : null
}

/** The migrations this checkout carries: a pooled schema is only handed to a run with the same ones. */
let signatureMemo: string | null = null
export function migrationsSignature(): string {
  if (signatureMemo) return signatureMemo
  const h = createHash('sha256')
  for (const m of migrations()) h.update(m.version).update('\0').update(m.sql).update('\0')
  signatureMemo = h.digest('hex').slice(0, 16)
  return signatureMemo
}

/** What a schema's catalog holds, as one text with the schema's own name replaced: equal texts, equal catalogs. */
export async function fingerprint(c: pg.ClientBase, schema: string): Promise<string> {
  const r = await c.query<{ f: string | null }>(
    `WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = $1),
     rels AS (SELECT c.oid, c.relname, c.relkind FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM ns)),
     parts AS (
       SELECT 'rel ' || relname || ' ' || relkind::text AS x FROM rels
       UNION ALL
       SELECT 'col ' || r.relname || '.' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
              || ' ' || a.attnotnull || ' ' || a.attisdropped || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
         FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0
         LEFT JOIN pg_attrdef d ON d.adrelid = r.oid AND d.adnum = a.attnum
       UNION ALL
       SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN rels r ON r.oid = i.indexrelid
       UNION ALL
       SELECT 'con ' || r.relname || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
         FROM pg_constraint co JOIN rels r ON r.oid = co.conrelid
       UNION ALL
       SELECT 'trg ' || pg_get_triggerdef(tg.oid) || ' ' || tg.tgenabled::text
         FROM pg_trigger tg JOIN rels r ON r.oid = tg.tgrelid WHERE NOT tg.tgisinternal
       UNION ALL
       SELECT 'fn ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc)
         FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM ns)
       UNION ALL
       SELECT 'seq ' || r.relname || ' ' || s.seqstart || ' ' || s.seqincrement || ' ' || s.seqmin || ' ' || s.seqmax
         FROM pg_sequence s JOIN rels r ON r.oid = s.seqrelid
       UNION ALL
       SELECT 'type ' || t.typname FROM pg_type t WHERE t.typnamespace = (SELECT oid FROM ns) AND t.typtype <> 'c'
     )
     SELECT string_agg(replace(x, $1 || '.', '<schema>.'), E'\\n' ORDER BY x) AS f FROM parts`,
    [schema],
  )
  return r.rows[0]?.f ?? ''
}

/**
 * The physical identity (xmin and ctid) of every catalog row the fingerprint reads, as one digest. Any DDL writes a
 * new row version (a new xmin and ctid) or removes one, so an equal stamp means the same rows, and the same
 * fingerprint; a different stamp only means the fingerprint must be taken again (VACUUM FULL of a catalog moves
 * rows without changing them). In-place updates (a table's page counts, relhasindex) keep a row's identity, and
 * the fingerprint reads none of those fields.
 */
const STAMP = `WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = $1),
     rels AS (SELECT c.oid, c.xmin, c.ctid FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM ns)),
     ids AS (
       SELECT 'c' AS k, xmin, ctid FROM rels
       UNION ALL SELECT 'a', a.xmin, a.ctid FROM pg_attribute a JOIN rels r ON a.attrelid = r.oid AND a.attnum > 0
       UNION ALL SELECT 'd', d.xmin, d.ctid FROM pg_attrdef d JOIN rels r ON d.adrelid = r.oid
       UNION ALL SELECT 'i', i.xmin, i.ctid FROM pg_index i JOIN rels r ON r.oid = i.indexrelid
       UNION ALL SELECT 'o', co.xmin, co.ctid FROM pg_constraint co JOIN rels r ON r.oid = co.conrelid
       UNION ALL SELECT 't', tg.xmin, tg.ctid FROM pg_trigger tg JOIN rels r ON r.oid = tg.tgrelid
       UNION ALL SELECT 'p', p.xmin, p.ctid FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM ns)
       UNION ALL SELECT 's', s.xmin, s.ctid FROM pg_sequence s JOIN rels r ON r.oid = s.seqrelid
       UNION ALL SELECT 'y', y.xmin, y.ctid FROM pg_type y WHERE y.typnamespace = (SELECT oid FROM ns)
     )
     SELECT md5(string_agg(k || xmin::text || ctid::text, ',' ORDER BY k, ctid)) FROM ids`

/** The schema's stamp (STAMP), and the one it had when it last matched the reference (null: never, in this run). */
export async function stamps(c: pg.ClientBase, schema: string): Promise<{ now: string; known: string | null }> {
  const r = await c.query<{ now: string; known: string | null }>(
    `SELECT (${STAMP}) AS now, (SELECT stamp FROM ${POOL} WHERE schema = $1) AS known`,
    [schema],
  )
  return { now: r.rows[0]?.now ?? '', known: r.rows[0]?.known ?? null }
}

interface Reference {
  fingerprint: string
  /** Rows the migrations left in tables (schema_migrations aside), as JSON arrays by table. */
  seeds: Record<string, unknown[]>
  /** Where the migrations left each sequence. */
  sequences: Array<{ name: string; last: string | null; called: boolean }>
}

async function tables(c: pg.ClientBase, schema: string): Promise<string[]> {
  const r = await c.query<{ t: string }>(
    `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations' ORDER BY 1`,
    [schema],
  )
  return r.rows.map((x) => x.t)
}

async function sequences(c: pg.ClientBase, schema: string): Promise<Reference['sequences']> {
  const r = await c.query<{ name: string; last: string | null; called: boolean }>(
    `SELECT sequencename AS name, last_value::text AS last, last_value IS NOT NULL AS called
       FROM pg_sequences WHERE schemaname = $1 ORDER BY 1`,
    [schema],
  )
  return r.rows
}

const ident = (s: string): string => `"${s.replaceAll('"', '""')}"`

/** The reference of this checkout's migrations: made once per signature from a schema migrated for it. */
async function reference(c: pg.ClientBase, url: string): Promise<Reference> {
  const sig = migrationsSignature()
  const found = await c.query<Reference>(`SELECT fingerprint, seeds, sequences FROM ${REFERENCE} WHERE signature = $1`, [sig])
  if (found.rows[0]) return found.rows[0]
  const schema = `t_ref_${randomBytes(5).toString('hex')}`
  try {
    await migrate(url, schema)
    const seeds: Record<string, unknown[]> = {}
    for (const t of await tables(c, schema)) {
      const rows = await c.query<{ j: unknown[] | null }>(`SELECT json_agg(x) AS j FROM ${ident(schema)}.${ident(t)} x`)
      if (rows.rows[0]?.j) seeds[t] = rows.rows[0].j
    }
    const ref: Reference = { fingerprint: await fingerprint(c, schema), seeds, sequences: await sequences(c, schema) }
    await c.query(
      `INSERT INTO ${REFERENCE} (signature, fingerprint, seeds, sequences) VALUES ($1, $2, $3, $4)
       ON CONFLICT (signature) DO NOTHING`,
      [sig, ref.fingerprint, JSON.stringify(ref.seeds), JSON.stringify(ref.sequences)],
    )
    return ref
  } finally {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  }
}

/**
 * The pool's bookkeeping goes through one connection per test process, opened at first use and kept. A new Postgres
 * connection is a fork of the server, ~20–35 ms of its CPU on the machines the suite runs on, and every service used
 * to open two of them (its claim, then its schema's recycling): about a thousand in a full run. pg's Pool of one does
 * the rest: calls take turns on it, it never closes for idleness, its socket holds the process open only while a
 * call runs (allowExitOnIdle), and a call that fails destroys the connection (it may be in a failed transaction, or
 * gone, as when a test ends every backend), so the next call opens another.
 */
let kept: { url: string; pool: pg.Pool } | null = null

async function withClient<T>(url: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  if (kept?.url !== url) {
    void kept?.pool.end().catch(() => {})
    kept = { url, pool: new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 0, allowExitOnIdle: true }) }
    kept.pool.on('error', () => {}) // an idle connection ended by the server: the pool drops it
  }
  const c = await kept.pool.connect()
  try {
    const out = await fn(c)
    c.release()
    return out
  } catch (err) {
    c.release(err as Error)
    throw err
  }
}

/** What this process's services did with schemas, for PM_TEST_PROFILE (test/helpers/children.mjs). */
const tally = { claimed: 0, pooled: 0, stamped: 0, trimmed: 0, dropped: {} as Record<string, number> }
;(globalThis as { __pmSchemaPool?: typeof tally }).__pmSchemaPool = tally

/** A free schema of this run's pool for these migrations, now this process's; null when none is free. */
export async function claimSchema(url: string): Promise<string | null> {
  const run = poolRun()
  if (!run) return null
  return withClient(url, async (c) => {
    const r = await c.query<{ schema: string }>(
      `UPDATE ${POOL} SET free = false
        WHERE schema = (SELECT schema FROM ${POOL} WHERE run = $1 AND signature = $2 AND free
                         LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING schema`,
      [run, migrationsSignature()],
    )
    if (r.rows[0]) tally.claimed++
    return r.rows[0]?.schema ?? null
  })
}

/** The schema's partitions that the reference does not have (its relations are the fingerprint's `rel` lines). */
async function addedPartitions(c: pg.ClientBase, schema: string, ref: Reference): Promise<string[]> {
  const known = new Set(
    ref.fingerprint
      .split('\n')
      .filter((l) => l.startsWith('rel '))
      .map((l) => l.split(' ')[1]),
  )
  const r = await c.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relispartition AND c.relkind IN ('r', 'p') ORDER BY 1`,
    [schema],
  )
  return r.rows.map((x) => x.name).filter((name) => !known.has(name))
}

/** The reference and the tables to empty, read once per process: every schema that matches it has the same. */
let memo: { sig: string; ref: Reference; tables: string[] | null } | null = null

/** A used schema emptied for the next service (`stamp`: its catalog's, to keep), or why it cannot be (`reason`). */
type Emptied = { reason: null; stamp: string } | { reason: string; stamp: null }

/** Empties a used schema for the next service. Three or four round trips whatever the schema holds: its stamp (and
 *  its fingerprint when the stamp is not the one it was pooled with), its deletes, then its seeds and sequences put
 *  back. */
export async function emptySchema(c: pg.ClientBase, url: string, schema: string): Promise<Emptied> {
  const sig = migrationsSignature()
  if (memo?.sig !== sig) memo = { sig, ref: await reference(c, url), tables: null }
  const ref = memo.ref
  const refused = (reason: string): Emptied => ({ reason, stamp: null })
  const table = (t: string) => `${ident(schema)}.${ident(t)}`
  let { now, known } = await stamps(c, schema)
  if (now === known) tally.stamped++
  else if ((await fingerprint(c, schema)) !== ref.fingerprint) {
    // Day and week partitions the service made (receipts, in-app events) are the usual difference: without them the
    // schema may be the migrations' again, which the fingerprint then says.
    const added = await addedPartitions(c, schema, ref)
    if (added.length === 0) return refused('its catalog differs from the migrations')
    await c.query(added.map((p) => `DROP TABLE ${table(p)}`).join(';\n'))
    if ((await fingerprint(c, schema)) !== ref.fingerprint) return refused('its catalog differs from the migrations')
    tally.trimmed++
    now = (await stamps(c, schema)).now
  }
  // Read from the first schema that matched the reference: the same tables as every other that does.
  memo.tables ??= await tables(c, schema)
  const names = memo.tables
  await c.query('BEGIN')
  try {
    // One statement per table in one query: each answers its own row count.
    const deleted = (await c.query(
      ['SET LOCAL session_replication_role = replica', ...names.map((t) => `DELETE FROM ${table(t)}`)].join(';\n'),
    )) as unknown as Array<{ rowCount: number | null }>
    const over = names.findIndex((_, i) => (deleted[i + 1]?.rowCount ?? 0) > BLOAT_ROWS)
    if (over >= 0) {
      await c.query('ROLLBACK')
      return refused(`${names[over]} held ${deleted[over + 1]?.rowCount} rows`)
    }
    const restore = [
      ...Object.entries(ref.seeds).map(
        ([t, rows]) =>
          `INSERT INTO ${table(t)} SELECT * FROM json_populate_recordset(NULL::${table(t)}, ${c.escapeLiteral(JSON.stringify(rows))})`,
      ),
      ...ref.sequences.map((q) => {
        const seq = c.escapeLiteral(`${ident(schema)}.${ident(q.name)}`)
        return q.called
          ? `SELECT setval(${seq}::regclass, ${c.escapeLiteral(String(q.last))}::bigint, true)`
          : `SELECT setval(${seq}::regclass, (SELECT seqstart FROM pg_sequence WHERE seqrelid = ${seq}::regclass), false)`
      }),
    ]
    if (restore.length > 0) await c.query(restore.join(';\n'))
    await c.query('COMMIT')
    return { reason: null, stamp: now }
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {})
    return refused((err as Error).message)
  }
}

/**
 * Gives a stopped service's schema back: emptied into the run's pool, or dropped (no pool, or it could not be
 * emptied). `pooled` says which; `reason` why it was dropped.
 */
export async function recycleSchema(url: string, schema: string): Promise<{ pooled: boolean; reason: string | null }> {
  const run = poolRun()
  return withClient(url, async (c) => {
    const { reason, stamp } = run
      ? await emptySchema(c, url, schema).catch((err: Error): Emptied => ({ reason: err.message, stamp: null }))
      : { reason: 'no pool', stamp: null }
    if (reason === null) {
      await c.query(
        `INSERT INTO ${POOL} (schema, run, signature, free, stamp) VALUES ($1, $2, $3, true, $4)
         ON CONFLICT (schema) DO UPDATE SET free = true, stamp = excluded.stamp`,
        [schema, run, migrationsSignature(), stamp],
      )
      tally.pooled++
      return { pooled: true, reason }
    }
    // A reason without its counts and names, so the same cause adds up.
    const cause = reason.replace(/\d+/g, 'N')
    tally.dropped[cause] = (tally.dropped[cause] ?? 0) + 1
    await c.query(`DELETE FROM ${POOL} WHERE schema = $1`, [schema]).catch(() => {})
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    return { pooled: false, reason }
  })
}
