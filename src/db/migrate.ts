// Applies migrations/*.sql in name order, each once, each in its own transaction. An advisory lock makes concurrent
// `pombo serve` processes wait for one another instead of racing.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'

const DIR = join(__dirname, 'migrations')
const LOCK_ID = 0x706f6d62 // "pomb"

export interface MigrateResult {
  applied: string[]
  total: number
}

export async function migrate(url: string, schema: string): Promise<MigrateResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    await client.query(`SET search_path TO ${schema}`)
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID])
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    )
    const done = new Set((await client.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version))
    const files = readdirSync(DIR).filter((f) => f.endsWith('.sql')).sort()
    const applied: string[] = []
    for (const f of files) {
      if (done.has(f)) continue
      await client.query('BEGIN')
      try {
        await client.query(readFileSync(join(DIR, f), 'utf8'))
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [f])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK')
        throw new Error(`migration ${f} failed: ${(err as Error).message}`)
      }
      applied.push(f)
    }
    return { applied, total: files.length }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {})
    await client.end()
  }
}
