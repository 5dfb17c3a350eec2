// The hot statements that reach the tables re-keyed by 0025-0027 (issue 32.5) keep their index plans on filled
// tables: under a generic plan (they are prepared, src/db/pool.ts queryPrepared) each still finds its rows through
// the new primary key, the tenant column first, whatever the statistics. Statistics are taken on tables where one
// app holds nearly every row, so app_id looks useless to the planner as a leading column. Planned by
// test/helpers/plans.ts.
import t from 'tap'
import { FIND_KEY_SQL } from '../../src/apps/store'
import { CLAIM_SQL, RECORD_SQL } from '../../src/confirmations/lease'
import { BEFORE_ANY_ID, LOAD_SENDS_SQL, SEGMENT_PAGE_SQL } from '../../src/delivery/audience'
import { LEASE_SLICE_SQL } from '../../src/delivery/slices'
import { genericPlan } from '../helpers/plans'
import { startService } from '../helpers/service'

const UUID = `'7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'`
const UUIDS = `'{7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b}'`

t.test('on filled tables, each hot statement finds its rows by the tenant-first key', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  await s.sql(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, expansion_done)
     SELECT $1, gen_random_uuid(), 1, 'segments', '{}', '{}', '{}', 1, false, 1, 3600, now(), false FROM generate_series(1, 200)`,
    [app.id],
  )
  await s.sql(
    `INSERT INTO deliveries (send_id, device_id, app_id, device_type, status)
     SELECT s.id, gen_random_uuid(), s.app_id, 1, (i % 3)::smallint FROM sends s, generate_series(1, 300) AS i`,
  )
  await s.sql(
    `INSERT INTO send_slices (app_id, send_id, slice, lane, lo, hi, done_at)
     SELECT s.app_id, s.id, k, 1, '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
            CASE WHEN k > 0 THEN now() END
       FROM sends s, generate_series(0, 7) AS k`,
  )
  await s.sql(
    `INSERT INTO app_keys (kid, app_id, key_hash, sandbox, created_at)
     SELECT substr(md5(i::text), 1, 8), $1, '\\x00', false, now() FROM generate_series(1, 3000) AS i`,
    [app.id],
  )
  await s.sql('INSERT INTO app_key_kids (kid, app_id) SELECT kid, app_id FROM app_keys ON CONFLICT DO NOTHING')
  // Many apps with an active destination each (one per app at most): the due destinations' index is no shortcut.
  await s.sql(
    `INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em)
     SELECT gen_random_uuid(), a.org_id, 'App ' || i, 60000, a.receipt_key_enc, now() FROM apps a, generate_series(1, 3000) AS i
      WHERE a.id = $1`,
    [app.id],
  )
  await s.sql(
    `INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, next_at, created_at)
     SELECT gen_random_uuid(), id, 'https://example.com/h', '\\x00', 0, now(), now() FROM apps`,
  )
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, last_active, created_at, updated_at)
     SELECT a, gen_random_uuid(), 'tok-' || i, 1, false, 'fcm', now(), now(), now()
       FROM unnest($1::uuid[]) AS a, generate_series(1, 3000) AS i`,
    [[app.id, other.id]],
  )
  await s.sql(
    `INSERT INTO webhook_attempts (app_id, destination_id, event_seq, n, attempt_id, result, at)
     SELECT d.app_id, d.id, 1, 1, gen_random_uuid(), 'http', now() FROM webhook_destinations d`,
  )
  await s.sql(
    'ANALYZE apps, devices, sends, deliveries, send_slices, app_keys, app_key_kids, webhook_destinations, webhook_attempts',
  )
  const plan = (text: string, params: string[]) => genericPlan(s.cfg.dbSchema, text, params)

  const page = await plan(SEGMENT_PAGE_SQL, [`'${other.id}'`, UUID, `'${BEFORE_ANY_ID}'`, '500'])
  t.match(
    page,
    /Index Scan using deliveries_pkey on deliveries x\s+Index Cond: \(\(app_id = \$1\) AND \(send_id = \$2\) AND \(device_id > \$3\)\)/,
    `a segment send's pending page seeks past its cursor in the send's rows:\n${page}`,
  )

  const load = await plan(LOAD_SENDS_SQL, [UUIDS, UUIDS, 'now()', 'now()', '500'])
  t.match(
    load,
    /Index Scan using deliveries_pkey on deliveries y\s+Index Cond: \(\(app_id = \$\d+\) AND \(send_id = \$\d+\) AND \(device_id = a\.id\)\)/,
    `a first page skips final devices by key:\n${load}`,
  )
  t.match(load, /send_slices_pkey/, `whether a send is sliced, by key:\n${load}`)

  const key = await plan(FIND_KEY_SQL, [`'abcd1234'`])
  t.match(key, /Index Scan using app_key_kids_pkey on app_key_kids\s+Index Cond: \(kid = \$1\)/, `the kid's app:\n${key}`)
  t.match(
    key,
    /Index Scan using app_keys_pkey on app_keys\s+Index Cond: \(\(app_id = \$\d+\) AND \(kid = \$1\)\)/,
    `then the key, by its key:\n${key}`,
  )

  const claim = await plan(CLAIM_SQL, [UUID, 'now()', UUID, '1000', '50', `'${app.id}'`])
  t.match(
    claim,
    /Index Scan using webhook_destinations_pkey on webhook_destinations d\s+Index Cond: \(\(app_id = \$6\) AND \(id = \$1\)\)/,
    `a turn claims its destination by key:\n${claim}`,
  )
  const nulls = Array.from({ length: 22 }, () => 'NULL')
  nulls[0] = UUID
  nulls[1] = UUID
  nulls[23] = `'${app.id}'`
  nulls[22] = 'false'
  const rec = await plan(RECORD_SQL, nulls)
  t.match(
    rec,
    /Index Scan using webhook_destinations_pkey on webhook_destinations\s+Index Cond: \(\(app_id = \$24\) AND \(id = \$1\)\)/,
    `a turn records on its destination by key:\n${rec}`,
  )

  const lease = await plan(LEASE_SLICE_SQL, [`'w1'`, 'now()', 'now()'])
  t.match(lease, /send_slices_open_idx/, `the open slices are found through their index:\n${lease}`)
  t.match(
    lease,
    /Index Scan using send_slices_pkey on send_slices t\s+Index Cond: \(\(app_id = c\.app_id\) AND \(send_id = c\.send_id\) AND \(slice = c\.slice\)\)/,
    `and the leased one updated by key:\n${lease}`,
  )
  for (const p of [page, load, key, claim, rec, lease]) {
    t.notMatch(p, /Seq Scan on (deliveries|send_slices|app_keys|app_key_kids|webhook_destinations)\b/, p)
  }
})
