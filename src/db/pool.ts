// The Postgres pool: one per process, search_path fixed to Pombo's schema, connection failures tagged as a
// dependency outage so routes answer a named 503.
import { createHash } from 'node:crypto'
import pg from 'pg'

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

export function createPool(url: string, schema: string, max = 16): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // Session settings go in the startup packet, so every pooled connection has them before its first query.
    options: `-c search_path=${schema} -c statement_timeout=30000`,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  })
  // An idle client losing its connection must not crash the process; the next checkout reconnects. A checked-out
  // client that loses it between two queries emits 'error' too, with no pool listener then: without one of its own
  // that is an uncaught exception. Its next query fails instead, and the caller answers for that.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
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
 * spent as long being planned as being executed. Only for texts drawn from a small fixed set.
 */
export async function queryPrepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Db | Tx,
  text: string,
  params: unknown[],
): Promise<pg.QueryResult<R>> {
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
