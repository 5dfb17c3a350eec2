// The app-key guard on a server route (the spec, Authentication): the three forms, every failure, rotation overlap on
// the service clock, and revocation seen by every instance within a second.
import t from 'tap'
import { FakeClock, PLATFORM_KEY, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

async function setup(s: TestService): Promise<{ app: App; player: string; path: string }> {
  const app = await s.createApp()
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-auth' } })
  return { app, player: r.json.id, path: `/api/v1/players/${r.json.id}?app_id=${app.id}` }
}

const read = (s: TestService, path: string, authorization?: string) =>
  s.call('GET', path, { headers: authorization === undefined ? {} : { authorization } })

t.test('the three Authorization forms are accepted', async (t) => {
  const s = await startService(t)
  const { app, path } = await setup(s)
  for (const h of [
    `Basic ${app.api_key}`,
    `Bearer ${app.api_key}`,
    `Basic ${Buffer.from(`qualquer:${app.api_key}`).toString('base64')}`,
  ]) {
    t.equal((await read(s, path, h)).status, 200, h.slice(0, 12))
  }
})

t.test('every failure is 401 in the envelope, and the attempted key is never logged', async (t) => {
  const s = await startService(t)
  const { app, path } = await setup(s)
  const forged = `${app.api_key.slice(0, -1)}${app.api_key.endsWith('A') ? 'B' : 'A'}`
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'missing'],
    ['', 'missing'],
    ['Token abc', 'malformed'],
    [`Basic ${app.api_key.slice(0, 20)}`, 'malformed'],
    [`Bearer pm_live_zzzzzzzz_${'A'.repeat(43)}`, 'unknown'],
    [`Bearer ${forged}`, 'wrong secret, right kid'],
  ]
  // The right key passes first: a key that passed is remembered (src/apps/auth.ts), and that must not let a wrong
  // secret of the same kid through.
  t.equal((await read(s, path, `Bearer ${app.api_key}`)).status, 200, 'the right key passes')
  for (const [h, why] of cases) {
    const r = await read(s, path, h)
    t.equal(r.status, 401, why)
    t.ok(r.json.errors[0], why)
    t.equal(r.json.explain.request_id, r.headers.get('x-pm-request-id'))
  }
  t.notOk(JSON.stringify(s.logs).includes(forged.slice(17)), 'no secret in any log line')
  t.ok(
    s.logs.some((l) => l.evento === 'auth_rejeitada' && l.kid === app.kid),
    'the kid is audited',
  )
})

t.test('a foreign app_id is 401 (never 404); a paused app is 403', async (t) => {
  const s = await startService(t)
  const { app, player } = await setup(s)
  const other = await s.createApp()
  const foreign = await read(s, `/api/v1/players/${player}?app_id=${other.id}`, `Basic ${app.api_key}`)
  t.equal(foreign.status, 401)
  const otherKey = await read(s, `/api/v1/players/${player}?app_id=${app.id}`, `Basic ${other.api_key}`)
  t.equal(otherKey.status, 401)
  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await read(s, `/api/v1/players/${player}?app_id=${app.id}`, `Basic ${app.api_key}`)).status, 403)
  await s.svc.deps.apps.setPaused(app.id, false)
  t.equal((await read(s, `/api/v1/players/${player}?app_id=${app.id}`, `Basic ${app.api_key}`)).status, 200)
})

t.test('rotation: both keys work for 24 h, then the previous one answers 401; rotation itself never 401s', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const { app, path } = await setup(s)
  const rot = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: { authorization: `Bearer ${PLATFORM_KEY}` } })
  t.equal(rot.status, 200)
  t.equal((await read(s, path, `Basic ${app.api_key}`)).status, 200, 'previous key, right after rotation')
  t.equal((await read(s, path, `Basic ${rot.json.api_key}`)).status, 200, 'new key')
  clock.advance(24 * 3600_000 - 1_000)
  t.equal((await read(s, path, `Basic ${app.api_key}`)).status, 200, 'previous key, just before its deadline')
  clock.advance(1_001)
  const expired = await read(s, path, `Basic ${app.api_key}`)
  t.equal(expired.status, 401, 'previous key after 24 h')
  t.equal((await read(s, path, `Basic ${rot.json.api_key}`)).status, 200, 'new key still good')
})

t.test('revocation takes effect on every instance within a second, despite the 60 s cache', async (t) => {
  const a = await startService(t)
  const b = await startService(t, { shareWith: a })
  const { app, path } = await setup(a)
  // Both instances now hold the key in their caches.
  t.equal((await read(a, path, `Basic ${app.api_key}`)).status, 200)
  t.equal((await read(b, path, `Basic ${app.api_key}`)).status, 200)
  await a.svc.deps.apps.revokeKeys(app.id)
  const started = Date.now()
  let status = 200
  while (status === 200 && Date.now() - started < 1_000) {
    status = (await read(b, path, `Basic ${app.api_key}`)).status
    if (status === 200) await new Promise((r) => setTimeout(r, 10))
  }
  t.equal(status, 401, 'instance B refuses the revoked key')
  t.ok(Date.now() - started < 1_000, `within a second (${Date.now() - started} ms)`)
  t.equal((await read(a, path, `Basic ${app.api_key}`)).status, 401)
})

t.test('a pause made on one instance is seen by the other at once', async (t) => {
  const a = await startService(t)
  const b = await startService(t, { shareWith: a })
  const { app, path } = await setup(a)
  t.equal((await read(b, path, `Basic ${app.api_key}`)).status, 200)
  await a.svc.deps.apps.setPaused(app.id, true)
  let status = 200
  const started = Date.now()
  while (status === 200 && Date.now() - started < 1_000) {
    status = (await read(b, path, `Basic ${app.api_key}`)).status
    if (status === 200) await new Promise((r) => setTimeout(r, 10))
  }
  t.equal(status, 403)
})

t.test('the key cache is what serves repeat requests: a key deleted behind the cache still works until it expires', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const { app, path } = await setup(s)
  t.equal((await read(s, path, `Basic ${app.api_key}`)).status, 200)
  // Written behind the service's back (no invalidation): the cache answers for up to 60 s (the spec, Authentication 6).
  await s.sql('UPDATE app_keys SET revoked_at = now()')
  t.equal((await read(s, path, `Basic ${app.api_key}`)).status, 200, 'cached')
  clock.advance(60_001)
  t.equal((await read(s, path, `Basic ${app.api_key}`)).status, 401, 're-read after the cache lifetime')
})
