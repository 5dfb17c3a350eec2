// What a wrong key costs, through the real routes: a random well-formed key is looked up once, then answered from
// the directory's negative cache (bounded, PM_KEY_CACHE_MISS_TTL_MS), which every key change drops on every
// instance; and failed authentications (app keys, the platform key, gRPC) count toward the source's per-IP limit,
// past which the source gets 429 before any lookup, while a key that already passed here keeps working.
import { randomBytes } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import t from 'tap'
import { newApiKey } from '../../src/apps/key-format'
import { insertKey } from '../../src/apps/store'
import { tx } from '../../src/db/pool'
import { streamApp, subscribe, until } from '../helpers/grpc'
import { basic, FakeClock, PLATFORM_KEY, startService, type TestService } from '../helpers/service'

/** Counts the key lookups (SELECT … FROM app_keys WHERE kid) the service makes. */
function countKeyLookups(s: TestService): { readonly n: number } {
  const db = s.svc.deps.db as unknown as { query: (...a: unknown[]) => unknown }
  const original = db.query.bind(db)
  const counter = { n: 0 }
  db.query = (...a: unknown[]) => {
    const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string })?.text
    if (text?.includes('FROM app_keys WHERE kid')) counter.n++
    return original(...a)
  }
  return counter
}

const wrongKey = () => newApiKey(false).apiKey

async function server(s: TestService, appId: string, key: string): Promise<number> {
  return (await s.call('GET', `/api/v1/notifications?app_id=${appId}`, { headers: basic(key) })).status
}

t.test('a random well-formed key costs one lookup, then none until its entry leaves', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await s.createApp()
  const lookups = countKeyLookups(s)
  const key = wrongKey()
  for (let i = 0; i < 20; i++) t.equal(await server(s, app.id, key), 401)
  t.equal(lookups.n, 1, 'twenty tries, one query')
  clock.advance(9_000)
  await server(s, app.id, key)
  t.equal(lookups.n, 1, 'still answered from memory')
  clock.advance(1_001)
  await server(s, app.id, key)
  t.equal(lookups.n, 2, 'a miss lives PM_KEY_CACHE_MISS_TTL_MS (10 s), not the 60 s of a found key')
})

t.test('a key created after its kid was tried works at once on every instance', async (t) => {
  const a = await startService(t, { env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const b = await startService(t, { shareWith: a, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await a.createApp()
  // Instance B is asked for a key that does not exist yet: it remembers the miss.
  const future = newApiKey(false)
  t.equal(await server(b, app.id, future.apiKey), 401)
  // The key comes into being as a rotation writes one (the kid is random there, so it is written here), and the
  // rotation's invalidation reaches B.
  await tx(a.svc.deps.db, (c) => insertKey(c, app.id, future, new Date()))
  const rot = await a.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: { authorization: `Bearer ${PLATFORM_KEY}` } })
  t.equal(rot.status, 200)
  let status = 401
  const started = Date.now()
  while (status !== 200 && Date.now() - started < 1_000) {
    status = await server(b, app.id, future.apiKey)
    if (status !== 200) await new Promise((r) => setTimeout(r, 10))
  }
  t.equal(status, 200, 'B forgot its miss: the key works there')
  t.ok(Date.now() - started < 1_000, `within a second (${Date.now() - started} ms), not after the cache's lifetime`)
  t.equal(await server(b, app.id, rot.json.api_key), 200, "and the rotation's own key")
})

t.test('failed authentications count toward the per-IP limit; past it, 429 before any lookup', async (t) => {
  const s = await startService(t, { env: { PM_LIMIT_IP_PER_MIN: '6' } })
  const app = await s.createApp()
  const fresh = await s.createApp()
  t.equal(await server(s, app.id, app.api_key), 200, 'a key that passes')
  const lookups = countKeyLookups(s)
  const answers: number[] = []
  for (let i = 0; i < 4; i++) answers.push(await server(s, app.id, wrongKey()))
  answers.push(
    (await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, { headers: { authorization: 'Basic nonsense' } })).status,
  )
  answers.push((await s.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: { authorization: 'Bearer wrong' } })).status)
  t.same(answers, [401, 401, 401, 401, 401, 401], 'six failures answered 401 (app keys, a malformed one, the platform key)')
  t.equal(lookups.n, 4)
  const limited = await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, { headers: basic(wrongKey()) })
  t.equal(limited.status, 429, 'the seventh: 429')
  t.match(limited.json?.errors?.[0], /por IP/)
  t.equal(lookups.n, 4, 'and no lookup for it')
  t.equal(
    (await s.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: { authorization: `Bearer ${PLATFORM_KEY}x` } })).status,
    429,
    'the platform key too',
  )
  t.equal(await server(s, fresh.id, fresh.api_key), 429, 'a key not yet seen here waits with its source')
  t.equal(await server(s, app.id, app.api_key), 200, 'a key that already passed here is not held back')
  const device = await s.call('POST', '/api/v1/players', {
    body: { app_id: app.id, device_type: 1, identifier: `tok-${randomBytes(4).toString('hex')}` },
  })
  t.equal(device.status, 429, "the failures used the source's allowance on the public routes too")
})

t.test(
  'gRPC: failed keys count toward the caller address, and past the limit the stream answers RESOURCE_EXHAUSTED',
  async (t) => {
    const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '3' } })
    const port = s.svc.grpc?.port as number
    const a = await streamApp(s, 'grpc')
    // streamApp's own requests (a registration) spent part of the allowance: use what is left with wrong keys.
    const codes: number[] = []
    for (let i = 0; i < 4; i++) codes.push((await subscribe(port, `Basic ${wrongKey()}`, a.app.id).ended).code)
    t.equal(codes[codes.length - 1], grpc.status.RESOURCE_EXHAUSTED, `the last try is refused by the limit (${codes.join(', ')})`)
    t.ok(codes.slice(0, -1).every((c) => c === grpc.status.UNAUTHENTICATED || c === grpc.status.RESOURCE_EXHAUSTED))
    // The app's own key passed here already (streamApp used it over HTTP): its stream opens.
    const ok = subscribe(port, a.auth, a.app.id)
    t.teardown(() => ok.cancel())
    await until('the stream of a key that passed is open', () => s.svc.grpc?.open === 1)
    t.equal(s.svc.grpc?.open, 1)
  },
)

t.test("only failures hold a source back: a server sharing its devices' address keeps sending", async (t) => {
  const s = await startService(t, { env: { PM_LIMIT_IP_PER_MIN: '5' } })
  const app = await s.createApp()
  const answers: number[] = []
  for (let i = 0; i < 7; i++) {
    const r = await s.call('POST', '/api/v1/players', {
      body: { app_id: app.id, device_type: 1, identifier: `tok-${randomBytes(4).toString('hex')}` },
    })
    answers.push(r.status)
  }
  t.same(answers.slice(-2), [429, 429], `the public routes are at their limit (${answers.join(', ')})`)
  t.equal(await server(s, app.id, app.api_key), 200, 'a key first used here now, from that address, is not held back')
  for (let i = 0; i < 5; i++) t.equal(await server(s, app.id, wrongKey()), 401)
  t.equal(await server(s, app.id, wrongKey()), 429, 'five failures of its own are what hold it back')
})
