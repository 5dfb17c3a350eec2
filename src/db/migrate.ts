// Applies migrations/*.sql in name order, each once, on a session of its own (PM_DATABASE_DIRECT_URL: a
// transaction pooler cannot hold its lock). A run holds a session advisory lock (one per schema) from start to end,
// so concurrent `pombo migrate` / `pombo serve` wait for one another; the wait is a poll of pg_try_advisory_lock,
// never a blocked statement, because a blocked statement holds a snapshot that CREATE INDEX CONCURRENTLY in the
// running migration would wait for (a deadlock the server would break by failing one of them).
//
// A migration runs in one transaction, unless its first line is `-- pombo:no-transaction`: then its statements
// (separated by `;` at a line's end) run one by one, outside any transaction, which CREATE INDEX CONCURRENTLY
// requires (an index built without it blocks every write to its table for the whole build). Such a file must be
// safe to run again from its start: a failed run leaves it unrecorded and the next run starts it over. On an empty
// schema (a new deployment, every test) it runs in a transaction, its builds plain: no one else has the tables yet.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { ConfigError } from '../core/config'
import type { Db } from './pool'
import { query } from './pool'

const DIR = join(__dirname, 'migrations')
export const NO_TRANSACTION = '-- pombo:no-transaction'
/** How often a run waiting for another one's lock tries again. */
const LOCK_POLL_MS = 250

export interface Migration {
  version: string
  sql: string
  transaction: boolean
}

export interface MigrateResult {
  applied: string[]
  total: number
}

export interface MigrationStatus {
  applied: Array<{ version: string; appliedAt: Date }>
  pending: string[]
  /** Applied in the database and unknown to this release: the schema is newer than this code. */
  unknown: string[]
}

/** The migrations this release carries, in order. */
export function migrations(dir = DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((version) => {
      const sql = readFileSync(join(dir, version), 'utf8')
      return { version, sql, transaction: sql.split('\n', 1)[0]?.trim() !== NO_TRANSACTION }
    })
}

/** A no-transaction migration's statements: split at `;` ending a line, except inside a dollar-quoted body (a
 *  procedure's or a DO block's, whose own statements end lines with `;` too); comment-only pieces dropped. */
export function statements(sql: string): string[] {
  const out: string[] = []
  let current = ''
  let quote: string | null = null
  for (const line of sql.split(/\r?\n/)) {
    current += `${line}\n`
    const code = line.replace(/--.*$/, '')
    for (const m of code.matchAll(/\$[A-Za-z_]*\$/g)) {
      if (quote === null) quote = m[0]
      else if (m[0] === quote) quote = null
    }
    if (quote === null && /;[ \t]*$/.test(line)) {
      out.push(current.replace(/;[ \t]*\n$/, ''))
      current = ''
    }
  }
  out.push(current)
  return out.map((s) => s.trim()).filter((s) => s.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('--')))
}

/** The statement as a transaction may run it: `CREATE INDEX CONCURRENTLY` / `DROP INDEX CONCURRENTLY` made plain. */
function withoutConcurrently(sql: string): string {
  return sql.replace(/\b((?:CREATE\s+(?:UNIQUE\s+)?|DROP\s+)INDEX)\s+CONCURRENTLY\b/gi, '$1')
}

/** Opens the direct session with the schema as its search_path (session-level: this session is ours alone). */
async function session(url: string, schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    await client.query(`SET search_path TO ${schema}`)
    return client
  } catch (err) {
    await client.end().catch(() => {})
    throw err
  }
}

async function lock(client: pg.Client, schema: string, signal?: AbortSignal): Promise<void> {
  for (;;) {
    const r = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtextextended('pombo:migrate:' || $1, 0)) AS ok`,
      [schema],
    )
    if (r.rows[0]?.ok) return
    if (signal?.aborted) throw new Error('migration: gave up waiting for another run to finish')
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS))
  }
}

type Applied = Array<{ version: string; applied_at: Date }>

/** The recorded versions; null when nothing was ever migrated in the schema. */
async function appliedVersions(run: (text: string) => Promise<{ rows: unknown[] }>): Promise<Applied | null> {
  const exists = (await run(`SELECT to_regclass('schema_migrations')::text AS t`)).rows as Array<{ t: string | null }>
  if (!exists[0]?.t) return null
  return (await run('SELECT version, applied_at FROM schema_migrations ORDER BY version')).rows as Applied
}

export async function migrate(
  url: string,
  schema: string,
  o: { signal?: AbortSignal; dir?: string } = {},
): Promise<MigrateResult> {
  const client = await session(url, schema)
  try {
    await lock(client, schema, o.signal)
    // Under the lock: two first runs would otherwise race on creating it.
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    )
    const done = new Set((await appliedVersions((t) => client.query(t)))?.map((r) => r.version))
    const all = migrations(o.dir)
    // An older release must not add its migrations beneath a newer one's (its schema may not be what they expect).
    refuseNewer([...done].filter((v) => !all.some((m) => m.version === v)))
    // On an empty schema nothing else can use the tables this run creates: a no-transaction migration then runs in
    // a transaction like the others, its builds without CONCURRENTLY (which would wait for every older snapshot in
    // the whole database, other schemas' included, for nothing).
    const fresh = done.size === 0
    const applied: string[] = []
    for (const m of all) {
      if (done.has(m.version)) continue
      try {
        if (m.transaction || fresh) {
          await client.query('BEGIN')
          try {
            await client.query(m.transaction ? m.sql : statements(m.sql).map(withoutConcurrently).join(';\n'))
            await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version])
            await client.query('COMMIT')
          } catch (err) {
            await client.query('ROLLBACK').catch(() => {})
            throw err
          }
        } else {
          for (const s of statements(m.sql)) await client.query(s)
          await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version])
        }
      } catch (err) {
        throw new Error(`migration ${m.version} failed: ${(err as Error).message}`)
      }
      applied.push(m.version)
    }
    return { applied, total: all.length }
  } finally {
    // Ending the session releases the lock even if the unlock is never read.
    await client.query(`SELECT pg_advisory_unlock(hashtextextended('pombo:migrate:' || $1, 0))`, [schema]).catch(() => {})
    await client.end().catch(() => {})
  }
}

function refuseNewer(unknown: string[]): void {
  if (unknown.length === 0) return
  throw new ConfigError(
    `the database schema is newer than this release (applied, unknown here: ${unknown.join(', ')}): run the release that applied them`,
  )
}

/** What is applied and pending, read without creating or locking anything (`pombo migrate --status`). */
export async function migrationStatus(url: string, schema: string, dir?: string): Promise<MigrationStatus> {
  const client = await session(url, schema)
  try {
    return status(await appliedVersions((t) => client.query(t)), dir)
  } finally {
    await client.end().catch(() => {})
  }
}

function status(rows: Applied | null, dir?: string): MigrationStatus {
  const known = migrations(dir).map((m) => m.version)
  const done = new Set((rows ?? []).map((r) => r.version))
  const knownSet = new Set(known)
  return {
    applied: (rows ?? []).filter((r) => knownSet.has(r.version)).map((r) => ({ version: r.version, appliedAt: r.applied_at })),
    pending: known.filter((v) => !done.has(v)),
    unknown: (rows ?? []).map((r) => r.version).filter((v) => !knownSet.has(v)),
  }
}

/**
 * At `serve`: refuses a schema newer than this release (an applied migration it does not know: its code may not
 * read what the newer one writes), and, when this process did not migrate, a schema behind it.
 */
export async function checkSchema(db: Db, o: { pendingAllowed: boolean; dir?: string }): Promise<void> {
  const s = status(await appliedVersions((t) => query(db, t)), o.dir)
  refuseNewer(s.unknown)
  if (!o.pendingAllowed && s.pending.length > 0) {
    throw new ConfigError(
      `the database schema is behind this release (${s.pending.length} pending: ${s.pending.join(', ')}): run \`pombo migrate\` once, or start with PM_MIGRATE_ON_START=1`,
    )
  }
}
