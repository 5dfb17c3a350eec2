// Pombo on a real 3-master Redis Cluster (test/helpers/redis-cluster.ts): the hash-tag layout puts each partition's
// keys and each app's keys in one slot, pipelines are split by slot, REDIS_URL is ignored, pub/sub reaches every
// instance, and the operations port checks every master. The delivery, sends and receipts suites also run whole
// against the cluster (`npm test` runs them a second time with PM_TEST_REDIS=cluster).
import { Cluster } from 'ioredis'
import t from 'tap'
import { Keys } from '../../src/redis/keys'
import { groupBySlot, keySlot, pipelineBySlot } from '../../src/redis/slots'
import { sharedClusterNodes } from '../helpers/redis-cluster'
import { startService, type TestService } from '../helpers/service'

async function clusterClient(t: { teardown(f: () => unknown): void }): Promise<Cluster> {
  const nodes = (await sharedClusterNodes()).split(',').map((s) => {
    const [host, port] = s.split(':')
    return { host: host as string, port: Number(port) }
  })
  const c = new Cluster(nodes, { lazyConnect: true })
  c.on('error', () => {})
  await c.connect()
  t.teardown(() => c.disconnect())
  return c
}

type App = Awaited<ReturnType<TestService['createApp']>>

t.test('keySlot is the slot Redis computes, hash tags included', async (t) => {
  const c = await clusterClient(t)
  const keys = [
    'plain',
    'pm:{p0}:work',
    'pm:{p63}:lease',
    'pm:{}:empty-tag-hashes-whole-key',
    'pm:{a}{b}:first-tag-wins',
    'pm:{unclosed',
    'pm:}{:reversed',
    'ação:{ünïcode}:x',
    `pm:{${'0b0c3f64-1d5e-4a53-9d0b-2f7ad1a1c0de'}}:reg:1`,
    '',
  ]
  for (let i = 0; i < 200; i++) keys.push(`k${i}:${'x'.repeat(i % 17)}`)
  const node = c.nodes('master')[0]
  if (!node) throw new Error('no master')
  const pipe = node.pipeline()
  for (const k of keys) pipe.cluster('KEYSLOT', k)
  const res = (await pipe.exec()) ?? []
  t.same(
    keys.map((k) => keySlot(k)),
    res.map(([, v]) => Number(v)),
  )
})

t.test('one slot per partition and one per app: every key of either shares it', async (t) => {
  const k = new Keys('pm')
  const seen = new Set<number>()
  for (let p = 0; p < 64; p++) {
    const slot = keySlot(k.workStream(p))
    t.equal(keySlot(k.lease(p)), slot, `lease of partition ${p}`)
    seen.add(slot)
  }
  t.ok(seen.size >= 60, `the 64 partitions spread over slots (${seen.size} distinct)`)
  const app = '0b0c3f64-1d5e-4a53-9d0b-2f7ad1a1c0de'
  const slot = keySlot(k.registrations(app, 1))
  for (const key of [k.exports(app, 2), k.sends(app, 3), k.reads(app, 4), k.idempotencyLock(app, 'x{y}'), k.grpcStreams(app)]) {
    t.equal(keySlot(key), slot, key)
  }
})

t.test('pipelines across slots: refused as one pipeline, answered per item when split by slot', async (t) => {
  const c = await clusterClient(t)
  const prefix = `pmt_pipe_${process.pid}`
  const keys = Array.from({ length: 300 }, (_, i) => `${prefix}:{a${i}}:n`)
  t.teardown(async () => {
    await Promise.all(keys.map((k) => c.del(k)))
  })
  // Without the split: the cluster client refuses it (the test can fail).
  const whole = c.pipeline()
  for (const k of keys) whole.incrby(k, 1)
  await t.rejects(whole.exec(), 'one pipeline over 300 slots is refused')

  t.ok(groupBySlot(c, keys, (x) => x).length > 100, 'grouped by slot')
  const res = await pipelineBySlot(
    c,
    keys,
    (x) => x,
    (pipe, x) => {
      pipe.incrby(x, 5)
      pipe.incrby(x, 2)
    },
  )
  t.equal(res.length, 300)
  t.ok(
    res.every((r) => r.length === 2 && r[0]?.[0] === null && r[0]?.[1] === 5 && r[1]?.[1] === 7),
    'each item gets its own two replies, in order',
  )
  const values = await Promise.all(keys.map((k) => c.get(k)))
  t.ok(values.every((v) => v === '7'))
})

t.test('with REDIS_CLUSTER_NODES set, REDIS_URL is ignored; limits count across the cluster', async (t) => {
  const s = await startService(t, {
    cluster: true,
    env: { REDIS_URL: 'redis://127.0.0.1:1' },
    limits: { sendsPerSec: 5 },
  })
  t.ok(s.cfg.redisClusterNodes && s.cfg.redisClusterNodes.length === 3)
  const apps: App[] = []
  for (let i = 0; i < 6; i++) apps.push(await s.createApp({ nome: `App ${i}` }))
  // Six apps in one event-loop turn: their counters sit in six slots, counted in one split pipeline.
  const answers = await Promise.all(
    apps.flatMap((app) =>
      Array.from({ length: 7 }, () =>
        s.call('POST', '/api/v1/notifications', {
          body: { app_id: app.id, contents: { en: 'x' }, included_segments: ['Subscribed Users'] },
          headers: { authorization: `Basic ${app.api_key}` },
        }),
      ),
    ),
  )
  for (let i = 0; i < apps.length; i++) {
    const mine = answers.slice(i * 7, i * 7 + 7).map((a) => a.status)
    t.equal(mine.filter((x) => x === 429).length, 2, `app ${i}: 5 of 7 within the limit (${mine.join(',')})`)
  }
  const ready = await fetch(`${s.opsUrl}/readyz`)
  t.equal(ready.status, 200, '/readyz: every master answers')
  t.equal(((await ready.json()) as { redis: boolean }).redis, true)
})

t.test('a revocation made on one instance is seen by the other through cluster pub/sub', async (t) => {
  const a = await startService(t, { cluster: true })
  const b = await startService(t, { shareWith: a })
  t.ok(b.cfg.redisClusterNodes, 'the second instance is on the cluster too')
  const app = await a.createApp()
  const r = await a.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-c' } })
  const path = `/api/v1/players/${r.json.id}?app_id=${app.id}`
  const read = (s: TestService) => s.call('GET', path, { headers: { authorization: `Basic ${app.api_key}` } })
  t.equal((await read(b)).status, 200, 'cached on B')
  await a.svc.deps.apps.revokeKeys(app.id)
  const started = Date.now()
  let status = 200
  while (status === 200 && Date.now() - started < 2_000) {
    status = (await read(b)).status
    if (status === 200) await new Promise((res) => setTimeout(res, 10))
  }
  t.equal(status, 401, `B refuses the revoked key (${Date.now() - started} ms)`)
})
