// A partition handed back to share the work (a second worker joined) while the first worker's blocked read still
// names its stream: an entry added then may reach the first worker after the new owner adopted the partition (and
// claimed what was pending then). Found by the model of a send's life (test/model/): an entry left pending on the
// first worker, its send waiting for the sweeper's grace. The entry must reach the partition's owner at once.
import Redis from 'ioredis'
import t from 'tap'
import { partitionOf, WORK_GROUP } from '../../src/redis/partitions'
import { type App, startDelivery } from '../helpers/delivery'
import { basic, REDIS_URL, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

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
const CYCLES = 4

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
  const worker = (): Promise<TestService> =>
    startService(t, {
      roles: ['worker'],
      shareWith: d.s,
      providerCa: d.ca,
      ops: false,
      env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, ...ENV },
    })
  const lease = (p: number) => redis.get(`${d.s.cfg.redisPrefix}:{p${p}}:lease`)
  const first = await worker()
  const firstId = first.svc.delivery?.worker.id as string

  for (let cycle = 0; cycle < CYCLES; cycle++) {
    await until('the first worker holds every partition', async () =>
      (await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => lease(p)))).every((id) => id === firstId),
    )
    await new Promise((r) => setTimeout(r, 700)) // nothing to read: the first worker's reader blocks
    const second = await worker()
    const secondId = second.svc.delivery?.worker.id as string
    const sent: Array<{ id: string; at: number; p: number }> = []
    for (const [p, { app, device }] of [...apps].sort(([a], [b]) => b - a)) {
      // Sent the moment the new owner holds the partition, while the first worker's read may still name it.
      const deadline = Date.now() + 10_000
      while ((await lease(p)) !== secondId) {
        if (Date.now() > deadline) throw new Error(`the second worker never took partition ${p}`)
        await new Promise((r) => setTimeout(r, 2))
      }
      const r = await d.s.call('POST', '/api/v1/notifications', {
        body: { app_id: app.id, contents: { en: 'Handback' }, include_player_ids: [device] },
        headers: basic(app.api_key),
      })
      sent.push({ id: r.json.id, at: Date.now(), p })
    }
    let late: string | null = null
    for (const s of sent) {
      const row = await d.closed(s.id, PROMPT_MS + 2_000).catch(() => null)
      const ms = row ? new Date(row.completed_at as Date).getTime() - s.at : null
      if (ms !== null && ms <= PROMPT_MS) continue
      const pending = await redis.xpending(d.s.svc.deps.keys.workStream(s.p), WORK_GROUP, '-', '+', 10)
      late = `cycle ${cycle}: send ${s.id} closed ${ms === null ? 'not at all' : `${ms} ms`} after it was accepted; pending: ${JSON.stringify(pending)}`
    }
    // Stopped here, not at teardown: the API's teardown drops the schema, which a running worker would hold up.
    await second.svc.stop()
    if (late) {
      await first.svc.stop()
      t.fail(late)
      return
    }
  }
  t.pass(`every send closed within ${PROMPT_MS} ms over ${CYCLES} hand-backs`)
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
  await first.svc.stop()
})
