// The fake APNs over real TLS HTTP/2: ES256 provider tokens checked (key, team, age, environment), headers and
// payload checked and recorded, scripted tokens answering Apple's reasons, GOAWAY and SETTINGS seen by a client.
import { generateKeyPairSync, randomUUID } from 'node:crypto'
import https from 'node:https'
import jwt from 'jsonwebtoken'
import t from 'tap'
import { type ApnsKey, type FakeApns, startFakeApns } from '../fakes/apns'
import { RawH2Client } from '../fakes/h2-client'
import { testCa } from '../fakes/tls'

const BUNDLE = 'com.pombo.demo'
const providerToken = (k: Pick<ApnsKey, 'p8' | 'keyId' | 'teamId'>, iat = Math.floor(Date.now() / 1000)) =>
  jwt.sign({ iss: k.teamId, iat }, k.p8, { algorithm: 'ES256', keyid: k.keyId })
const payload = { aps: { alert: { title: 'Oi', body: 'Olá' }, 'mutable-content': 1 }, pm_msg_id: 'm1', pm_rcpt: 'r'.repeat(32) }

let apns: FakeApns
let key: ApnsKey
let client: RawH2Client
t.before(async () => {
  apns = await startFakeApns({ bundleId: BUNDLE })
  key = apns.key()
  client = new RawH2Client(apns.url)
})
t.teardown(async () => {
  await client.close()
  await apns.close()
})

const headers = (extra: Record<string, string> = {}, k: Pick<ApnsKey, 'p8' | 'keyId' | 'teamId'> = key) => ({
  authorization: `bearer ${providerToken(k)}`,
  'apns-topic': BUNDLE,
  'apns-push-type': 'alert',
  'apns-priority': '10',
  'apns-expiration': '0',
  ...extra,
})
const push = (token: string, h: Record<string, string> = headers(), body: unknown = payload) =>
  client.post(`/3/device/${token}`, h, body)

t.test('a push with a valid ES256 provider token is accepted and recorded', async (t) => {
  t.match(key, { p8: /^-----BEGIN PRIVATE KEY-----\n/, keyId: /^[A-Z0-9]{10}$/, teamId: /^[A-Z0-9]{10}$/, environment: 'both' })
  const apnsId = randomUUID()
  const a = await push('a1b2c3', headers({ 'apns-id': apnsId, 'apns-collapse-id': 'promo' }))
  t.equal(a.status, 200)
  t.equal(a.headers['apns-id'], apnsId, 'apns-id echoed')
  t.equal(a.text, '', 'empty body on success')
  const [rec] = await apns.waitForDelivered(1)
  t.match(rec, { token: 'a1b2c3', status: 200, step: 'ok', keyId: key.keyId, teamId: key.teamId, apnsId })
  t.match(rec?.headers, { 'apns-topic': BUNDLE, 'apns-push-type': 'alert', 'apns-priority': '10', 'apns-collapse-id': 'promo' })
  t.same(rec?.body, payload)
  const b = await push('a1b2c3')
  t.match(b.headers['apns-id'], /^[0-9a-f-]{36}$/, 'a UUID is made when the request has none')
})

t.test('provider tokens: wrong key, unknown key, wrong team, missing and expired tokens are refused', async (t) => {
  const stranger = generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  })
  const cases: Array<[string, Record<string, string>, number, string]> = [
    [
      'signed by another key under a registered kid',
      headers({}, { ...key, p8: stranger.privateKey }),
      403,
      'InvalidProviderToken',
    ],
    ['unknown key id', headers({}, { ...key, keyId: 'ZZZZZZZZZZ' }), 403, 'InvalidProviderToken'],
    ["iss is not the key's team", headers({}, { ...key, teamId: 'TEAM000000' }), 403, 'InvalidProviderToken'],
    ['no authorization', { 'apns-topic': BUNDLE }, 403, 'MissingProviderToken'],
    [
      'iat older than one hour',
      { ...headers(), authorization: `bearer ${providerToken(key, Math.floor(Date.now() / 1000) - 3601)}` },
      403,
      'ExpiredProviderToken',
    ],
    ['not a JWT', { ...headers(), authorization: 'bearer abc' }, 403, 'InvalidProviderToken'],
  ]
  for (const [name, h, status, reason] of cases) {
    const a = await push('tok-auth', h)
    t.equal(a.status, status, name)
    t.same(a.json, { reason }, name)
    t.ok(a.headers['apns-id'], `${name}: apns-id on errors too`)
  }
  const revoked = apns.key()
  t.equal((await push('tok-auth', headers({}, revoked))).status, 200)
  apns.revokeKey(revoked.keyId)
  t.same((await push('tok-auth', headers({}, revoked))).json, { reason: 'InvalidProviderToken' }, 'a revoked key stops working')
})

t.test('a key used in the other environment answers BadEnvironmentKeyIdInToken', async (t) => {
  const sandboxKey = apns.key({ environment: 'sandbox' })
  t.equal(apns.environment, 'production')
  const a = await push('tok-env', headers({}, sandboxKey))
  t.equal(a.status, 403)
  t.same(a.json, { reason: 'BadEnvironmentKeyIdInToken' })
  apns.setEnvironment('sandbox')
  const b = await push('tok-env', headers({}, sandboxKey))
  t.equal(b.status, 200, 'the same key works against sandbox')
  t.ok(b.headers['apns-unique-id'], 'sandbox answers carry apns-unique-id')
  apns.setEnvironment('production')

  const other = await startFakeApns({ envMismatchReason: 'BadEnvironmentKeyInToken', environment: 'sandbox' })
  t.teardown(() => other.close())
  const prodKey = other.key({ environment: 'production' })
  const c = new RawH2Client(other.url)
  t.teardown(() => c.close())
  t.same(
    (await c.post('/3/device/x', headers({}, prodKey), payload)).json,
    { reason: 'BadEnvironmentKeyInToken' },
    'the newer spelling on demand',
  )

  apns.registerDevice('sandbox-device', { environment: 'sandbox' })
  t.same((await push('sandbox-device')).json, { reason: 'BadDeviceToken' }, 'a sandbox device token sent to production')
  apns.registerDevice('other-app-device', { topic: 'com.other.app' })
  t.same((await push('other-app-device')).json, { reason: 'DeviceTokenNotForTopic' })
})

t.test('headers and payload are checked', async (t) => {
  const { 'apns-topic': _, ...noTopic } = headers()
  const cases: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['no apns-topic', noTopic, payload, 400, 'MissingTopic'],
    ['topic of another app', headers({ 'apns-topic': 'com.other.app' }), payload, 400, 'DeviceTokenNotForTopic'],
    ['unknown push type', headers({ 'apns-push-type': 'loud' }), payload, 400, 'InvalidPushType'],
    ['priority 7', headers({ 'apns-priority': '7' }), payload, 400, 'BadPriority'],
    ['expiration not a number', headers({ 'apns-expiration': 'tomorrow' }), payload, 400, 'BadExpirationDate'],
    ['apns-id not a UUID', headers({ 'apns-id': 'abc' }), payload, 400, 'BadMessageId'],
    ['collapse id over 64 bytes', headers({ 'apns-collapse-id': 'c'.repeat(65) }), payload, 400, 'BadCollapseId'],
    ['empty payload', headers(), '', 400, 'PayloadEmpty'],
    ['payload over 4 KB', headers(), { aps: { alert: 'x'.repeat(4100) } }, 413, 'PayloadTooLarge'],
  ]
  for (const [name, h, body, status, reason] of cases) {
    const a = await push('tok-h', h, body)
    t.equal(a.status, status, name)
    t.same(a.json, { reason }, name)
  }
  t.equal(
    (await push('tok-h', headers({ 'apns-topic': `${BUNDLE}.voip`, 'apns-push-type': 'voip' }))).status,
    200,
    'suffixed topics of the bundle',
  )
  t.equal((await client.request('GET', '/3/device/x', headers())).status, 405)
  t.equal((await client.post('/4/device/x', headers(), payload)).status, 404)
  t.equal((await push('tok-raw', headers(), 'not json')).status, 200)
  t.match(
    apns.requests.at(-1),
    { token: 'tok-raw', body: null, bodyError: /JSON/ },
    'a body that is not JSON is flagged in the record',
  )
})

t.test("scripted tokens answer Apple's reasons", async (t) => {
  const cases: Array<[string, number, string]> = [
    ['bad-device-token', 400, 'BadDeviceToken'],
    ['device-token-not-for-topic', 400, 'DeviceTokenNotForTopic'],
    ['unregistered', 410, 'Unregistered'],
    ['expired-token', 410, 'ExpiredToken'],
    ['too-many', 429, 'TooManyRequests'],
    ['internal', 500, 'InternalServerError'],
    ['unavailable', 503, 'ServiceUnavailable'],
    ['shutdown', 503, 'Shutdown'],
  ]
  for (const [behaviour, status, reason] of cases) {
    apns.script(`tok-${behaviour}`, behaviour)
    const before = Date.now()
    const a = await push(`tok-${behaviour}`)
    t.equal(a.status, status, behaviour)
    t.equal(a.json.reason, reason, behaviour)
    if (status === 410)
      t.ok(a.json.timestamp >= before && a.json.timestamp <= Date.now(), `${behaviour}: timestamp in ms since the epoch`)
    else t.same(Object.keys(a.json), ['reason'], behaviour)
  }
  apns.script('flaky', 'internal, unavailable, ok')
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await push('flaky')).status)
  t.same(statuses, [500, 503, 200, 200])
  apns.script('slow', 'slow:250')
  const t0 = Date.now()
  t.equal((await push('slow')).status, 200)
  t.ok(Date.now() - t0 >= 240)
  apns.script('dropped', 'drop')
  await t.rejects(push('dropped'), { code: 'ERR_HTTP2_STREAM_ERROR' })
})

t.test('GOAWAY carries the JSON reason; SETTINGS carry the stream cap', async (t) => {
  const capped = await startFakeApns({ maxConcurrentStreams: 5 })
  t.teardown(() => capped.close())
  const k = capped.key()
  const c = new RawH2Client(capped.url)
  t.teardown(() => c.close())
  t.equal((await c.ready()).maxConcurrentStreams, 5, 'cap advertised in the first SETTINGS')
  t.equal((await c.post('/3/device/x', headers({ 'apns-topic': 'any.app' }, k), payload)).status, 200)
  const updated = new Promise<number | undefined>((resolve) =>
    c.session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)),
  )
  capped.setMaxConcurrentStreams(2)
  t.equal(await updated, 2, 'lowered on a live connection')

  capped.script('held', 'hang')
  const held = [1, 2].map(() => c.post('/3/device/held', headers({ 'apns-topic': 'any.app' }, k), payload).catch(() => 'closed'))
  const goaway = new Promise<[number, string]>((resolve) =>
    c.session.once('goaway', (code, _last, data) => resolve([code, data?.toString() ?? ''])),
  )
  capped.goaway()
  const [code, data] = await goaway
  t.equal(code, 0)
  t.same(JSON.parse(data), { reason: 'Shutdown' }, 'APNs puts the JSON reason in the GOAWAY frame')
  await capped.close()
  t.same(await Promise.all(held), ['closed', 'closed'], 'streams still open when the fake closes are cut')
})

t.test('GOAWAY either lets requests in flight finish or refuses them (never processed: safe to retry)', async (t) => {
  for (const refuseInFlight of [false, true]) {
    const f = await startFakeApns()
    t.teardown(() => f.close())
    const k = f.key()
    const c = new RawH2Client(f.url)
    t.teardown(() => c.close())
    const h = headers({ 'apns-topic': 'any.app' }, k)
    t.equal((await c.post('/3/device/warm', h, payload)).status, 200)
    f.script('slow', 'slow:200')
    const inFlight = c.post('/3/device/slow', h, payload).then(
      (a) => a.status,
      (e: Error) => e.message,
    )
    await f.waitForRequests(2)
    f.goaway('Shutdown', { refuseInFlight })
    if (refuseInFlight) t.match(await inFlight, /REFUSED_STREAM/, 'refused')
    else t.equal(await inFlight, 200, 'answered before the connection closes')
    const again = new RawH2Client(f.url)
    t.equal((await again.post('/3/device/next', h, payload)).status, 200, 'a new connection works')
    await again.close()
  }
})

t.test('HTTP/1.1 is refused; a new token too soon on one connection is TooManyProviderTokenUpdates', async (t) => {
  const err = await new Promise<Error | null>((resolve) => {
    const req = https.request(`${apns.url}/3/device/x`, { method: 'POST', ca: testCa() }, () => resolve(null))
    req.on('error', resolve)
    req.end('{}')
  })
  t.ok(err, 'no HTTP/1.1 answer')

  const strict = await startFakeApns({ minTokenUpdateIntervalMs: 20 * 60_000 })
  t.teardown(() => strict.close())
  const k = strict.key()
  const c = new RawH2Client(strict.url)
  t.teardown(() => c.close())
  const h = (jwtText: string) => ({ authorization: `bearer ${jwtText}`, 'apns-topic': 'any.app' })
  const first = providerToken(k)
  t.equal((await c.post('/3/device/x', h(first), payload)).status, 200)
  t.equal((await c.post('/3/device/x', h(first), payload)).status, 200, 'the same signed token again is fine')
  // ES256 signatures are randomised: signing the same claims again is a new token to APNs
  const a = await c.post('/3/device/x', h(providerToken(k)), payload)
  t.equal(a.status, 429)
  t.same(a.json, { reason: 'TooManyProviderTokenUpdates' })
  t.equal(strict.stats().providerTokensSeen, 2, 'stats tell how many distinct provider tokens were presented')
})
