// The Postgres pools of a process (their sizes: src/db/budget.ts), search_path fixed to Pombo's schema, connection
// failures tagged as a dependency outage so routes answer a named 503.
//
// Behind PgBouncer in transaction mode (PM_PGBOUNCER=transaction) a server connection is lent for one transaction
// at a time, so nothing may live in a session: no startup `options` (PgBouncer refuses the parameter; the schema
// and the statement timeout are then the role's settings, checked at start), and no protocol-level prepared
// statements (PgBouncer before 1.21 hands a statement prepared on one server connection to a client now on
// another: "prepared statement does not exist"). Migrations and LISTEN need a session: they use
// PM_DATABASE_DIRECT_URL.
import { createHash } from 'node:crypto'
import pg from 'pg'
import { PG_CONN_LIFETIME_S, STATEMENT_TIMEOUT_MS } from '../core/config'

export type Db = pg.Pool
export type Tx = pg.PoolClient

// Connection exceptions (class 08, but not 08P01: a protocol violation is our statement's fault), shutdowns (57P),
// too many connections (53300).
const CONN_STATES = /^(08(?!P01)|57P|53300)/

/** Marks errors that mean "Postgres is unreachable" (not "the statement was wrong"). */
export function tagPgError(err: unknown): never {
  if (err instanceof Error) {
    const e = err as Error & { code?: string; dependency?: string }
    const connLevel =
      (typeof e.code === 'string' && (CONN_STATES.test(e.code) || e.code.startsWith('E'))) ||
      /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
        e.message,
      )
    if (connLevel) e.dependency = 'postgres'
  }
  throw err
}

/** What a pool needs of the configuration. */
export interface PgSettings {
  readonly databaseUrl: string
  readonly dbSchema: string
  /** PM_PGBOUNCER=transaction: no startup options, no named prepared statements. */
  readonly pgBouncer: boolean
  /** PM_STATEMENT_TIMEOUT_MS (absent: STATEMENT_TIMEOUT_MS; 0: none). */
  readonly statementTimeoutMs?: number
  /** PM_PG_CONN_LIFETIME_S (absent: PG_CONN_LIFETIME_S; 0: never). */
  readonly pgConnLifetimeS?: number
}

/** Marks pools (and their clients) whose statements must not be prepared by name (behind PgBouncer). */
const UNNAMED = Symbol('pombo.unnamedStatements')

export function createPool(cfg: PgSettings, max: number): Db {
  const pool = new pg.Pool({
    connectionString: cfg.databaseUrl,
    max,
    // Session settings go in the startup packet, so every pooled connection has them before its first query.
    options: cfg.pgBouncer
      ? undefined
      : `-c search_path=${cfg.dbSchema} -c statement_timeout=${cfg.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS}`,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // Closed when idle (or at its next release) after this long: see PG_CONN_LIFETIME_S.
    maxLifetimeSeconds: cfg.pgConnLifetimeS ?? PG_CONN_LIFETIME_S,
  })
  // An idle client losing its connection must not crash the process; the next checkout reconnects. A checked-out
  // client that loses it between two queries emits 'error' too, with no pool listener then: without one of its own
  // that is an uncaught exception. Its next query fails instead, and the caller answers for that.
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
    if (cfg.pgBouncer) (client as unknown as Record<symbol, boolean>)[UNNAMED] = true
  })
  if (cfg.pgBouncer) (pool as unknown as Record<symbol, boolean>)[UNNAMED] = true
  return pool
}

/**
 * Behind PgBouncer the schema comes from the role's search_path (no startup options): a pooled connection must
 * resolve unqualified names to PM_DB_SCHEMA, or the process would read and write another schema's tables.
 */
export async function checkSearchPath(db: Db, schema: string): Promise<string | null> {
  const r = await query<{ s: string | null }>(db, 'SELECT current_schema() AS s')
  const got = r.rows[0]?.s ?? null
  if (got === schema) return null
  return `PM_PGBOUNCER=transaction sends no startup options, and the connections' schema is ${got === null ? 'none' : `"${got}"`}, not PM_DB_SCHEMA "${schema}": set it on the role (ALTER ROLE … SET search_path = ${schema})`
}

export async function query<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Db | Tx,
  text: string,
  params?: unknown[],
): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(text, params)
  } catch (err) {
    return tagPgError(err)
  }
}

const statementNames = new Map<string, string>()

/**
 * A statement on a hot path, prepared once per connection (named by a digest of its text, so one name is never
 * two texts): Postgres then skips parsing and, after a few runs, planning. The delivery engine's batch statements
 * spent as long being planned as being executed. Only for texts drawn from a small fixed set. Behind PgBouncer in
 * transaction mode the statement goes unnamed (parsed and planned each time).
 */
export async function queryPrepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Db | Tx,
  text: string,
  params: unknown[],
): Promise<pg.QueryResult<R>> {
  if ((db as unknown as Record<symbol, boolean>)[UNNAMED]) return query<R>(db, text, params)
  let name = statementNames.get(text)
  if (!name) {
    name = `pm_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`
    statementNames.set(text, name)
  }
  try {
    return await db.query<R>({ name, text, values: params })
  } catch (err) {
    return tagPgError(err)
  }
}

/** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
export async function tx<T>(db: Db, fn: (c: Tx) => Promise<T>): Promise<T> {
  let client: Tx
  try {
    client = await db.connect()
  } catch (err) {
    return tagPgError(err)
  }
  try {
    await client.query('BEGIN')
    const out = await fn(client)
    await client.query('COMMIT')
    return out
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    return tagPgError(err)
  } finally {
    client.release()
  }
}

/** Deadlock or serialisation failure: the transaction did nothing and may simply be run again. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === '40P01' || code === '40001'
}

/**
 * Runs `f` again (up to `attempts` in all, after a short jittered pause) when Postgres made it a deadlock's victim or
 * refused it for serialisation: it did nothing, and the other side has gone on. Every group-commit writer's batch goes
 * through it (a batch is one statement or one transaction, so it is whole or not at all).
 */
export async function retryingConflicts<T>(
  f: () => Promise<T>,
  onRetry?: (err: unknown, attempt: number) => void,
  attempts = 5,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f()
    } catch (err) {
      if (!isRetryable(err) || attempt >= attempts) throw err
      onRetry?.(err, attempt)
      await new Promise((r) => setTimeout(r, attempt * (5 + Math.random() * 20)))
    }
  }
}

/**
 * Retention deletes: runs `text` (a DELETE whose last parameter is the chunk size) until a run deletes fewer rows
 * than that, so no single statement holds a large delete's locks and WAL. Answers the rows deleted.
 */
export async function deleteInChunks(db: Db, text: string, params: unknown[], chunk: number): Promise<number> {
  let total = 0
  for (;;) {
    const n = (await query(db, text, [...params, chunk])).rowCount ?? 0
    total += n
    if (n < chunk) return total
  }
}
