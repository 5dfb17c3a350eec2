// FcmProvider against the fake FCM over TLS HTTP/2: what FCM receives, every outcome class from scripted answers,
// and the OAuth access token (obtained once, shared, refreshed before expiry, fetched again after a 401).
import t from 'tap'
import type { FcmCredential } from '../../src/providers/credentials'
import { FcmProvider } from '../../src/providers/fcm'
import { fcmMessage } from '../../src/providers/fcm-body'
import { H2Pool } from '../../src/h2/pool'
import { providerHttp2FromEnv } from '../helpers/provider-http2'
import { FCM_SCOPE, type FakeFcm, startFakeFcm } from '../fakes/fcm'
import { testCa } from '../fakes/tls'
import { android, PROOF, pushFor, SEND_ID, web } from '../helpers/push'

let nowMs = Date.now()
const clock = () => nowMs
let fcm: FakeFcm
let pool: H2Pool
let sa: FcmCredential
let provider: FcmProvider
t.before(async () => {
  fcm = await startFakeFcm({ now: clock })
  // Long enough for a new connection's TLS handshake and token on a loaded machine (600 ms timed out the send after a
  // dropped session in CI); the hanging device's test waits it out once.
  pool = new H2Pool({ ca: testCa(), timeoutMs: 2_000, ...providerHttp2FromEnv() })
  sa = fcm.serviceAccount('pombo-test') as unknown as FcmCredential
  provider = new FcmProvider(sa, { baseUrl: fcm.url, pool, clock })
  // The first send opens the sessions (TLS, the token's RSA signature): on a busy machine that can outlast the pool's
  // 600 ms, which no test here is about, so it is made before them, again until accepted.
  for (let i = 0; i < 20; i++) if ((await provider.send(android(`warm-${i}`), pushFor())).kind === 'accepted') break
})
t.teardown(async () => {
  await pool.close()
  await fcm.close()
})

t.test('Android: the message FCM receives', async (t) => {
  const push = pushFor({
    contents: { pt: 'Olá', en: 'Hello' },
    headings: { fr: 'Bonjour', es: 'Hola' },
    data: { n: 1, obj: { a: [1] }, s: 'x' },
    url: 'https://example.com/p',
    small_icon: 'ic_stat',
    android_accent_color: '#00FF00',
    android_sound: 'ping',
    android_channel_id: 'promo',
    big_picture: 'https://img.example.com/x.png',
    collapse_id: 'c1',
    ttl: 120,
    priority: 10,
  })
  t.strictSame(await provider.send(android('tok-android'), push), { kind: 'accepted' })
  const rec = fcm.delivered.find((r) => r.target === 'tok-android')
  t.match(rec, { httpVersion: '2.0', project: 'pombo-test', clientEmail: sa.client_email, status: 200 })
  t.match(rec?.headers, { authorization: /^Bearer ya29\./, 'content-type': 'application/json' })
  t.strictSame(rec?.body, {
    message: {
      token: 'tok-android',
      data: {
        n: '1',
        obj: '{"a":[1]}',
        pm_url: 'https://example.com/p',
        s: 'x',
        pm_msg_id: SEND_ID,
        pm_rcpt: PROOF,
        pmx_title: 'Hola',
        pmx_body: 'Hello',
        pmx_small_icon: 'ic_stat',
        pmx_accent_color: '#00FF00',
        pmx_sound: 'ping',
        pmx_channel_id: 'promo',
        pmx_big_picture: 'https://img.example.com/x.png',
        pmx_collapse_id: 'c1',
        pmx_contents: '{"en":"Hello","pt":"Olá"}',
        pmx_headings: '{"es":"Hola","fr":"Bonjour"}',
      },
      android: { priority: 'HIGH', ttl: '120s', collapse_key: 'c1' },
    },
  })
})

t.test('web push: the message FCM receives', async (t) => {
  const push = pushFor({
    contents: { de: 'Hallo', pt: 'Olá' },
    large_icon: 'https://img.example.com/i.png',
    url: 'https://example.com/w',
    priority: 'marketing',
    ttl: 30,
  })
  t.strictSame(await provider.send(web('tok-web', 8), push), { kind: 'accepted' })
  const rec = fcm.delivered.find((r) => r.target === 'tok-web')
  t.strictSame(rec?.body.message.webpush, { headers: { TTL: '30', Urgency: 'normal' } })
  t.strictSame(rec?.body.message.data, {
    pm_url: 'https://example.com/w',
    pm_msg_id: SEND_ID,
    pm_rcpt: PROOF,
    pmx_body: 'Hallo',
    pmx_large_icon: 'https://img.example.com/i.png',
    pmx_contents: '{"de":"Hallo","pt":"Olá"}',
  })
  t.notOk('android' in (rec?.body.message ?? {}))
})

t.test('iOS through FCM: an apns block FCM accepts', async (t) => {
  const push = pushFor({ contents: { en: 'Hi' }, subtitle: { en: 'Sub' }, content_available: true, ttl: 60 })
  t.strictSame(await provider.send({ deviceId: 'dev-i', token: 'tok-ios-fcm', deviceType: 0 }, push), { kind: 'accepted' })
  const m = fcm.delivered.find((r) => r.target === 'tok-ios-fcm')?.body.message
  t.strictSame(m?.apns?.payload, { aps: { alert: { body: 'Hi', subtitle: 'Sub' }, 'content-available': 1 } })
  t.match(m?.apns?.headers, {
    'apns-push-type': 'alert',
    'apns-priority': '10',
    'apns-expiration': String(Math.floor(nowMs / 1000) + 60),
  })
  t.equal(m?.data.pm_rcpt, PROOF)
})

t.test(
  'the bodies of a fan-out equal direct builds, device by device, with single sends and look-alike messages in between',
  async (t) => {
    // The provider builds a message's first body directly, keeps a template from its second use on (fcm.ts), and
    // keeps no template at all for a message seen once. Every body must be what fcmMessage builds for that device.
    const fanOut = pushFor({
      contents: { en: 'Big sale', pt: 'Promoção' },
      headings: { en: 'Shop' },
      data: { k: 'v"q' },
      collapse_id: 'c9',
      ttl: 90,
    })
    // Same send id, another message object with other content (pushFor gives every push one id): never mixed up.
    const lookAlike = pushFor({ contents: { en: 'Other text' }, ttl: 90 })
    const expected = new Map<string, unknown>()
    const sendOne = async (target: ReturnType<typeof android>, push: typeof fanOut) => {
      expected.set(target.token as string, JSON.parse(JSON.stringify(fcmMessage(target, push, nowMs))))
      t.strictSame(await provider.send(target, push), { kind: 'accepted' }, target.token as string)
    }
    const kinds = [
      (tok: string) => android(tok),
      (tok: string) => web(tok, 5),
      (tok: string) => ({ deviceId: `dev-${tok}`, token: tok, deviceType: 0 }),
    ]
    for (let i = 0; i < 12; i++) {
      // Each device its own proof, the message object shared, as the actor hands them over.
      await sendOne(kinds[i % 3]?.(`fan-${i}`) as ReturnType<typeof android>, {
        ...fanOut,
        proof: `proof-${String(i).padStart(26, '0')}`,
      })
      await sendOne(android(`alike-${i}`), { ...lookAlike, proof: `alike-${String(i).padStart(26, '0')}` })
      // More single-device sends than the provider remembers between two devices of the fan-out.
      if (i === 5) for (let j = 0; j < 80; j++) await sendOne(android(`single-${j}`), pushFor({ contents: { en: `one ${j}` } }))
    }
    for (const [token, body] of expected) {
      t.strictSame(fcm.delivered.find((r) => r.target === token)?.body, body, token)
    }
  },
)

t.test('every outcome class from scripted answers', async (t) => {
  const cases: Array<[string, string, unknown]> = [
    ['o-unreg', 'unregistered', { kind: 'dead-token', reason: 'UNREGISTERED' }],
    ['o-invalid', 'invalid-argument', { kind: 'dead-token', reason: 'INVALID_ARGUMENT: invalid registration token' }],
    ['o-sender', 'sender-id-mismatch', { kind: 'credential', reason: 'SENDER_ID_MISMATCH: SenderId mismatch' }],
    [
      'o-3p',
      'third-party-auth-error',
      { kind: 'credential', reason: 'THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service' },
    ],
    ['o-quota', 'quota:7', { kind: 'quota', retryAfterMs: 7_000 }],
    ['o-503', 'unavailable', { kind: 'transient', reason: 'UNAVAILABLE' }],
    ['o-503-ra', 'unavailable:5', { kind: 'transient', reason: 'UNAVAILABLE', retryAfterMs: 5_000 }],
    ['o-500', 'internal', { kind: 'transient', reason: 'INTERNAL' }],
    ['o-slow', 'slow:100', { kind: 'accepted' }],
  ]
  const issued = fcm.tokensIssued
  for (const [token, behaviour] of cases) fcm.script(token, behaviour)
  const got = await Promise.all(cases.map(([token]) => provider.send(android(token), pushFor())))
  for (const [i, [token, behaviour, want]] of cases.entries()) t.strictSame(got[i], want, `${token}: ${behaviour}`)
  t.equal(fcm.tokensIssued, issued, 'THIRD_PARTY_AUTH_ERROR is not our access token: no new one fetched')
})

t.test('a malformed field is rejected, not a dead token', async (t) => {
  const push = { ...pushFor(), ttlS: -1 } // no such ttl leaves the engine; FCM names the field
  t.strictSame(await provider.send(android('o-ttl'), push), { kind: 'rejected', reason: 'INVALID_ARGUMENT message.android.ttl' })
})

t.test('no answer in time, a reset stream, a dropped connection: transient, and the next send goes through', async (t) => {
  fcm.script('o-hang', 'hang')
  fcm.script('o-drop', 'drop')
  fcm.script('o-drop-session', 'drop-session')
  // One at a time: a dropped connection also ends whatever else was in flight on it (as transient, never hanging).
  const drop = await provider.send(android('o-drop'), pushFor())
  const dropSession = await provider.send(android('o-drop-session'), pushFor())
  const hang = await provider.send(android('o-hang'), pushFor())
  t.match(hang, { kind: 'transient', reason: /^timeout/ })
  t.match(drop, { kind: 'transient', reason: /^connection/ })
  t.match(dropSession, { kind: 'transient', reason: /^connection/ })
  t.strictSame(await provider.send(android('o-after-drop'), pushFor()), { kind: 'accepted' })
})

t.test('the access token: fetched once for concurrent sends, reused, refreshed 5 minutes before expiry', async (t) => {
  const local = new FcmProvider(fcm.serviceAccount('pombo-test') as unknown as FcmCredential, { baseUrl: fcm.url, pool, clock })
  const before = fcm.tokensIssued
  const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => local.send(android(`a-${i}`), pushFor())))
  t.ok(outcomes.every((o) => o.kind === 'accepted'))
  t.equal(fcm.tokensIssued, before + 1, 'one fetch shared by 30 concurrent sends')
  t.equal(local.auth.fetches, 1)
  const claims = fcm.tokenRequests.at(-1)?.claims as Record<string, number | string>
  t.match(claims, { scope: FCM_SCOPE, aud: fcm.tokenUri, iss: /@pombo-test\.iam\.gserviceaccount\.com$/ })
  t.equal(Number(claims.exp) - Number(claims.iat), 3600)

  nowMs += 54 * 60_000
  await local.send(android('a-54'), pushFor())
  t.equal(local.auth.fetches, 1, 'still fresh at 54 minutes')
  nowMs += 2 * 60_000
  t.strictSame(await local.send(android('a-56'), pushFor()), { kind: 'accepted' })
  t.equal(local.auth.fetches, 2, 'at 56 minutes (4 before expiry) a new token')
})

t.test('the token endpoint down during the early refresh: the current token serves until it expires', async (t) => {
  const acct = fcm.serviceAccount('pombo-test') as unknown as FcmCredential
  const local = new FcmProvider(acct, { baseUrl: fcm.url, pool, clock })
  t.strictSame(await local.send(android('d-1'), pushFor()), { kind: 'accepted' })
  acct.token_uri = 'https://127.0.0.1:1/token' // nothing listens there: the refresh fails to connect
  nowMs += 57 * 60_000
  t.strictSame(await local.send(android('d-57'), pushFor()), { kind: 'accepted' }, 'refresh failed, old token still valid')
  t.equal(local.auth.fetches, 2)
  nowMs += 3 * 60_000
  t.match(await local.send(android('d-60'), pushFor()), { kind: 'transient', reason: /^connection/ }, 'expired and no new one')
})

t.test('a 401 drops the access token and retries once; a revoked account is a credential outcome', async (t) => {
  const acct = fcm.serviceAccount('pombo-test')
  const local = new FcmProvider(acct as unknown as FcmCredential, { baseUrl: fcm.url, pool, clock })
  t.strictSame(await local.send(android('r-1'), pushFor()), { kind: 'accepted' })
  fcm.expireAccessTokens()
  const sent = fcm.stats().requests
  t.strictSame(await local.send(android('r-2'), pushFor()), { kind: 'accepted' })
  t.equal(local.auth.fetches, 2)
  t.equal(fcm.stats().requests - sent, 2, 'the 401, then the retry')

  fcm.revoke(acct.client_email)
  t.match(await local.send(android('r-3'), pushFor()), { kind: 'credential', reason: /^oauth invalid_grant/ })
  t.equal(local.auth.fetches, 3)
})

t.test('a service account whose key is not a key is a credential outcome, nothing sent', async (t) => {
  const bad = { ...fcm.serviceAccount('pombo-test'), private_key: 'not a key' } as unknown as FcmCredential
  const sent = fcm.stats().requests
  t.match(await new FcmProvider(bad, { baseUrl: fcm.url, pool, clock }).send(android('k-1'), pushFor()), {
    kind: 'credential',
    reason: /^service account unusable/,
  })
  t.equal(fcm.stats().requests, sent)
})

t.test("another project than the account's: credential", async (t) => {
  const other = { ...fcm.serviceAccount('pombo-test'), project_id: 'someone-else' } as unknown as FcmCredential
  t.match(await new FcmProvider(other, { baseUrl: fcm.url, pool, clock }).send(android('p-1'), pushFor()), {
    kind: 'credential',
    reason: /^PERMISSION_DENIED/,
  })
})

t.test('sending to Google, a token_uri outside Google is refused before any request (no request forgery)', async (t) => {
  const sa = fcm.serviceAccount('pombo-test') as unknown as FcmCredential // token_uri: the fake's address
  const issued = fcm.tokensIssued
  const sent = fcm.stats().requests
  const google = new FcmProvider(sa, { baseUrl: 'https://fcm.googleapis.com', pool, clock })
  t.match(await google.send(android('ssrf-1'), pushFor()), {
    kind: 'credential',
    reason: /^service account refused: token_uri must be Google's token endpoint .*got an address on 127\.0\.0\.1/,
  })
  t.equal(fcm.tokensIssued, issued, 'no assertion was posted anywhere')
  t.equal(fcm.stats().requests, sent)
})

t.test('sending to a test provider, a token_uri on another host is refused before any request', async (t) => {
  const issued = fcm.tokensIssued
  const sent = fcm.stats().requests
  for (const uri of ['https://localhost:1/token', 'https://169.254.169.254/token', 'http://127.0.0.1:1/token']) {
    const sa = { ...fcm.serviceAccount('pombo-test'), token_uri: uri } as unknown as FcmCredential
    t.match(await new FcmProvider(sa, { baseUrl: fcm.url, pool, clock }).send(android('ssrf-2'), pushFor()), {
      kind: 'credential',
      reason: /^service account refused: token_uri must be .* or an https URL on 127\.0\.0\.1/,
    })
  }
  t.equal(fcm.tokensIssued, issued, 'no assertion was posted anywhere')
  t.equal(fcm.stats().requests, sent)
})
