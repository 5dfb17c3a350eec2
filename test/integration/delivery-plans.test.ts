// The delivery engine's paging statements are prepared, so Postgres may run them with a generic plan (the same plan
// whatever the parameters). Under one, the walk's cursor must still be an index bound: a cursor written as
// `$n IS NULL OR id > $n` would be a filter, and every page would re-read every row before it (quadratic in the
// audience). Planned by test/helpers/plans.ts.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { BEFORE_ANY_ID, expandSql, LOAD_SENDS_SQL, SEGMENT_PAGE_SQL } from '../../src/delivery/audience'
import { genericPlan } from '../helpers/plans'
import { startService } from '../helpers/service'

const APP = `'7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'`
const SEND = `'0f8fad5b-d9cb-469f-a165-70867728950e'`
const CURSOR = `'${BEFORE_ANY_ID}'`

t.test('the pending-page walk of a segment send seeks past its cursor', async (t) => {
  const s = await startService(t)
  const plan = await genericPlan(s.cfg.dbSchema, SEGMENT_PAGE_SQL, [APP, SEND, CURSOR, '500'])
  t.match(plan, /Index Cond: \(\(app_id = \$1\) AND \(send_id = \$2\) AND \(device_id > \$3\)\)/, plan)
})

t.test('the segment expansion seeks past its cursor, for every segment', async (t) => {
  // A newly migrated schema, never analyzed: a schema from the run's pool keeps the statistics an earlier test took
  // (1,000 devices of one app, say), and with them the planner once chose the identifier index instead.
  const s = await startService(t, { schema: `t_plans_${randomUUID().replaceAll('-', '').slice(0, 10)}` })
  for (const segments of [['Subscribed Users'], ['Active Users'], ['Engaged Users', 'Active Users']]) {
    const plan = await genericPlan(s.cfg.dbSchema, expandSql(segments), [APP, SEND, '7', CURSOR, 'now()', '500'])
    t.match(plan, /Index Cond: \(\(app_id = \$1\) AND \(id > \$4\)\)/, `${segments.join(', ')}:\n${plan}`)
  }
})

t.test('taking a batch of sends looks each one up by its key, never through the open sends', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  // Statistics taken while nearly every send was closed, then 500 open ones: the open-sends index looks tiny to the
  // planner, which once walked it (all 500) for every send of the batch.
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'tok-' || i, 1, false, 'fcm', now(), now(), now() FROM generate_series(1, 1000) AS i`,
    [app.id],
  )
  await s.sql(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, expansion_done, audience, completed_at)
     SELECT $1, gen_random_uuid(), 0, 'players', '{}', '{}', '{}', 1, true, 0, 3600, now(), true,
            ARRAY[(SELECT id FROM devices WHERE app_id = $1 ORDER BY id OFFSET i % 1000 LIMIT 1)], now()
       FROM generate_series(1, 3000) AS i`,
    [app.id],
  )
  await s.sql('ANALYZE sends, devices, deliveries')
  await s.sql('UPDATE sends SET completed_at = NULL, remaining = 1 WHERE id IN (SELECT id FROM sends LIMIT 500)')
  const refs = await s.sql('SELECT app_id, id FROM sends WHERE completed_at IS NULL LIMIT 30')
  const arr = (k: string) => `'{${refs.map((x) => x[k]).join(',')}}'`
  const plan = await genericPlan(s.cfg.dbSchema, LOAD_SENDS_SQL, [arr('app_id'), arr('id'), 'now()', 'now()', '500'])
  t.notMatch(plan, /sends_open_idx/, `no walk of every open send:\n${plan}`)
  t.match(plan, /Index Scan using sends_pkey on sends s\s+Index Cond: \(\(app_id = u\.a\) AND \(id = u\.i\)\)/, plan)
  t.match(plan, /Index Scan using devices_pkey on devices d\s+Index Cond: \(\(app_id = x\.app_id\) AND \(id = a\.id\)\)/, plan)
  t.match(
    plan,
    /Index Scan using deliveries_pkey on deliveries y\s+Index Cond: \(\(app_id = \$\d+\) AND \(send_id = \$\d+\) AND \(device_id = a\.id\)\)/,
    plan,
  )
})
