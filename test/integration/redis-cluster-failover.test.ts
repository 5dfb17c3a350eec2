// A Redis Cluster master killed (SIGKILL) in the middle of a run of sends and restarted from its append-only file:
// every accepted send reaches every device exactly once and closes with exact counters. The killed master is the
// one serving the app's work stream (its partition's slot), so the hand-off, the worker's reader, its leases and
// acknowledgements all lose their node mid-flight. Runs on a private cluster so no other test shares the outage.
import Redis, { Cluster } from 'ioredis'
import t from 'tap'
import { partitionOf } from '../../src/redis/partitions'
import { keySlot } from '../../src/redis/slots'
import { startDelivery } from '../helpers/delivery'
import { startRedisCluster } from '../helpers/redis-cluster'
import { basic, startService } from '../helpers/service'
import { until } from '../helpers/until'

const DEVICES = 60
const SENDS = 24
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('a master killed and restarted mid-send loses nothing: every device delivered once, counters exact', async (t) => {
  const cluster = await startRedisCluster({ appendonly: true, nodeTimeoutMs: 2_000 })
  // Registered before the service's teardown, so it runs after it (tap runs teardowns last-in, first-out).
  t.teardown(() =>
    cluster.stop().catch((e: unknown) => {
      console.error('DEBUG cluster.stop', e)
      throw e
    }),
  )
  const d = await startDelivery(t, {
    jobs: true,
    env: { PM_HANDOFF_GRACE_MS: '2000', PM_HEARTBEAT_MS: '500', PM_LEASE_MS: '3000' },
    service: { cluster: cluster.nodes, ops: true },
  })
  const seeds = cluster.ports.map((port) => ({ host: '127.0.0.1', port }))
  const probe = new Cluster(seeds, { lazyConnect: true })
  probe.on('error', () => {})
  await probe.connect()
  const masterOf = (key: string) => probe.slots[keySlot(key)]?.[0]
  const keys = d.s.svc.deps.keys
  // An app whose own keys (limits, idempotency locks) and work stream live on the same master: the outage then hits
  // the API's accepting path and the delivery path at once.
  let app = await d.s.createApp()
  for (
    let i = 0;
    i < 30 && masterOf(keys.sends(app.id, 0)) !== masterOf(keys.workStream(partitionOf(app.id, d.s.cfg.partitions)));
    i++
  ) {
    app = await d.s.createApp()
  }
  const owner = masterOf(keys.workStream(partitionOf(app.id, d.s.cfg.partitions)))
  t.equal(masterOf(keys.sends(app.id, 0)), owner, 'the app keys and its stream share a master')
  probe.disconnect()
  await d.fcmFor(app)
  const devices: string[] = []
  for (let i = 0; i < DEVICES; i += 20) {
    devices.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => d.device(app, `tok-${i + j}`)))))
  }

  const victim = cluster.ports.findIndex((p) => owner === `127.0.0.1:${p}`)
  t.ok(victim >= 0, `the stream's master is ${owner}`)

  const accepted: string[] = []
  let refusals = 0
  const post = async (n: number): Promise<void> => {
    const deadline = Date.now() + 45_000
    for (;;) {
      const r = await d.s.call('POST', '/api/v1/notifications', {
        body: { app_id: app.id, contents: { en: `msg ${n}` }, include_player_ids: devices },
        headers: { ...basic(app.api_key), 'Idempotency-Key': `failover-${n}` },
      })
      if (r.status === 200 && r.json.id) {
        accepted.push(r.json.id)
        return
      }
      // While a slot has no master the API says so (503) and nothing is half-accepted: the same key is retried.
      if (r.status !== 503 && r.status !== 429)
        throw new Error(
          `send ${n}: ${r.status} ${r.text} ${JSON.stringify(d.s.logs.filter((l) => Number(l.level) >= 50).slice(-3))}`,
        )
      refusals++
      if (Date.now() > deadline) throw new Error(`send ${n} never accepted: ${r.status} ${r.text}`)
      await sleep(100)
    }
  }

  let outage: Promise<{ readyDuring: number; readyAfter: number }> | null = null
  for (let n = 0; n < SENDS; n++) {
    if (n === 6) {
      // Mid-run: the stream's master dies; it comes back 2.5 s later (past the node timeout: the cluster is down).
      await cluster.kill(victim)
      outage = (async () => {
        const ready = async () => (await fetch(`${d.s.opsUrl}/readyz`)).status
        const during = await until('/readyz to answer 503', async () => ((await ready()) === 503 ? 503 : null)).catch(() => 0)
        // Down past the node timeout: restarted once a surviving master has declared the cluster failed.
        const survivor = new Redis(cluster.ports[(victim + 1) % cluster.ports.length] as number, '127.0.0.1')
        survivor.on('error', () => {})
        await until('the cluster declared failed', async () => /cluster_state:fail/.test(String(await survivor.cluster('INFO'))))
        survivor.disconnect()
        await cluster.restart(victim)
        const after = await until('/readyz to answer 200', async () => ((await ready()) === 200 ? 200 : null)).catch(() => 0)
        return { readyDuring: during, readyAfter: after }
      })()
    }
    await post(n)
    await sleep(150) // paces the run, so that sends straddle the outage (not a wait for anything)
  }
  const { readyDuring, readyAfter } = await (outage as Promise<{ readyDuring: number; readyAfter: number }>)
  t.equal(readyDuring, 503, '/readyz is 503 while a master is down')
  t.equal(readyAfter, 200, '/readyz is 200 once it is back')
  t.equal(accepted.length, SENDS, `every send accepted in the end (${refusals} refusals retried)`)
  t.equal(new Set(accepted).size, SENDS, 'no send accepted twice')

  const closed: unknown[] = []
  for (const id of accepted) {
    const row = await d.closed(id, 60_000)
    closed.push({ successful: row.successful, failed: row.failed, errored: row.errored })
  }
  t.same(
    closed,
    accepted.map(() => ({ successful: DEVICES, failed: 0, errored: 0 })),
    'every send closed, every device successful',
  )
  const counts = await d.s.sql<{ successful: number; failed: number; errored: number; remaining: number }>(
    'SELECT sum(successful)::int AS successful, sum(failed)::int AS failed, sum(errored)::int AS errored, sum(remaining)::int AS remaining FROM sends WHERE app_id = $1',
    [app.id],
  )
  t.same(counts[0], { successful: DEVICES * SENDS, failed: 0, errored: 0, remaining: 0 }, 'counters exact')

  // The provider saw each (send, device) exactly once.
  const seen = new Map<string, number>()
  for (const r of d.fcm.delivered) {
    const k = `${r.body.message?.data?.pm_msg_id}/${r.target}`
    seen.set(k, (seen.get(k) ?? 0) + 1)
  }
  t.equal(seen.size, DEVICES * SENDS, 'every (send, device) pair reached the provider')
  t.same(
    [...seen.values()].filter((n) => n > 1),
    [],
    'none twice',
  )
})

t.test(
  'the master holding a subscription dies: the cache is cleared, the subscription moves, invalidations flow again',
  async (t) => {
    const cluster = await startRedisCluster({ nodeTimeoutMs: 2_000 })
    t.teardown(() =>
      cluster.stop().catch((e: unknown) => {
        console.error('DEBUG cluster.stop', e)
        throw e
      }),
    )
    const a = await startService(t, { cluster: cluster.nodes })
    // Which master A's subscribers (key directory, in-app packages) listen on.
    const subscribersOn = async (port: number): Promise<number> => {
      const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      r.on('error', () => {})
      try {
        await r.connect()
        const list = String(await r.client('LIST'))
        return list.split('\n').filter((l) => / sub=[1-9]/.test(l)).length
      } catch {
        return 0
      } finally {
        r.disconnect()
      }
    }
    const counts = await Promise.all(cluster.ports.map(subscribersOn))
    const victim = counts.findIndex((n) => n > 0)
    t.ok(victim >= 0, `A's subscribers found on a master (${counts.join(', ')})`)

    await cluster.kill(victim)
    const gap = Date.now()
    while (!a.logs.some((l) => l.msg === 'invalidation channel reconnected; caches cleared') && Date.now() - gap < 10_000)
      await sleep(50)
    t.ok(
      a.logs.some((l) => l.msg === 'invalidation channel reconnected; caches cleared'),
      `the gap is reported and the key cache cleared (${Date.now() - gap} ms)`,
    )
    await cluster.restart(victim)
    const after = await Promise.all(cluster.ports.map(subscribersOn))
    t.equal(after[victim], 0, `the subscriptions moved off the restarted master (${after.join(', ')})`)
    t.ok(after.reduce((x, y) => x + y, 0) >= (counts[victim] ?? 0), 'and live on the others')

    const b = await startService(t, { shareWith: a })
    const app = await a.createApp()
    const r = await a.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-gap' } })
    const path = `/api/v1/players/${r.json.id}?app_id=${app.id}`
    const read = () => a.call('GET', path, { headers: { authorization: `Basic ${app.api_key}` } })
    t.equal((await read()).status, 200, 'cached on A')
    await b.svc.deps.apps.revokeKeys(app.id)
    const started = Date.now()
    let status = 200
    while (status === 200 && Date.now() - started < 2_000) {
      status = (await read()).status
      if (status === 200) await sleep(10)
    }
    t.equal(status, 401, `A hears B's revocation through its moved subscription (${Date.now() - started} ms)`)
  },
)
