// the spec, Sends idempotency: replay byte for byte, conflict, concurrent wait and 409, dry run not consuming the key.
import t from 'tap'
import { writeSends } from '../../src/sends/store'
import { basic, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

async function device(s: TestService, app: App, identifier: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })
  return r.json.id
}

function post(s: TestService, app: App, raw: string, headers: Record<string, string> = {}) {
  return s.call('POST', '/api/v1/notifications', {
    raw,
    headers: { ...basic(app.api_key), 'content-type': 'application/json', ...headers },
  })
}

const sends = async (s: TestService) => (await s.sql('SELECT count(*)::int AS n FROM sends'))[0]?.n

t.test('same key, same body: the original answer byte for byte, X-Idempotent-Replay, nothing sent again', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const body = JSON.stringify({ app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a, 'bad-id'] })
  const first = await post(s, app, body, { 'Idempotency-Key': 'k-1' })
  t.equal(first.status, 200)
  t.equal(first.headers.get('x-idempotent-replay'), null)
  // Same body in another key order and spacing: the canonical form is the same.
  const reordered = JSON.stringify({ include_player_ids: [a, 'bad-id'], contents: { en: 'oi' }, app_id: app.id }, null, 2)
  const again = await post(s, app, reordered, { 'Idempotency-Key': 'k-1' })
  t.equal(again.status, 200)
  t.equal(again.text, first.text, 'byte for byte')
  t.equal(again.headers.get('x-idempotent-replay'), 'true')
  t.equal(again.headers.get('x-pm-lane'), first.headers.get('x-pm-lane'))
  t.equal(again.headers.get('x-pm-recipients-exato'), first.headers.get('x-pm-recipients-exato'))
  t.not(again.headers.get('x-pm-request-id'), first.headers.get('x-pm-request-id'), 'a new call, a new request id')
  t.equal(await sends(s), 1)
  t.equal((await s.sql('SELECT cardinality(audience) AS n FROM sends'))[0]?.n, 1)
})

t.test('same key, different body: 422 with both hashes; numbers compared as they arrived', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const one = `{"app_id":"${app.id}","contents":{"en":"oi"},"include_player_ids":["${a}"],"ttl":1}`
  const onePointZero = one.replace('"ttl":1}', '"ttl":1.0}')
  t.equal((await post(s, app, one, { 'Idempotency-Key': 'k-2' })).status, 200)
  const r = await post(s, app, onePointZero, { 'Idempotency-Key': 'k-2' })
  t.equal(r.status, 422, '1 and 1.0 differ')
  t.match(r.json.explain.hash_original, /^[0-9a-f]{64}$/)
  t.match(r.json.explain.hash_recebido, /^[0-9a-f]{64}$/)
  t.not(r.json.explain.hash_original, r.json.explain.hash_recebido)
  t.equal(await sends(s), 1)
})

t.test('the key comes from the header, then idempotency_key, then external_id', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const base = { app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a] }
  const viaBody = JSON.stringify({ ...base, idempotency_key: 'body-key' })
  t.equal((await post(s, app, viaBody)).status, 200)
  t.equal((await post(s, app, viaBody)).headers.get('x-idempotent-replay'), 'true')
  const ext = JSON.stringify({ ...base, external_id: 'campanha-1' })
  const first = await post(s, app, ext)
  t.equal((await post(s, app, ext)).text, first.text)
  const otherCampaign = JSON.stringify({ ...base, contents: { en: 'outra' }, external_id: 'campanha-1' })
  t.equal((await post(s, app, otherCampaign)).status, 422, 'one external_id reused across campaigns without a key')
  // The header wins over both body forms.
  const withHeader = await post(s, app, otherCampaign, { 'Idempotency-Key': 'header-key' })
  t.equal(withHeader.status, 200)
  t.equal(withHeader.headers.get('x-idempotent-replay'), null)
  t.equal(await sends(s), 3)
})

t.test('the nobody-reachable answer is replayed too', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const body = JSON.stringify({
    app_id: app.id,
    contents: { en: 'oi' },
    include_player_ids: ['00000000-0000-4000-8000-000000000009'],
  })
  const first = await post(s, app, body, { 'Idempotency-Key': 'k-none' })
  t.equal(first.json.id, '')
  const again = await post(s, app, body, { 'Idempotency-Key': 'k-none' })
  t.equal(again.text, first.text)
  t.equal(again.headers.get('x-idempotent-replay'), 'true')
})

t.test('dry run validates and resolves but does not consume the key', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const body = JSON.stringify({ app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a] })
  const dry = await post(s, app, body, { 'Idempotency-Key': 'k-dry', 'X-Dry-Run': 'true' })
  t.same(dry.json, { id: '', recipients: 1, dry_run: true })
  const real = await post(s, app, body, { 'Idempotency-Key': 'k-dry' })
  t.equal(real.status, 200)
  t.match(real.json.id, /^[0-9a-f-]{36}$/)
  t.equal(real.headers.get('x-idempotent-replay'), null, 'the real call is not a replay of the dry run')
  t.equal(await sends(s), 1)
})

t.test('concurrent calls with one key: the second waits for the first and gets its answer', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const body = JSON.stringify({ app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a] })
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(s, app, body, { 'Idempotency-Key': 'k-race' })))
  t.ok(answers.every((r) => r.status === 200))
  t.equal(new Set(answers.map((r) => r.text)).size, 1, 'one answer for all')
  t.equal(answers.filter((r) => r.headers.get('x-idempotent-replay') === 'true').length, 7)
  t.equal(await sends(s), 1)
})

t.test('a call still in flight after 3 s: 409', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  // Another instance holds the key and never finishes.
  await s.svc.deps.redis.set(s.svc.deps.keys.idempotencyLock(app.id, 'k-stuck'), 'other', 'PX', 60_000)
  const started = Date.now()
  const body = JSON.stringify({ app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a] })
  const r = await post(s, app, body, { 'Idempotency-Key': 'k-stuck' })
  t.equal(r.status, 409)
  t.ok(Date.now() - started >= 2_900, 'waited about 3 seconds')
  t.ok(r.json.errors[0])
  t.equal(await sends(s), 0)
})

t.test('records expire after 30 days', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const body = JSON.stringify({ app_id: app.id, contents: { en: 'oi' }, include_player_ids: [a] })
  await post(s, app, body, { 'Idempotency-Key': 'k-old' })
  const [rec] = await s.sql("SELECT expires_at - created_at = interval '30 days' AS ok FROM idempotency")
  t.equal(rec?.ok, true)
  await s.sql("UPDATE idempotency SET expires_at = now() - interval '1 second'")
  const again = await post(s, app, body.replace('oi', 'outro'), { 'Idempotency-Key': 'k-old' })
  t.equal(again.status, 200, 'an expired key is free again')
})

t.test('a key already held by a live record: the losing send is not written (one statement, no rollback needed)', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const row = (id: string, idemKey: string) => ({
    appId: app.id,
    id,
    lane: 0,
    targetKind: 'segments' as const,
    includedSegments: ['Subscribed Users'],
    includePlayerIds: null,
    includeExternalUserIds: null,
    platforms: { ios: true, android: true, web: true },
    message: '{}',
    name: null,
    headings: null,
    contents: { en: 'x' },
    externalId: null,
    audience: null,
    idemKey,
    recipients: 1,
    recipientsExact: false,
    ttlS: 60,
    queuedAt: new Date(),
    sendAfter: null,
  })
  const rec = (key: string, expiresAt: Date) => ({
    appId: app.id,
    key,
    bodyHash: 'h',
    status: 200,
    lane: 0,
    exact: false,
    response: '{}',
    createdAt: new Date(),
    expiresAt,
  })
  const later = new Date(Date.now() + 3600_000)
  const first = await writeSends(s.svc.deps.db, [row('00000000-0000-4000-8000-0000000000a1', 'k')], [rec('k', later)])
  t.same([...first], [`${app.id}:k`])
  const second = await writeSends(s.svc.deps.db, [row('00000000-0000-4000-8000-0000000000a2', 'k')], [rec('k', later)])
  t.same([...second], [], 'the key was taken')
  t.equal(await sends(s), 1, 'and the losing send was not written')
  await s.sql("UPDATE idempotency SET expires_at = now() - interval '1 second'")
  const third = await writeSends(s.svc.deps.db, [row('00000000-0000-4000-8000-0000000000a3', 'k')], [rec('k', later)])
  t.same([...third], [`${app.id}:k`], 'an expired record is replaced')
  t.equal(await sends(s), 2)
})
