// A scheduled send is delivered at its time in every state of its partition stream: fresh, read before, holding a
// backlog, emptied with the rest of Redis, and across a worker restart. Each case plays the steps a sender takes
// through the real routes (register, send now, later send with `send_after`) and reads the send back through
// GET /api/v1/notifications/{id}. The hand-off grace stays at its default (30 s), so only the sweeper's first
// hand-off of a due send (never a re-enqueue after the grace) can close these sends within the test's deadline.
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import { partitionOf } from '../../src/redis/partitions'
import { type App, startDelivery } from '../helpers/delivery'
import { basic, REDIS_URL, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

/** Well past the 2 s the sweeper allows between Postgres' and Redis' clocks (src/handoff/stream.ts). */
const AFTER_READ_MS = 2_500
const DUE_IN_MS = 1_500

async function read(s: TestService, app: App, id: string) {
  const r = await s.call('GET', `/api/v1/notifications/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (r.status !== 200) throw new Error(`read: ${r.status} ${r.text}`)
  return r.json
}

/** Sends with `send_after` DUE_IN_MS ahead; checks nothing goes out before it and that it closes soon after. */
async function scheduledIsDelivered(t: Tap, d: Delivery, app: App, device: string, target: string): Promise<void> {
  const before = d.fcm.delivered.filter((r) => r.target === target).length
  const due = Date.now() + DUE_IN_MS
  const id = await d.send(app, { include_player_ids: [device], send_after: new Date(due).toISOString() })
  const early = await read(d.s, app, id)
  t.equal(early.remaining, 1, 'open before its time')
  t.equal(early.completed_at, null)
  const closed = await until(
    'the scheduled send closes',
    async () => {
      const n = await read(d.s, app, id)
      return n.completed_at !== null ? n : null
    },
    15_000,
  )
  t.equal(closed.remaining, 0, 'closed after its time')
  t.equal(closed.successful, 1, 'delivered')
  const pushes = d.fcm.delivered.filter((r) => r.target === target).slice(before)
  t.equal(pushes.length, 1, 'one push reached the provider')
  t.ok((pushes[0]?.at ?? 0) >= due - 50, 'not before send_after')
}

type Tap = Test

async function appWithDevice(d: Delivery): Promise<{ app: App; device: string }> {
  const app = await d.s.createApp()
  await d.fcmFor(app)
  return { app, device: await d.device(app, 'phone') }
}

/** Sends now and waits for it to close, so the workers' group has read the app's stream. */
async function sendNow(d: Delivery, app: App, device: string): Promise<void> {
  const row = await d.closed(await d.send(app, { include_player_ids: [device] }))
  if (row.successful !== 1) throw new Error(`immediate send: ${JSON.stringify(row)}`)
}

t.test('fresh stream: the first send of an app is scheduled', async (t) => {
  const d = await startDelivery(t, { jobs: true })
  const { app, device } = await appWithDevice(d)
  await scheduledIsDelivered(t, d, app, device, 'phone')
})

t.test('stream read before: send now, wait, then a scheduled send (the steps of issue #29)', async (t) => {
  const d = await startDelivery(t, { jobs: true })
  const { app, device } = await appWithDevice(d)
  await sendNow(d, app, device)
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  await scheduledIsDelivered(t, d, app, device, 'phone')
  // And again: the stream was read by the scheduled send's own hand-off too.
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  await scheduledIsDelivered(t, d, app, device, 'phone')
})

t.test('Redis emptied after the stream was read', async (t) => {
  const d = await startDelivery(t, { jobs: true })
  const { app, device } = await appWithDevice(d)
  await sendNow(d, app, device)
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const keys = await redis.keys(`${d.s.cfg.redisPrefix}:*`)
  if (keys.length > 0) await redis.del(...keys)
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  await scheduledIsDelivered(t, d, app, device, 'phone')
})

t.test('a worker restarted, and a backlog waiting unread while it was down', async (t) => {
  // The API (with the sweeper) in one service, the worker in another sharing its deployment.
  const d = await startDelivery(t, { jobs: true, service: { roles: ['api'] } })
  const worker = () => startService(t, { roles: ['worker'], shareWith: d.s, providerCa: d.ca, env: workerEnv(d) })
  let w = await worker()
  const { app, device } = await appWithDevice(d)
  await sendNow(d, app, device)
  await w.svc.stop()
  // While no worker reads, immediate sends wait in the stream: a backlog handed off after the last read.
  const others = await Promise.all(['a', 'b', 'c'].map((n) => d.device(app, `backlog-${n}`)))
  const backlog = await Promise.all(others.map((p) => d.send(app, { include_player_ids: [p] })))
  const stream = `${d.s.cfg.redisPrefix}:{p${partitionOf(app.id, 4)}}:work`
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  t.ok((await redis.xlen(stream)) >= 4, 'the backlog waits in the stream')
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  const due = Date.now() + DUE_IN_MS
  const id = await d.send(app, { include_player_ids: [device], send_after: new Date(due).toISOString() })
  await new Promise((r) => setTimeout(r, DUE_IN_MS + 1_500))
  t.equal(d.fcm.delivered.filter((r) => r.target === 'phone').length, 1, 'nothing delivered while no worker runs')
  w = await worker()
  for (const b of [...backlog, id]) t.equal((await d.closed(b, 15_000)).successful, 1, `send ${b} delivered after the restart`)
  t.ok((d.fcm.delivered.filter((r) => r.target === 'phone').at(-1)?.at ?? 0) >= due - 50, 'the scheduled one not before its time')
  // The restarted worker has read the stream; a later scheduled send still goes out.
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  await scheduledIsDelivered(t, d, app, device, 'phone')
})

t.test('a send whose hand-off was lost after its commit is handed off by the sweeper, though the stream was read', async (t) => {
  // A crash between the commit and the XADD leaves a committed send with no entry: its first hand-off is the
  // sweeper's, after the grace, even when its creation time lies past the group's last read.
  const d = await startDelivery(t, { jobs: true, env: { PM_HANDOFF_GRACE_MS: '1000' } })
  const { app, device } = await appWithDevice(d)
  await sendNow(d, app, device)
  await new Promise((r) => setTimeout(r, AFTER_READ_MS))
  const handoff = d.s.svc.deps.sends.handoff
  const enqueue = handoff.enqueue
  handoff.enqueue = () => {}
  const id = await d.send(app, { include_player_ids: [device] })
  handoff.enqueue = enqueue
  const row = await d.closed(id, 15_000)
  t.equal(row.successful, 1, 'delivered once the sweeper handed it off')
  t.equal(d.fcm.delivered.filter((r) => r.target === 'phone').length, 2)
})

function workerEnv(d: Delivery): Record<string, string> {
  return { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, PM_PARTITIONS: '4' }
}
