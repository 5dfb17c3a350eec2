// Deliveries retention: a completed send's delivery rows are deleted once it is older than the retention, in
// bounded chunks, and the send is stamped; open sends and recent ones keep theirs; the send's counters and read
// shape do not change.
import t from 'tap'
import { pruneDeliveries } from '../../src/delivery/retention'
import { startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'

t.test('rows of sends completed before the horizon go; open and recent sends keep theirs', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp({ rate_por_min: 60_000 })
  await d.fcmFor(app)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push(await d.device(app, `ret-${i}`))
  const old = await d.send(app, { include_player_ids: ids })
  const recent = await d.send(app, { include_player_ids: ids })
  await d.closed(old)
  await d.closed(recent)
  const later = await d.send(app, { include_player_ids: ids, send_after: new Date(Date.now() + 86_400_000).toISOString() })
  await d.s.sql(`UPDATE sends SET completed_at = now() - interval '8 days' WHERE id = $1`, [old])
  await d.s.sql(`INSERT INTO deliveries (send_id, device_id, app_id, device_type) SELECT $1, unnest($2::uuid[]), $3, 1`, [
    later,
    ids,
    app.id,
  ])
  const readBefore = await d.s.call('GET', `/api/v1/notifications/${old}?app_id=${app.id}`, { headers: basic(app.api_key) })

  const count = async (send: string) =>
    Number((await d.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE send_id = $1', [send]))[0]?.n)
  t.equal(await count(old), 5)
  const r = await d.s.svc.delivery?.pruneNow(7)
  t.strictSame(r, { sends: 1, rows: 5 }, 'one send past 7 days')
  t.equal(await count(old), 0, 'its rows are gone')
  t.equal(await count(recent), 5, 'a send completed now keeps its rows')
  t.equal(await count(later), 5, 'an open send keeps its rows')
  const [stamped] = await d.s.sql('SELECT deliveries_pruned_at FROM sends WHERE id = $1', [old])
  t.ok(stamped?.deliveries_pruned_at, 'the send is stamped')
  t.strictSame(await d.s.svc.delivery?.pruneNow(7), { sends: 0, rows: 0 }, 'a stamped send is not looked at again')
  const readAfter = await d.s.call('GET', `/api/v1/notifications/${old}?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(readAfter.status, 200)
  t.strictSame(readAfter.json, readBefore.json, 'the read shape is unchanged: counters live on the send')

  t.strictSame(await d.s.svc.delivery?.pruneNow(0), { sends: 1, rows: 5 }, 'retention 0: every completed send')
  t.equal(await count(later), 5, 'still not the open one')
})

t.test('a big send is deleted in chunks, and a pass is bounded in sends', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp({ rate_por_min: 60_000 })
  await d.fcmFor(app)
  const ids: string[] = []
  for (let i = 0; i < 7; i++) ids.push(await d.device(app, `chunk-${i}`))
  const a = await d.send(app, { include_player_ids: ids })
  const b = await d.send(app, { include_player_ids: ids })
  await d.closed(a)
  await d.closed(b)
  await d.s.sql(`UPDATE sends SET completed_at = now() - interval '30 days' WHERE id = ANY($1::uuid[])`, [[a, b]])
  const first = await pruneDeliveries(d.s.svc.deps.db, 7, Date.now(), { sends: 1, chunk: 3 })
  t.strictSame(first, { sends: 1, rows: 7 }, '7 rows in chunks of 3, one send per pass')
  const second = await pruneDeliveries(d.s.svc.deps.db, 7, Date.now(), { sends: 1, chunk: 3 })
  t.strictSame(second, { sends: 1, rows: 7 })
  const left = await d.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE send_id = ANY($1::uuid[])', [[a, b]])
  t.equal(left[0]?.n, 0)
})
