// The confirmation stream when processes die: a delivery worker SIGKILLed mid-send (the stream still gets
// the send's one notification.completed, with exact counters, in order with the receipts written meanwhile), and
// an API instance SIGKILLed with streams open on it (streams_ativos forgets them within seconds). Pombo processes
// run as children (`pombo serve`) sharing one deployment with the in-process API.
import Redis from 'ioredis'
import t from 'tap'
import { type Pombo, startPombo } from '../../bench/lib/pombo'
import { DEFAULT_STREAM } from '../../src/core/config'
import { CredentialService } from '../../src/credentials/service'
import { parseServiceAccount } from '../../src/credentials/validate'
import { partitionOf } from '../../src/redis/partitions'
import { startFakeProviders } from '../fakes'
import { contiguous, subscribe, until } from '../helpers/grpc'
import { freePort } from '../helpers/serve-child'
import { basic, REDIS_URL, startService, VAULT_KEY } from '../helpers/service'

const DEVICES = 10_000
const PARTITIONS = 4
const WORKER_ENV = {
  PM_PARTITIONS: String(PARTITIONS),
  PM_LEASE_MS: '2000',
  PM_HEARTBEAT_MS: '1000',
  PM_HANDOFF_GRACE_MS: '3000',
  PM_DEFAULT_PLAN: 'pro',
  PM_VAULT_KEY: VAULT_KEY,
  PM_LOG_LEVEL: 'warn',
  NODE_OPTIONS: '',
}

t.test('a worker SIGKILLed mid-send: the stream gets one notification.completed with exact counters, in order', async (t) => {
  const fakes = await startFakeProviders(t)
  const s = await startService(t, {
    roles: ['api'],
    grpc: true,
    env: { PM_PARTITIONS: String(PARTITIONS), PM_DEFAULT_PLAN: 'pro', PM_FCM_BASE_URL: fakes.fcm.url, PM_LIMIT_IP_PER_MIN: '0' },
  })
  const app = await s.createApp({ rate_por_min: 10_000_000 })
  const { credential, meta } = parseServiceAccount(JSON.stringify(fakes.fcm.serviceAccount('pombo-grpc-crash')))
  await new CredentialService({ ...s.svc.deps, now: s.svc.deps.clock }).save(app.id, 'fcm', credential, meta)
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, language, notification_types,
                          invalid_identifier, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'gc-' || i, 1, false, 'fcm', 'en', 1, false, now(), now(), now()
       FROM generate_series(1, $2::int) AS i`,
    [app.id, DEVICES],
  )
  await s.sql('ANALYZE devices')
  t.equal(
    (await s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: app.id, modo: 'grpc' }, headers: basic(app.api_key) })).status,
    200,
  )
  const sub = subscribe(s.svc.grpc?.port as number, `Basic ${app.api_key}`, app.id, '0')

  const workers: Pombo[] = []
  t.teardown(() => Promise.all(workers.map((w) => w.stop())))
  const shared = { schema: s.cfg.dbSchema, prefix: s.cfg.redisPrefix }
  for (let i = 0; i < 2; i++) workers.push(await startPombo(0, { ...fakes.env, ...WORKER_ENV }, 'worker', [], { shared }))
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const lease = `${s.cfg.redisPrefix}:{p${partitionOf(app.id, PARTITIONS)}}:lease`
  await until('the partition has an owner', async () => (await redis.get(lease)) !== null)

  fakes.fcm.setDefaultBehaviour('slow:20')
  const r = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'crash' }, included_segments: ['Subscribed Users'] },
    headers: basic(app.api_key),
  })
  t.equal(r.status, 200)
  const sendId = r.json.id as string
  await until('a fifth delivered', async () => fakes.fcm.stats().delivered >= DEVICES * 0.2, 60_000)
  const owner = Number((await redis.get(lease))?.split(':').at(-2))
  const victim = workers.find((w) => w.pid === owner)
  t.ok(victim, 'a worker holds the app partition')
  victim?.child.kill('SIGKILL')
  const atKill = fakes.fcm.stats().delivered
  t.ok(atKill < DEVICES, `killed mid-send (${atKill} of ${DEVICES} accepted)`)

  // Receipts keep coming while the survivor takes over: their events interleave with the completion.
  const byToken = new Map<string | null, string>(
    (await s.sql<{ id: string; identifier: string }>('SELECT id, identifier FROM devices')).map((d) => [d.identifier, d.id]),
  )
  const proofs = fakes.fcm.delivered.slice(0, 300).map((m) => ({
    player_id: byToken.get(m.target) as string,
    rcpt: m.body.message.data.pm_rcpt as string,
  }))
  const unique = [...new Map(proofs.map((p) => [p.player_id, p])).values()]
  let accepted = 0
  for (const p of unique) {
    const rr = await s.call('POST', '/api/v1/receipts', { body: { app_id: app.id, notification_id: sendId, ...p } })
    if (rr.status === 200) accepted++
  }
  t.equal(accepted, unique.length, 'every receipt accepted')

  await until(
    'the send closed',
    async () => {
      const [row] = await s.sql('SELECT remaining, completed_at FROM sends WHERE id = $1', [sendId])
      return row?.remaining === 0 && row.completed_at !== null
    },
    90_000,
  )
  const total = unique.length + 1
  await sub.waitFor(total, 30_000)
  // A fixed pause on purpose: the assertion is that no event arrives twice during it.
  await new Promise((res) => setTimeout(res, 500))
  t.equal(sub.events.length, total, `${unique.length} receipts and one completion, nothing twice`)
  t.ok(contiguous(sub.events, 1), 'seq 1..n, nothing skipped')
  const completed = sub.events.filter((e) => e.evento === 'notification.completed')
  t.equal(completed.length, 1, 'exactly one notification.completed')
  const body = JSON.parse(completed[0]?.corpo_json ?? '{}')
  t.match(body, { notification_id: sendId, recipients: DEVICES, successful: DEVICES, failed: 0, errored: 0, canal: 'grpc' })
  t.same(
    new Set(sub.events.filter((e) => e.evento === 'delivery.received').map((e) => e.player_id)),
    new Set(unique.map((p) => p.player_id)),
  )
  sub.cancel()
})

t.test('an API instance SIGKILLed with open streams: streams_ativos forgets them within seconds', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await s.createApp()
  await s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: app.id, modo: 'grpc' }, headers: basic(app.api_key) })
  const grpcPort = await freePort()
  const other = await startPombo(
    await freePort(),
    { PM_GRPC_PORT: String(grpcPort), PM_VAULT_KEY: VAULT_KEY, NODE_OPTIONS: '' },
    'api',
    [],
    {
      shared: { schema: s.cfg.dbSchema, prefix: s.cfg.redisPrefix },
    },
  )
  t.teardown(() => other.stop())
  const auth = `Basic ${app.api_key}`
  const ativos = async (): Promise<number> =>
    (await s.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`, { headers: basic(app.api_key) })).json.streams_ativos
  const remote = [subscribe(grpcPort, auth, app.id), subscribe(grpcPort, auth, app.id)]
  const local = subscribe(s.svc.grpc?.port as number, auth, app.id)
  await until('three streams counted across the two instances', async () => (await ativos()) === 3)
  other.child.kill('SIGKILL')
  const t0 = Date.now()
  for (const r of remote) t.not((await r.ended).code, 0, 'the remote streams broke')
  await until('the dead instance forgotten', async () => (await ativos()) === 1, DEFAULT_STREAM.ttlMs + 5_000)
  const took = Date.now() - t0
  t.ok(took <= DEFAULT_STREAM.ttlMs + 2_500, `streams_ativos back to 1 within ${took} ms of the kill`)
  // A fixed pause on purpose: the assertion is that the live stream is not forgotten during it.
  await new Promise((r) => setTimeout(r, 2_500))
  t.equal(await ativos(), 1, 'the live stream keeps being counted (its heartbeats go on)')
  local.cancel()
  await until('and a closed one goes at once', async () => (await ativos()) === 0, 2_000)
})
