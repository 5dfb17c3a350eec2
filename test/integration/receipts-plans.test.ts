// Receipts are written by one prepared statement per batch (src/receipts/store.ts), so Postgres may run it with a
// generic plan. Under one, every receipt's send and device must still be looked up by key, whatever the tables'
// statistics: a scan of the sends or the devices per batch would grow with the deployment, not with the batch.
import t from 'tap'
import { WRITE_RECEIPTS_SQL } from '../../src/receipts/store'
import { genericPlan } from '../helpers/plans'
import { startService } from '../helpers/service'

t.test('a receipt batch looks each send and device up by key under a generic plan', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  // Statistics from a deployment whose sends all belong to one app: the primary key's leading column looks useless.
  await s.sql(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, expansion_done, completed_at)
     SELECT $1, gen_random_uuid(), 0, 'players', '{}', '{}', '{}', 1, true, 0, 3600, now(), true, now()
       FROM generate_series(1, 3000)`,
    [app.id],
  )
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'tok-' || i, 1, false, 'fcm', now(), now(), now() FROM generate_series(1, 3000) AS i`,
    [app.id],
  )
  await s.sql('ANALYZE sends, devices')
  const uuids = `'{7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b}'`
  const plan = await genericPlan(s.cfg.dbSchema, WRITE_RECEIPTS_SQL, [uuids, uuids, uuids, `'{false}'`, 'now()', 'now()', `'x'`])
  t.match(plan, /Index Scan using sends_pkey on sends s\s+Index Cond: \(\(app_id = x\.app_id\) AND \(id = x\.send_id\)\)/, plan)
  t.match(
    plan,
    /Index Scan using devices_pkey on devices d\s+Index Cond: \(\(app_id = v\.app_id\) AND \(id = v\.device_id\)\)/,
    plan,
  )
  t.notMatch(plan, /Seq Scan on (sends|devices)/, plan)
})
