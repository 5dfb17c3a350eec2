// ApnsProvider against the fake APNs over TLS HTTP/2: what APNs receives, every outcome class, the provider token
// (ES256, reused inside Apple's 20–60 minute window, signed anew after ExpiredProviderToken), environments.
import t from 'tap'
import type { ApnsCredential } from '../../src/providers/credentials'
import { APNS_PRODUCTION, APNS_SANDBOX, ApnsProvider } from '../../src/providers/apns'
import { ApnsTokens } from '../../src/providers/apns-token'
import { H2Pool } from '../../src/h2/pool'
import { providerHttp2FromEnv } from '../helpers/provider-http2'
import { type FakeApns, startFakeApns } from '../fakes/apns'
import { testCa } from '../fakes/tls'
import { ios, PROOF, pushFor, SEND_ID } from '../helpers/push'

const BUNDLE = 'com.example.pombo'
let nowMs = Date.now()
const clock = () => nowMs
let apns: FakeApns
let pool: H2Pool

function credential(o: { environment?: 'sandbox' | 'production' | 'both' } = {}): ApnsCredential {
  const k = apns.key({ environment: o.environment ?? 'both' })
  return { p8: k.p8, keyId: k.keyId, teamId: k.teamId, bundleId: BUNDLE, env: 'production' }
}

t.before(async () => {
  // Apple refuses a connection's provider token replaced within 20 minutes: the fake checks it too.
  apns = await startFakeApns({ bundleId: BUNDLE, now: clock, minTokenUpdateIntervalMs: 20 * 60_000 })
  // Long enough for a first request's TLS handshake and token check on a loaded machine; the hanging device's test
  // waits it out once.
  pool = new H2Pool({ ca: testCa(), timeoutMs: 2_000, ...providerHttp2FromEnv() })
})
t.teardown(async () => {
  await pool.close()
  await apns.close()
})

t.test('an alert: headers and payload APNs receives', async (t) => {
  const cred = credential()
  const provider = new ApnsProvider(cred, { baseUrl: apns.url, pool, clock })
  const push = pushFor({
    contents: { de: 'Hallo', pt: 'Olá' },
    headings: { es: 'Hola', pt: 'Oi' },
    subtitle: { en: 'Sub' },
    ios_sound: 'chime.caf',
    ios_attachments: { img: 'https://img.example.com/a.png' },
    data: { n: 1, obj: { a: [true] } },
    url: 'https://example.com/x',
    collapse_id: 'c1',
    ttl: 600,
    priority: 10,
  })
  t.strictSame(await provider.send(ios('aa01'), push), { kind: 'accepted' })
  const rec = apns.delivered.find((r) => r.token === 'aa01')
  t.match(rec, { keyId: cred.keyId, teamId: cred.teamId, status: 200 })
  t.match(rec?.headers, {
    ':path': '/3/device/aa01',
    authorization: /^bearer ey/,
    'apns-topic': BUNDLE,
    'apns-push-type': 'alert',
    'apns-priority': '10',
    'apns-expiration': String(Math.floor(nowMs / 1000) + 600),
    'apns-collapse-id': 'c1',
  })
  t.strictSame(rec?.body, {
    aps: { alert: { title: 'Oi', subtitle: 'Sub', body: 'Olá' }, sound: 'chime.caf', 'mutable-content': 1 },
    n: 1,
    obj: { a: [true] },
    pm_url: 'https://example.com/x',
    pm_msg_id: SEND_ID,
    pm_rcpt: PROOF,
    pm_att: { img: 'https://img.example.com/a.png' },
    pmx_contents: { de: 'Hallo', pt: 'Olá' },
    pmx_headings: { es: 'Hola', pt: 'Oi' },
    pmx_subtitle: { en: 'Sub' },
  })
})

t.test('background and marketing pushes', async (t) => {
  const provider = new ApnsProvider(credential(), { baseUrl: apns.url, pool, clock })
  await provider.send(ios('bg01'), pushFor({ contents: { en: '' }, content_available: true, priority: 10, ttl: 0 }))
  await provider.send(ios('mk01'), pushFor({ priority: 'marketing' }))
  const bg = apns.delivered.find((r) => r.token === 'bg01')
  t.match(bg?.headers, { 'apns-push-type': 'background', 'apns-priority': '5', 'apns-expiration': '0' })
  t.strictSame(bg?.body.aps, { 'content-available': 1 })
  t.match(apns.delivered.find((r) => r.token === 'mk01')?.headers, { 'apns-push-type': 'alert', 'apns-priority': '5' })
})

t.test('every outcome class from scripted answers', async (t) => {
  const provider = new ApnsProvider(credential(), { baseUrl: apns.url, pool, clock })
  const cases: Array<[string, string, unknown]> = [
    ['c-unreg', 'unregistered', { kind: 'dead-token', reason: 'Unregistered' }],
    ['c-expired', 'expired-token', { kind: 'dead-token', reason: 'ExpiredToken' }],
    ['c-bad', 'bad-device-token', { kind: 'bad-device-token', reason: 'BadDeviceToken' }],
    ['c-topic', 'device-token-not-for-topic', { kind: 'credential', reason: 'DeviceTokenNotForTopic' }],
    ['c-429', 'too-many', { kind: 'quota', retryAfterMs: 30_000 }],
    ['c-500', 'internal', { kind: 'transient', reason: 'InternalServerError' }],
    ['c-503', 'unavailable', { kind: 'transient', reason: 'ServiceUnavailable' }],
    ['c-shutdown', 'shutdown', { kind: 'transient', reason: 'Shutdown' }],
    ['c-slow', 'slow:100', { kind: 'accepted' }],
  ]
  for (const [token, b] of cases) apns.script(token, b)
  const got = await Promise.all(cases.map(([token]) => provider.send(ios(token), pushFor())))
  for (const [i, [token, b, want]] of cases.entries()) t.strictSame(got[i], want, `${token}: ${b}`)
  apns.script('c-hang', 'hang')
  t.match(await provider.send(ios('c-hang'), pushFor()), { kind: 'transient', reason: /^timeout/ })
  apns.script('c-drop', 'drop')
  t.match(await provider.send(ios('c-drop'), pushFor()), { kind: 'transient', reason: /^connection/ })
})

t.test('a key for the other environment: credential outcome naming BadEnvironmentKeyIdInToken', async (t) => {
  t.equal(apns.environment, 'production')
  const provider = new ApnsProvider(credential({ environment: 'sandbox' }), { baseUrl: apns.url, pool, clock })
  t.strictSame(await provider.send(ios('env01'), pushFor()), { kind: 'credential', reason: 'BadEnvironmentKeyIdInToken' })
})

t.test('a revoked key is InvalidProviderToken; a .p8 that is not a key never reaches APNs', async (t) => {
  const cred = credential()
  apns.revokeKey(cred.keyId)
  t.strictSame(await new ApnsProvider(cred, { baseUrl: apns.url, pool, clock }).send(ios('rv01'), pushFor()), {
    kind: 'credential',
    reason: 'InvalidProviderToken',
  })
  const sent = apns.stats().requests
  const broken = { ...credential(), p8: 'garbage' }
  t.match(await new ApnsProvider(broken, { baseUrl: apns.url, pool, clock }).send(ios('rv02'), pushFor()), {
    kind: 'credential',
    reason: /^InvalidProviderToken/,
  })
  t.equal(apns.stats().requests, sent)
})

t.test('the provider token: reused for 50 minutes, then signed anew (never sooner than Apple allows)', async (t) => {
  const tokens = new ApnsTokens()
  const provider = new ApnsProvider(credential(), { baseUrl: apns.url, pool, clock, tokens })
  const seen = () => new Set(apns.requests.filter((r) => r.token.startsWith('tw')).map((r) => r.headers.authorization)).size
  const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => provider.send(ios(`tw${i}`), pushFor())))
  t.ok(outcomes.every((o) => o.kind === 'accepted'))
  t.equal(tokens.signed, 1)
  nowMs += 49 * 60_000
  t.strictSame(await provider.send(ios('tw-49'), pushFor()), { kind: 'accepted' })
  t.equal(tokens.signed, 1, 'same token at 49 minutes')
  nowMs += 2 * 60_000
  t.strictSame(await provider.send(ios('tw-51'), pushFor()), { kind: 'accepted' }, 'no TooManyProviderTokenUpdates')
  t.equal(tokens.signed, 2, 'a new token at 51 minutes')
  t.equal(seen(), 2)
})

t.test('ExpiredProviderToken: one new token and one retry', async (t) => {
  const tokens = new ApnsTokens(3 * 3600_000) // a cache that would keep a token past Apple's hour
  const provider = new ApnsProvider(credential(), { baseUrl: apns.url, pool, clock, tokens })
  t.strictSame(await provider.send(ios('ex01'), pushFor()), { kind: 'accepted' })
  nowMs += 61 * 60_000
  const sent = apns.stats().requests
  t.strictSame(await provider.send(ios('ex02'), pushFor()), { kind: 'accepted' })
  t.equal(apns.stats().requests - sent, 2, 'the 403, then the retry')
  t.equal(tokens.signed, 2)
  t.match(apns.requests.at(-2), { status: 403, reason: 'ExpiredProviderToken' })
})

t.test('the host follows the credential environment unless overridden', async (t) => {
  const seen: string[] = []
  const spy = {
    request: async (origin: string) => {
      seen.push(origin)
      return { status: 0, failure: 'closed', detail: 'spy' }
    },
  } as unknown as H2Pool
  await new ApnsProvider({ ...credential(), env: 'production' }, { baseUrl: null, pool: spy, clock }).send(ios('h1'), pushFor())
  await new ApnsProvider({ ...credential(), env: 'sandbox' }, { baseUrl: null, pool: spy, clock }).send(ios('h2'), pushFor())
  await new ApnsProvider({ ...credential(), env: 'sandbox' }, { baseUrl: apns.url, pool: spy, clock }).send(ios('h3'), pushFor())
  t.strictSame(seen, [APNS_PRODUCTION, APNS_SANDBOX, apns.url])
})
