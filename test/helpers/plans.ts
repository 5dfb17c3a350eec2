// The plan Postgres gives a prepared statement once it goes generic (the same plan whatever the parameters): hot-path
// batch statements are prepared (src/db/pool.ts queryPrepared), so their lookups must stay index bounds under one.
// Planned with plan_cache_mode = force_generic_plan and sequential scans off (test tables are tiny).
import pg from 'pg'
import { DATABASE_URL } from './service'

export async function genericPlan(schema: string, text: string, params: string[]): Promise<string> {
  const c = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` })
  await c.connect()
  try {
    await c.query('SET plan_cache_mode = force_generic_plan')
    await c.query('SET enable_seqscan = off')
    await c.query(`PREPARE walk AS ${text}`)
    const r = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE walk(${params.join(', ')})`)
    return r.rows.map((x) => x['QUERY PLAN']).join('\n')
  } finally {
    await c.end()
  }
}
