// The send path resolves a batch's listed ids in one prepared statement (src/sends/store.ts), so Postgres may run
// it with a generic plan. Under one, each listed id must still be a key lookup, whatever the table's statistics:
// a scan of the app's devices per batch would grow with the app, not with the batch.
import t from 'tap'
import { RESOLVE_PLAYERS_SQL, RESOLVE_USERS_SQL } from '../../src/sends/store'
import { genericPlan } from '../helpers/plans'
import { startService } from '../helpers/service'

t.test('listed player ids and external user ids are looked up by key under a generic plan', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  // Statistics from an app whose devices all share one external user id: the user index looks useless to the
  // planner, and the table big enough that it would rather scan it.
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, last_active, created_at, updated_at, external_user_id)
     SELECT $1, gen_random_uuid(), 'tok-' || i, 1, false, 'fcm', now(), now(), now(), 'same' FROM generate_series(1, 3000) AS i`,
    [app.id],
  )
  await s.sql('ANALYZE devices')
  const uuids = `'{7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b,0f8fad5b-d9cb-469f-a165-70867728950e}'`
  const players = await genericPlan(s.cfg.dbSchema, RESOLVE_PLAYERS_SQL, [`'{1,1}'`, uuids, uuids, uuids, `'{7}'`])
  t.match(
    players,
    /Index Scan using devices_pkey on devices d\s+Index Cond: \(\(app_id = \(\$4\)\[r\.k\]\) AND \(id = r\.device_id\)\)/,
    players,
  )
  const users = await genericPlan(s.cfg.dbSchema, RESOLVE_USERS_SQL, [uuids, uuids, `'{ana,bia}'`, `'{7,7}'`])
  t.match(
    users,
    /Index Scan (?:using|on) devices_external_user_idx(?: on devices d)?\s+Index Cond: \(\(app_id = r\.app_id\) AND \(external_user_id = r\.uid\)\)/,
    users,
  )
})
