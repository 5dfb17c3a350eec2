// What a dead worker held, given back by the process that saw it exit (delivery/worker.ts releaseDeadWorker, called by
// the group's parent): its partition leases and its place among the live workers in Redis, its slice leases in
// Postgres, and nothing of another worker's.
import { hostname } from 'node:os'
import t from 'tap'
import { releaseDeadWorker } from '../../src/delivery/worker'
import { startService } from '../helpers/service'

t.test("a dead worker's partition and slice leases are released; a live worker's are not", async (t) => {
  const s = await startService(t, { roles: ['api'], env: { PM_DEFAULT_PLAN: 'pro' } })
  const app = await s.createApp()
  const auth = { authorization: `Bearer ${app.api_key}` }
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-release' } })
  t.equal(reg.status, 200)
  const sent = await s.call('POST', '/api/v1/notifications', {
    headers: auth,
    body: { app_id: app.id, contents: { en: 'oi' }, included_segments: ['Subscribed Users'] },
  })
  const sendId = (sent.json as { id: string }).id
  t.ok(sendId, 'a send to hang slices on')

  const { redis, keys, db } = s.svc.deps
  const dead = `${hostname()}:4000001:aaaaaa`
  const alive = `${hostname()}:4000002:bbbbbb`
  const sameNumberElsewhere = `another-host:4000001:cccccc`
  await redis.set(keys.lease(0), dead, 'PX', 60_000)
  await redis.set(keys.lease(1), alive, 'PX', 60_000)
  await redis.set(keys.lease(2), sameNumberElsewhere, 'PX', 60_000)
  await redis.zadd(keys.workers(), Date.now(), dead, Date.now(), alive, Date.now(), sameNumberElsewhere)
  await s.sql(
    `INSERT INTO send_slices (app_id, send_id, slice, lane, lo, hi, owner, lease_until)
     VALUES ($1, $2, 0, 1, '00000000-0000-0000-0000-000000000000', '7fffffff-ffff-ffff-ffff-ffffffffffff', $3, now() + interval '1 hour'),
            ($1, $2, 1, 1, '7fffffff-ffff-ffff-ffff-ffffffffffff', 'ffffffff-ffff-ffff-ffff-ffffffffffff', $4, now() + interval '1 hour')`,
    [app.id, sendId, dead, alive],
  )

  const released = await releaseDeadWorker({ redis, keys, db, partitions: s.svc.deps.cfg.partitions }, 4000001)
  t.same(released, [dead], 'only the dead process of this host')
  t.equal(await redis.get(keys.lease(0)), null, "the dead worker's partition is free")
  t.equal(await redis.get(keys.lease(1)), alive, "a live worker's lease is kept")
  t.equal(await redis.get(keys.lease(2)), sameNumberElsewhere, 'the same pid on another host is another worker')
  t.same(
    (await redis.zrange(keys.workers(), '0', '-1')).sort(),
    [alive, sameNumberElsewhere].sort(),
    'the dead worker left the live set',
  )
  const slices = await s.sql<{ slice: number; free: boolean }>(
    `SELECT slice, lease_until < now() AS free FROM send_slices WHERE send_id = $1 ORDER BY slice`,
    [sendId],
  )
  t.same(
    slices,
    [
      { slice: 0, free: true },
      { slice: 1, free: false },
    ],
    "the dead worker's slice can be leased at once; the live one's stays leased",
  )
  t.same(
    await releaseDeadWorker({ redis, keys, db, partitions: s.svc.deps.cfg.partitions }, 4000001),
    [],
    'a second release finds nothing',
  )
})
