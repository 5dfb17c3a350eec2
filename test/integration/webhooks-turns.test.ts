// The webhook dispatcher's turns (docs/design/webhooks.md, "Several dispatchers" and "Fair shares"): no connection,
// transaction or lock is held while a call is in flight (the lease is a row); a turn that lost its lease records
// nothing and the dispatcher holding the queue now has the say; endpoints that hang cannot take the slots of
// endpoints that answer; a refused destination is explained without the addresses its name resolved to.
import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import t from 'tap'
import type { Webhook } from '../../src/core/config'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { basic, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type App = Awaited<ReturnType<TestService['createApp']>>

const FAST: Partial<Webhook> = { pollMs: 20, retryDelaysMs: [100], timeoutMs: 3_000 }

function service(t: Tap, webhook: Partial<Webhook> = {}, shareWith?: TestService) {
  return startService(t, {
    shareWith,
    dispatcher: true,
    webhookCa: testCa(),
    env: { PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    webhook: { ...FAST, ...webhook },
  })
}
type Tap = Parameters<typeof startService>[0]

/** A new app whose webhook goes to `path` on the receiver. */
async function destination(s: TestService, rx: WebhookReceiver, path: string): Promise<App> {
  const app = await s.createApp()
  const r = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url(path), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  if (r.status !== 200) throw new Error(`PUT: ${r.status} ${r.text}`)
  rx.secret(path, r.json.segredo)
  return app
}

async function emit(s: TestService, app: App, n: number): Promise<string[]> {
  const seqs: string[] = []
  for (let i = 0; i < n; i++) {
    const body = {
      evento: 'delivery.received',
      app_id: app.id,
      notification_id: randomUUID(),
      player_id: randomUUID(),
      quando: new Date().toISOString().replace('Z', '+00:00'),
      canal: 'webhook',
    }
    const [row] = await s.sql<{ seq: string }>(
      "INSERT INTO events (app_id, evento, body, created_at) VALUES ($1, 'delivery.received', $2, now()) RETURNING seq",
      [app.id, body],
    )
    seqs.push((row as { seq: string }).seq)
  }
  return seqs
}

const acked = (rx: WebhookReceiver, path: string) =>
  rx
    .on(path)
    .filter((r) => r.status === 200)
    .map((r) => r.headers['x-pm-evento-id'])

t.test('while a call is in flight the dispatcher holds no connection, transaction or lock: the lease is a row', async (t) => {
  const rx = await WebhookReceiver.start(t)
  // A long lease: no renewal falls inside the observation.
  const s = await service(t, { leaseMs: 60_000 })
  const pool = s.svc.dispatcher?.pool as pg.Pool
  const out = new Map<pg.PoolClient, number>()
  const pids = new Set<number>()
  pool.on('acquire', (c) => {
    out.set(c, Date.now())
    pids.add((c as unknown as { processID: number }).processID)
  })
  pool.on('release', (_err, c) => out.delete(c))
  const app = await destination(s, rx, '/held')
  rx.script('/held', [{ hang: true }])
  await emit(s, app, 2)
  const [req] = await rx.waitFor(1, '/held')
  // A pause on purpose: what is asserted is that nothing stays held while the call goes on.
  await new Promise((r) => setTimeout(r, 400))
  t.equal(rx.on('/held')[0]?.status, 0, 'the call is still in flight')
  const longest = Math.max(0, ...[...out.values()].map((at) => Date.now() - at))
  t.ok(longest < 200, `no connection checked out through the call (longest ${longest} ms)`)
  const sessions = await s.sql<{ pid: number; state: string; open: boolean; locks: number }>(
    `SELECT a.pid, a.state, a.xact_start < to_timestamp($2::float8 / 1000) AS open,
            (SELECT count(*)::int FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory') AS locks
       FROM pg_stat_activity a WHERE a.pid = ANY($1::int[])`,
    [[...pids], req?.at],
  )
  t.ok(sessions.length > 0, 'the dispatcher has connections')
  t.same(
    sessions.filter((x) => x.open || x.state.startsWith('idle in transaction') || x.locks > 0),
    [],
    'none of its sessions is in a transaction begun before the call, or holds an advisory lock',
  )
  const [lease] = await s.sql<{ leased: boolean }>(
    'SELECT lease_id IS NOT NULL AND leased_until > clock_timestamp() AS leased FROM webhook_destinations WHERE app_id = $1',
    [app.id],
  )
  t.same(lease, { leased: true }, 'the queue is held by its lease row')
  t.ok(req?.signed)
})

t.test('a turn that lost its lease records nothing: the dispatcher that took the queue over has the say', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const a = await service(t, { leaseMs: 60_000, timeoutMs: 1_500 })
  const app = await destination(a, rx, '/lost')
  rx.script('/lost', [{ hang: true }])
  const seqs = await emit(a, app, 3)
  await rx.waitFor(1, '/lost')
  // As if A had stalled past its lease: the lease expires while A's call is in flight.
  await a.sql(
    "UPDATE webhook_destinations SET leased_until = clock_timestamp() - interval '1 second' WHERE app_id = $1 AND active",
    [app.id],
  )
  const b = await service(t, {}, a)
  t.ok(b.svc.dispatcher)
  await until('B delivers every event', () => acked(rx, '/lost').length === 3)
  t.same(acked(rx, '/lost'), seqs, 'in order, each once')
  await until('A finds its lease lost when its call ends', () => a.logs.some((l) => l.evento === 'webhook_lease_perdido'))
  t.same(await a.sql('SELECT result FROM webhook_attempts'), [], "A's timed-out attempt is not counted")
  const [d] = await a.sql('SELECT last_seq, head_attempts, consecutive_failures, lease_id FROM webhook_destinations WHERE active')
  t.same(d, { last_seq: seqs[2], head_attempts: 0, consecutive_failures: 0, lease_id: null }, "B's outcome stands")
})

t.test('endpoints that hang do not take the slots of an endpoint that answers', async (t) => {
  const rx = await WebhookReceiver.start(t)
  // Two calls at once; a call of 1 s or more marks its destination slow. Three slow apps: more than the slots.
  const s = await service(t, { concurrency: 2, slowMs: 1_000, timeoutMs: 5_000 })
  const slow = ['/slow-1', '/slow-2', '/slow-3']
  const slowApps: App[] = []
  for (const p of slow) slowApps.push(await destination(s, rx, p))
  const fast = await destination(s, rx, '/fast')
  for (const p of slow) rx.fallback(p, { delayMs: 1_500 })
  const slowSeqs: string[][] = []
  for (const a of slowApps) slowSeqs.push(await emit(s, a, 6))
  await rx.waitFor(2, undefined)

  // Both slots are taken by calls that take 1.5 s, and each slow app has 9 s of events queued. A turn ends after
  // its bound, and the apps take turns: the fast app gets a slot within the first slow calls.
  const t1 = Date.now()
  const first = await emit(s, fast, 3)
  await rx.waitFor(3, '/fast', 4_500)
  const wait1 = Date.now() - t1
  t.ok(wait1 < 4_500, `the fast app's events arrived within the first slow calls (${wait1} ms)`)

  // Once known slow, the slow apps share one slot, and the other stays free for the fast app.
  const flags = async () => {
    const rows = await s.sql<{ id: string; slow: boolean }>('SELECT app_id AS id, slow FROM webhook_destinations')
    return [...slowApps, fast].map((a) => rows.find((f) => f.id === a.id)?.slow)
  }
  await until('each slow app recorded as slow', async () => (await flags()).slice(0, 3).every((x) => x === true), 15_000)
  t.same(await flags(), [true, true, true, false], 'webhook_destinations.slow: the slow ones marked, the fast one not')
  const t2 = Date.now()
  const second = await emit(s, fast, 3)
  await rx.waitFor(6, '/fast', 1_200)
  const wait2 = Date.now() - t2
  t.ok(wait2 < 1_200, `with slow calls in flight, the fast app's next events took ${wait2} ms (a slow call: 1,500 ms)`)
  t.same(acked(rx, '/fast'), [...first, ...second], 'in order, each once')

  // The slow apps are not starved either: they take turns at their shared slot, each in order.
  await until('every slow app progresses', () => slow.every((p) => acked(rx, p).length >= 2), 20_000)
  for (const [i, p] of slow.entries()) {
    const got = acked(rx, p)
    t.same(got, (slowSeqs[i] as string[]).slice(0, got.length), `${p}: in order, each once`)
    t.equal(rx.maxInflight(p), 1, `${p}: one call at a time`)
  }
})

t.test('a refused destination names its host, not the addresses the name resolved to', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const s = await startService(t, { dispatcher: true, webhookCa: testCa(), webhook: { ...FAST, retryDelaysMs: [50] } })
  const app = await s.createApp()
  const r = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url('/p', 'localhost'), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  t.equal(r.status, 200)
  await emit(s, app, 1)
  await until('a refused attempt', async () => (await s.sql('SELECT 1 FROM webhook_attempts')).length >= 1)
  const [row] = await s.sql<{ result: string; reason: string }>('SELECT result, reason FROM webhook_attempts ORDER BY id LIMIT 1')
  t.equal(row?.result, 'refused')
  t.equal(row?.reason, 'localhost resolve para endereço privado ou de loopback')
  const logged = s.logs.filter((l) => l.evento === 'webhook_falhou').map((l) => String(l.motivo))
  t.ok(logged.length > 0)
  for (const text of [row?.reason ?? '', ...logged]) {
    t.notMatch(text, /127\.0\.0\.1|::1|\d+\.\d+\.\d+\.\d+/, `no address in "${text}"`)
  }
  t.equal(rx.requests.length, 0, 'nothing reached the receiver')
})
