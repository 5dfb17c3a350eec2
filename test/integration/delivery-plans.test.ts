// The delivery engine's paging statements are prepared, so Postgres may run them with a generic plan (the same plan
// whatever the parameters). Under one, the walk's cursor must still be an index bound: a cursor written as
// `$n IS NULL OR id > $n` would be a filter, and every page would re-read every row before it (quadratic in the
// audience). Planned here with plan_cache_mode = force_generic_plan and sequential scans off (tables are tiny).
import pg from 'pg'
import t from 'tap'
import { BEFORE_ANY_ID, expandSql, SEGMENT_PAGE_SQL } from '../../src/delivery/audience'
import { DATABASE_URL, startService } from '../helpers/service'

async function genericPlan(schema: string, text: string, params: string[]): Promise<string> {
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

const APP = `'7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'`
const SEND = `'0f8fad5b-d9cb-469f-a165-70867728950e'`
const CURSOR = `'${BEFORE_ANY_ID}'`

t.test('the pending-page walk of a segment send seeks past its cursor', async (t) => {
  const s = await startService(t)
  const plan = await genericPlan(s.cfg.dbSchema, SEGMENT_PAGE_SQL, [APP, SEND, CURSOR, '500'])
  t.match(plan, /Index Cond: \(\(send_id = \$2\) AND \(device_id > \$3\)\)/, plan)
})

t.test('the segment expansion seeks past its cursor, for every segment', async (t) => {
  const s = await startService(t)
  for (const segments of [['Subscribed Users'], ['Active Users'], ['Engaged Users', 'Active Users']]) {
    const plan = await genericPlan(s.cfg.dbSchema, expandSql(segments), [APP, SEND, '7', CURSOR, 'now()', '500'])
    t.match(plan, /Index Cond: \(\(app_id = \$1\) AND \(id > \$4\)\)/, `${segments.join(', ')}:\n${plan}`)
  }
})
