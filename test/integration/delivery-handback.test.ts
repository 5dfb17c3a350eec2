// Entries of a partition that changed hands. A new owner claims what is pending on the partition's stream when it
// adopts it, and never again; an entry another worker reads afterwards was left pending there, its send waiting for
// the sweeper's grace and the entry until the partition moved again. Found by the model of a send's life
// (test/model/): entries left pending after every send closed. Two ways to get there:
//   - a partition handed back to share the work (a second worker joined) while the first worker's blocked read
//     still names its stream: an entry added then reaches the first worker after the new owner adopted it;
//   - a partition lost to another worker (Redis emptied, or a stall past the lease) after the new owner adopted it
//     and this worker read more of it.
// Either way the entry goes back to the end of its stream, where the owner reads it.
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import { partitionOf, WORK_GROUP } from '../../src/redis/partitions'
import { type App, startDelivery } from '../helpers/delivery'
import { basic, REDIS_URL, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

/** The first worker gives back half of them, one per lease round, each a chance for the race. */
const PARTITIONS = 8
/** A long grace: a send it rescues would arrive far later than the bound below. */
const ENV = {
  PM_PARTITIONS: String(PARTITIONS),
  PM_DEFAULT_PLAN: 'pro',
  PM_HANDOFF_GRACE_MS: '20000',
  PM_LEASE_MS: '1500',
  PM_HEARTBEAT_MS: '500',
}
/** A send must close this soon after it is accepted. */
const PROMPT_MS = 3_000
const CYCLES = 3

/** A worker process beside the test's API service, on its fake providers. Stopped by the test itself, not at
 *  teardown: the API's teardown drops the schema, which a running worker holds up. */
function startWorker(t: Test, d: Delivery): Promise<TestService> {
  return startService(t, {
    roles: ['worker'],
    shareWith: d.s,
    providerCa: d.ca,
    ops: false,
    env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, ...ENV },
  })
}

t.test('an entry read for a partition just handed back reaches its new owner at once', async (t) => {
  const d = await startDelivery(t, { jobs: true, env: ENV, service: { roles: ['api'], cluster: false } })
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  // The first worker hands back its highest idle partitions first: one app on each of the half it gives up.
  const apps = new Map<number, { app: App; device: string }>()
  while (apps.size < PARTITIONS / 2) {
    const app = await d.s.createApp()
    const p = partitionOf(app.id, PARTITIONS)
    if (p < PARTITIONS / 2 || apps.has(p)) continue
    await d.fcmFor(app)
    apps.set(p, { app, device: await d.device(app, `handback-${p}`) })
  }
  const worker = () => startWorker(t, d)
  const lease = (p: number) => redis.get(`${d.s.cfg.redisPrefix}:{p${p}}:lease`)
  const running: TestService[] = []
  try {
    running.push(await worker())
    const firstId = running[0]?.svc.delivery?.worker.id as string
    let chances = 0
    let made = 0
    let prompt = 0
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      await until('the first worker holds every partition', async () =>
        (await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => lease(p)))).every((id) => id === firstId),
      )
      await new Promise((r) => setTimeout(r, 700)) // nothing to read: the first worker's reader blocks
      const second = await worker()
      running.push(second)
      const secondId = second.svc.delivery?.worker.id as string
      const sent: Array<{ id: string; at: number; p: number }> = []
      for (const [p, { app, device }] of [...apps].sort(([a], [b]) => b - a)) {
        // Sent the moment the new owner holds the partition, while the first worker's read may still name it. A
        // stall of this (loaded) process past a lease may have the second worker take others: no chance here then.
        const deadline = Date.now() + 10_000
        while ((await lease(p)) !== secondId && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2))
        if ((await lease(p)) !== secondId) continue
        chances++
        const r = await d.s.call('POST', '/api/v1/notifications', {
          body: { app_id: app.id, contents: { en: 'Handback' }, include_player_ids: [device] },
          headers: basic(app.api_key),
        })
        sent.push({ id: r.json.id, at: Date.now(), p })
        made++
      }
      for (const s of sent) {
        const row = await d.closed(s.id, PROMPT_MS + 2_000).catch(() => null)
        const ms = row ? new Date(row.completed_at as Date).getTime() - s.at : null
        if (ms !== null && ms <= PROMPT_MS) {
          prompt++
          continue
        }
        const pending = await redis.xpending(d.s.svc.deps.keys.workStream(s.p), WORK_GROUP, '-', '+', 10)
        t.fail(
          `cycle ${cycle}: send ${s.id} closed ${ms === null ? 'not at all' : `${ms} ms`} after it was accepted; pending: ${JSON.stringify(pending)}`,
        )
        return
      }
      await running.pop()?.svc.stop()
    }
    t.ok(chances >= CYCLES, `sends made the moment a partition changed hands: ${chances}`)
    t.equal(prompt, made, `every send closed within ${PROMPT_MS} ms over ${CYCLES} rounds of hand-backs (${made} sends)`)
    // The first worker holds every partition again and has acknowledged what it claimed.
    const pending = () =>
      Promise.all(
        Array.from(
          { length: PARTITIONS },
          (_, p) => redis.xpending(d.s.svc.deps.keys.workStream(p), WORK_GROUP) as Promise<[number]>,
        ),
      )
    await until('no entry left pending', async () => (await pending()).every((x) => Number(x[0]) === 0), 5_000).catch(() => {})
    t.same(
      (await pending()).map((x) => Number(x[0])),
      Array(PARTITIONS).fill(0),
      'no entry left pending',
    )
  } finally {
    for (const w of running.reverse()) await w.svc.stop()
  }
})

t.test('the entries of a partition lost to another worker go back to its stream once the actors have stopped', async (t) => {
  const d = await startDelivery(t, { env: ENV, service: { roles: ['api'], cluster: false } })
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('lost-slow', 'slow:1500') // in flight when the partition is lost
  const device = await d.device(app, 'lost-slow')
  const p = partitionOf(app.id, PARTITIONS)
  const stream = d.s.svc.deps.keys.workStream(p)
  const leaseKey = `${d.s.cfg.redisPrefix}:{p${p}}:lease`
  const w = await startWorker(t, d)
  try {
    const id = w.svc.delivery?.worker.id as string
    await until('the worker holds the partition', async () => (await redis.get(leaseKey)) === id)
    const r = await d.s.call('POST', '/api/v1/notifications', {
      body: { app_id: app.id, contents: { en: 'Lost' }, include_player_ids: [device] },
      headers: basic(app.api_key),
    })
    const sendId = r.json.id as string
    await d.fcm.waitForRequests(1)
    const original = ((await redis.xpending(stream, WORK_GROUP, '-', '+', 10)) as Array<[string, string]>)[0]?.[0]
    t.ok(original, 'the send is pending on the worker')
    // Another worker took the partition (and adopted it, claiming nothing): the worker finds its lease gone.
    await redis.set(leaseKey, 'another-worker', 'PX', 60_000)
    const mine = async () =>
      ((await redis.xpending(stream, WORK_GROUP, '-', '+', 10)) as Array<[string, string]>).filter((x) => x[1] === id)
    await until('the worker holds no entry of the lost partition', async () => (await mine()).length === 0, 8_000).catch(() => {})
    t.same(await mine(), [], 'nothing left pending on the worker that lost the partition')
    const copies = ((await redis.xrange(stream, '-', '+')) as Array<[string, string[]]>).filter(
      ([x, f]) => x !== original && f[f.indexOf('s') + 1] === sendId,
    )
    t.equal(copies.length, 1, 'the entry waits again at the end of its stream, for the owner')
    // The partition comes back: the copy is read, finds the send's device final, and is acknowledged.
    await redis.del(leaseKey)
    const row = await d.closed(sendId, 10_000)
    t.equal(row.successful, 1)
    t.equal(d.fcm.delivered.filter((x) => x.target === 'lost-slow').length, 1, 'delivered once')
    await until(
      'no entry left pending',
      async () => Number(((await redis.xpending(stream, WORK_GROUP)) as [number])[0]) === 0,
      5_000,
    )
  } finally {
    await w.svc.stop()
  }
})

t.test('a stopping worker ends its blocking read at once, and a send accepted meanwhile reaches the next one', async (t) => {
  const d = await startDelivery(t, { env: ENV, service: { roles: ['api'], cluster: false } })
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const device = await d.device(app, 'stop-read')
  const worker = () => startWorker(t, d)
  // Six times, since a read found blocked may be near the end of its BLOCK (500 ms) anyway. A stop that waited it out
  // would take 250 ms on average: six of them under 750 ms in all about once in fifty. Six prompt stops take a few ms
  // each, and the total leaves room for one slowed by a loaded machine (one took 156 ms).
  const took: number[] = []
  for (let i = 0; i < 6; i++) {
    const w = await worker()
    const name = `pombo-reader:${w.svc.delivery?.worker.id}`
    // Its read connection, named for the worker, sits in a blocking read while the streams are empty.
    await until('the worker is in a blocking read', async () => {
      const list = String(await redis.client('LIST'))
      return list.split('\n').some((l) => l.includes(` name=${name} `) && /\bflags=\S*b/.test(l))
    })
    const started = performance.now()
    await w.svc.delivery?.worker.stop()
    took.push(performance.now() - started)
    await w.svc.stop()
  }
  const total = took.reduce((a, b) => a + b, 0)
  t.ok(total < 750, `six workers stopped in ${took.map(Math.round).join(', ')} ms: none waited out its read's BLOCK`)
  // Accepted with no worker running: the next worker to take the partition delivers it.
  const r = await d.s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, include_player_ids: [device], contents: { en: 'after the stop' } },
    headers: basic(app.api_key),
  })
  t.equal(r.status, 200)
  const next = await worker()
  try {
    const row = await d.closed(r.json.id, 10_000)
    t.equal(row.successful, 1, 'delivered by the next worker')
  } finally {
    await next.svc.stop()
  }
})
