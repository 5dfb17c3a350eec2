// POST /api/v1/notifications: the four 200 shapes, the audience rules, the headers, the durable hand-off.
import t from 'tap'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

export async function device(s: TestService, app: App, identifier: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier, ...extra } })
  if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
  return r.json.id
}

export function send(s: TestService, app: App, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Olá' }, ...body },
    headers: { ...basic(app.api_key), ...headers },
  })
}

const count = async (s: TestService, table: string) => (await s.sql(`SELECT count(*)::int AS n FROM ${table}`))[0]?.n

t.test('normal shape: {id, recipients}, lane and exactness headers, send and delivery rows in Postgres', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const b = await device(s, app, 'tok-b')
  const r = await send(s, app, { include_player_ids: [a, b] })
  t.equal(r.status, 200)
  t.same(Object.keys(r.json), ['id', 'recipients'])
  t.match(r.json.id, /^[0-9a-f-]{36}$/)
  t.equal(r.json.recipients, 2)
  t.equal(r.headers.get('x-pm-lane'), '0', 'default priority (high) is the transactional lane')
  t.equal(r.headers.get('x-pm-recipients-exato'), 'true')
  t.equal(r.headers.get('x-idempotent-replay'), null)
  t.ok(r.headers.get('x-pm-request-id'))
  const [row] = await s.sql('SELECT recipients, remaining, lane, target_kind FROM sends WHERE id = $1', [r.json.id])
  t.same(row, { recipients: 2, remaining: 2, lane: 0, target_kind: 'players' })
  const [list] = await s.sql('SELECT audience FROM sends WHERE id = $1', [r.json.id])
  t.same([...(list?.audience ?? [])].sort(), [a, b].sort(), 'the delivery list is written with the send')
})

t.test('marketing lane by body or header; the body wins', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  t.equal((await send(s, app, { include_player_ids: [a], priority: 5 })).headers.get('x-pm-lane'), '1')
  t.equal((await send(s, app, { include_player_ids: [a], priority: 'marketing' })).headers.get('x-pm-lane'), '1')
  t.equal((await send(s, app, { include_player_ids: [a] }, { 'X-Pm-Priority': 'marketing' })).headers.get('x-pm-lane'), '1')
  const both = await send(s, app, { include_player_ids: [a], priority: 10 }, { 'X-Pm-Priority': 'marketing' })
  t.equal(both.status, 200)
  t.equal(both.headers.get('x-pm-lane'), '0', 'body wins, not an error')
})

t.test('partial shape: malformed, unknown, sandbox and dead ids are dropped and listed (errors is an object)', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ok = await device(s, app, 'tok-ok')
  const sandbox = await device(s, app, 'test:tok-sandbox')
  const dead = await device(s, app, 'tok-dead')
  await s.sql('UPDATE devices SET invalid_identifier = true WHERE id = $1', [dead])
  const unknown = '00000000-0000-4000-8000-000000000001'
  const r = await send(s, app, { include_player_ids: [ok, 'not-a-uuid', unknown, sandbox, dead, ok.toUpperCase()] })
  t.equal(r.status, 200)
  t.equal(r.json.recipients, 1, 'a repeated id (any case) delivers once')
  t.type(r.json.errors, 'object')
  t.notOk(Array.isArray(r.json.errors))
  t.same(r.json.errors.invalid_player_ids.sort(), ['not-a-uuid', unknown, sandbox, dead].sort())
  t.equal(r.json.errors.invalid_external_user_ids, undefined)
  t.same((await s.sql('SELECT audience FROM sends'))[0]?.audience, [ok])
})

t.test('nobody reachable: {id: "", recipients: 0, errors: [text]} and nothing stored', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const sandbox = await device(s, app, 'test:only')
  const r = await send(s, app, { include_player_ids: [sandbox, '00000000-0000-4000-8000-000000000002'] })
  t.equal(r.status, 200)
  t.equal(r.json.id, '')
  t.equal(r.json.recipients, 0)
  t.ok(Array.isArray(r.json.errors) && typeof r.json.errors[0] === 'string')
  t.equal(await count(s, 'sends'), 0)
})

t.test('dry run: audience resolved for real, nothing stored', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const r = await send(s, app, { include_player_ids: [a, '00000000-0000-4000-8000-000000000003'] }, { 'X-Dry-Run': 'true' })
  t.equal(r.status, 200)
  t.same(r.json, { id: '', recipients: 1, dry_run: true })
  t.equal(r.headers.get('x-pm-recipients-exato'), 'true')
  t.equal(await count(s, 'sends'), 0)
})

t.test('external user ids: every reachable device of each user; users with none are listed', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  for (const tok of ['u1-a', 'u1-b', 'u1-c']) await device(s, app, tok, { external_user_id: 'ana' })
  await device(s, app, 'test:u2', { external_user_id: 'bia' })
  const r = await send(s, app, { include_external_user_ids: ['ana', 'bia', 'caio', 'ana'] })
  t.equal(r.status, 200)
  t.equal(r.json.recipients, 3, 'one user with 3 devices gives 3 deliveries; a repeated user counts once')
  t.same(r.json.errors, { invalid_external_user_ids: ['bia', 'caio'] })
  const [row] = await s.sql('SELECT include_external_user_ids, audience FROM sends WHERE id = $1', [r.json.id])
  t.same(row?.include_external_user_ids, ['ana', 'bia', 'caio', 'ana'], 'the list as sent')
  t.equal(row?.audience.length, 3)
})

t.test('platform exclusion flags: absent includes, false excludes, true restricts nothing', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ios = await device(s, app, 'ios', { device_type: 0 })
  const android = await device(s, app, 'android', { device_type: 1 })
  const web = await device(s, app, 'web', { device_type: 5 })
  const ids = [ios, android, web]
  const n = async (flags: Record<string, boolean>) => (await send(s, app, { include_player_ids: ids, ...flags })).json.recipients
  t.equal(await n({}), 3)
  t.equal(await n({ isIos: false }), 2)
  t.equal(await n({ isAndroid: false, isAnyWeb: false }), 1)
  t.equal(await n({ isIos: true }), 3, 'true includes and restricts nothing')
  const none = await send(s, app, { include_player_ids: ids, isIos: false, isAndroid: false, isAnyWeb: false })
  t.equal(none.json.id, '')
})

t.test('segments: estimate, not exact; a union never counts a device twice; sandbox and dead devices excluded', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const fresh = await device(s, app, 'fresh')
  const old = await device(s, app, 'old')
  await device(s, app, 'test:sb')
  const dead = await device(s, app, 'dead')
  await s.sql("UPDATE devices SET last_active = now() - interval '30 days' WHERE id = $1", [old])
  await s.sql('UPDATE devices SET invalid_identifier = true WHERE id = $1', [dead])
  await s.sql("UPDATE devices SET last_receipt_at = now() - interval '1 day' WHERE id = $1", [fresh])
  const r = await send(s, app, { included_segments: ['Subscribed Users', 'Active Users', 'Subscribed Users'] })
  t.equal(r.status, 200)
  t.equal(r.json.recipients, 2)
  t.equal(r.headers.get('x-pm-recipients-exato'), 'false')
  t.equal(
    (await s.sql('SELECT audience FROM sends WHERE id = $1', [r.json.id]))[0]?.audience,
    null,
    'the worker expands segments',
  )
  t.equal((await send(s, app, { included_segments: ['Active Users'] })).json.recipients, 1)
  t.equal((await send(s, app, { included_segments: ['Total Subscriptions'] })).json.recipients, 2, 'a segment alone')
  t.equal((await send(s, app, { included_segments: ['Engaged Users'] })).json.recipients, 1)
  const [row] = await s.sql('SELECT included_segments, recipients_exact FROM sends WHERE id = $1', [r.json.id])
  t.same(row?.included_segments, ['Subscribed Users', 'Active Users'])
  t.equal(row?.recipients_exact, false)
})

t.test('hand-off: the send lands on its partition stream; a lost stream is re-derived by the sweeper', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const r = await send(s, app, { include_player_ids: [a] })
  const handoff = s.svc.deps.sends.handoff
  const stream = handoff.streamOf(app.id)
  const redis = s.svc.deps.redis
  let entries: Array<[string, string[]]> = []
  for (let i = 0; i < 50 && entries.length === 0; i++) {
    entries = await redis.xrange(stream, '-', '+')
    if (entries.length === 0) await new Promise((res) => setTimeout(res, 10))
  }
  t.equal(entries.length, 1)
  const fields = entries[0]?.[1] ?? []
  t.same(fields.slice(0, 6), ['a', app.id, 's', r.json.id, 'l', '0'])
  t.equal(fields[6], 'c', 'a one-device send due now travels whole (delivery-carried.test.ts)')
  await redis.del(stream) // Redis lost its data
  t.equal(await handoff.sweep(), 0, 'within the grace period nothing is re-enqueued')
  clock.advance(s.cfg.jobs.handoffGraceMs + 1)
  t.equal(await handoff.sweep(), 1)
  t.equal((await redis.xrange(stream, '-', '+')).length, 1)
  t.equal(await handoff.sweep(), 0, 'once re-enqueued it waits another grace period')
  clock.advance(s.cfg.jobs.handoffGraceMs + 1)
  await s.sql('UPDATE sends SET picked_at = $1', [new Date(clock.ms)])
  t.equal(await handoff.sweep(), 0, 'a send a worker is working on (fresh picked_at) is left alone')
  clock.advance(s.cfg.jobs.handoffGraceMs + 1)
  t.equal(await handoff.sweep(), 1, 'a send whose worker went silent is enqueued again')
  await s.sql('UPDATE sends SET completed_at = $1', [new Date(clock.ms)])
  clock.advance(s.cfg.jobs.handoffGraceMs + 1)
  t.equal(await handoff.sweep(), 0, 'a completed send never')
})

t.test(
  'the sweeper leaves a send waiting unread in its stream alone, and re-enqueues it once the readers passed it',
  async (t) => {
    const clock = new FakeClock()
    const s = await startService(t, { clock })
    const app = await s.createApp()
    const a = await device(s, app, 'tok-a')
    const handoff = s.svc.deps.sends.handoff
    const stream = handoff.streamOf(app.id)
    const redis = s.svc.deps.redis
    // A stream with an older entry, which the workers' group has read: a worker holding back its reading
    // (PM_WORKER_MAX_SENDS) with a backlog behind it.
    const older = `${clock.ms - 60_000}-0`
    await redis.xadd(stream, older, 'a', app.id, 's', '00000000-0000-0000-0000-000000000000', 'l', '0')
    await redis.xgroup('CREATE', stream, 'workers', older)
    const r = await send(s, app, { include_player_ids: [a] })
    for (let i = 0; i < 50 && (await redis.xlen(stream)) < 2; i++) await new Promise((res) => setTimeout(res, 10))
    t.equal(await redis.xlen(stream), 2, 'the send is handed off behind the read entry')
    clock.advance(s.cfg.jobs.handoffGraceMs + 1)
    t.equal(await handoff.sweep(), 0, 'older than the grace period, but still unread in its stream: not enqueued twice')
    t.equal(await redis.xlen(stream), 2)
    await redis.xreadgroup('GROUP', 'workers', 'w1', 'COUNT', 10, 'STREAMS', stream, '>')
    t.equal(await handoff.sweep(), 1, 'once the readers passed it (and nobody touched the send), it is enqueued again')
    const last = (await redis.xrange(stream, '-', '+')).at(-1)?.[1] ?? []
    t.same(last.slice(0, 4), ['a', app.id, 's', r.json.id])
  },
)

t.test(
  "the sweeper's stamp, made a deadlock's victim, is written again: the next sweep does not enqueue the send twice",
  async (t) => {
    const clock = new FakeClock()
    const s = await startService(t, { clock })
    const app = await s.createApp()
    const a = await device(s, app, 'tok-a')
    await send(s, app, { include_player_ids: [a] })
    const handoff = s.svc.deps.sends.handoff
    const stream = handoff.streamOf(app.id)
    const redis = s.svc.deps.redis
    for (let i = 0; i < 50 && (await redis.xlen(stream)) < 1; i++) await new Promise((res) => setTimeout(res, 10))
    await redis.del(stream) // Redis lost its data
    // The first stamp fails as Postgres fails a deadlock's victim (a sequence is not rolled back with the statement).
    await s.sql('CREATE SEQUENCE stamp_once')
    await s.sql(`CREATE FUNCTION stamp_once() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN IF nextval('stamp_once') = 1 THEN RAISE EXCEPTION 'deadlock detected (the test)' USING ERRCODE = 'deadlock_detected'; END IF;
               RETURN NEW; END $$`)
    await s.sql(`CREATE TRIGGER stamp_once BEFORE UPDATE ON sends FOR EACH ROW
               WHEN (NEW.enqueued_at IS DISTINCT FROM OLD.enqueued_at) EXECUTE FUNCTION stamp_once()`)
    clock.advance(s.cfg.jobs.handoffGraceMs + 1)
    t.equal(await handoff.sweep(), 1, 'enqueued again, and stamped on the second try')
    t.equal(Number((await s.sql('SELECT last_value FROM stamp_once'))[0]?.last_value), 2, 'the stamp was tried twice')
    t.equal(await handoff.sweep(), 0, 'the next sweep finds it stamped')
    t.equal(await redis.xlen(stream), 1, 'one entry')
  },
)

t.test('a scheduled send reaches its stream when due, not before', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const at = new Date(clock.ms + 3600_000).toISOString()
  const r = await send(s, app, { include_player_ids: [a], send_after: at })
  t.equal(r.status, 200)
  const handoff = s.svc.deps.sends.handoff
  // A fixed pause on purpose: the assertion is that no hand-off lands on the stream during it.
  await new Promise((res) => setTimeout(res, 20))
  t.equal((await s.svc.deps.redis.xrange(handoff.streamOf(app.id), '-', '+')).length, 0)
  t.equal(await handoff.sweep(), 0)
  clock.advance(3600_000)
  t.equal(await handoff.sweep(), 1)
  t.equal((await s.svc.deps.redis.xrange(handoff.streamOf(app.id), '-', '+')).length, 1)
  const [row] = await s.sql('SELECT floor(extract(epoch FROM send_after))::bigint AS sa FROM sends WHERE id = $1', [r.json.id])
  t.equal(Number(row?.sa), Math.floor(Date.parse(at) / 1000))
})

t.test('a refused request writes nothing', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const cases: Array<[Record<string, unknown>, number]> = [
    [{ include_player_ids: [a], contents: { en: 'x'.repeat(4000) } }, 422],
    [{ include_player_ids: [a], data: { pm_x: 1 } }, 422],
    [{ include_player_ids: [a], filters: [] }, 400],
    [{ include_player_ids: [a], included_segments: ['Subscribed Users'] }, 400],
    [{ contents: { en: 'x' } }, 400],
  ]
  for (const [body, status] of cases) t.equal((await send(s, app, body)).status, status, JSON.stringify(body).slice(0, 60))
  t.equal(await count(s, 'sends'), 0)
})

t.test('auth: 401 without key or for a foreign app_id, 403 paused, 400 app_id missing', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const body = { app_id: app.id, contents: { en: 'x' }, included_segments: ['Subscribed Users'] }
  t.equal((await s.call('POST', '/api/v1/notifications', { body })).status, 401)
  t.equal((await s.call('POST', '/api/v1/notifications', { body, headers: basic(other.api_key) })).status, 401)
  const noApp = await s.call('POST', '/api/v1/notifications', {
    body: { ...body, app_id: undefined },
    headers: basic(app.api_key),
  })
  t.equal(noApp.status, 400)
  t.equal(noApp.json.explain.campo, 'app_id')
  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await s.call('POST', '/api/v1/notifications', { body, headers: basic(app.api_key) })).status, 403)
})

t.test('body over 256 KB is 413', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const r = await send(s, app, { included_segments: ['Subscribed Users'], name: 'x'.repeat(257 * 1024) })
  t.equal(r.status, 413)
  t.equal(r.json.explain.limite, 256 * 1024)
})

t.test('sends per second per app: 429 without Retry-After', async (t) => {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 + 100)
  const s = await startService(t, { clock, limits: { sendsPerSec: 3 } })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await send(s, app, { include_player_ids: [a] })).status)
  t.same(statuses, [200, 200, 200, 429])
  const limited = await send(s, app, { include_player_ids: [a] })
  t.equal(limited.headers.get('retry-after'), null)
  t.equal(limited.json.explain.limite, 3)
  clock.advance(1000)
  t.equal((await send(s, app, { include_player_ids: [a] })).status, 200, 'the next second starts afresh')
  const other = await s.createApp()
  const b = await device(s, other, 'tok-b')
  clock.advance(0)
  t.equal((await send(s, other, { include_player_ids: [b] })).status, 200, 'per app')
})
