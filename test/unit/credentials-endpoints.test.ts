// Where a credential may aim our servers (issue #31, points 2 and 4): the token_uri rule, the simulator mark, and
// the route a stored credential takes at use. Through the CLI, the dashboard and the worker: credentials-rule.test.ts.
import t from 'tap'
import { reasonCode } from '../../src/credentials/connection-test'
import { checkStorable, parseServiceAccount } from '../../src/credentials/validate'
import type { FcmCredential } from '../../src/providers/credentials'
import { checkTokenUri, GOOGLE_TOKEN_URI, simulatorTargetRefusal } from '../../src/providers/endpoints'
import { providerFor, providerRoute, SIMULATORS_OFF } from '../../src/providers/index'
import type { H2Pool } from '../../src/h2/pool'
import { serviceAccount } from '../helpers/credentials'

const GOOGLE = 'https://fcm.googleapis.com'
const FAKE = 'https://127.0.0.1:9443'

t.test("with Google's FCM, only Google's token endpoint", async (t) => {
  t.same(checkTokenUri(GOOGLE_TOKEN_URI, GOOGLE), { ok: true, uri: GOOGLE_TOKEN_URI })
  t.same(checkTokenUri(undefined, GOOGLE), { ok: true, uri: GOOGLE_TOKEN_URI }, 'absent: Google, as its clients do')
  t.same(checkTokenUri('https://OAUTH2.googleapis.com:443/token', GOOGLE), { ok: true, uri: GOOGLE_TOKEN_URI })
  t.same(
    checkTokenUri('https://accounts.google.com/o/oauth2/token', GOOGLE),
    { ok: true, uri: GOOGLE_TOKEN_URI },
    "an older file's endpoint is called as today's",
  )
  for (const bad of [
    'https://127.0.0.1:1/token',
    'https://localhost/token',
    'https://169.254.169.254/computeMetadata/v1/token',
    'https://[::1]/token',
    'https://10.0.0.7/token',
    'https://oauth2.googleapis.com.evil.example/token',
    'https://oauth2.googleapis.com/token?x=1',
    'https://oauth2.googleapis.com/other',
    'https://user:pw@oauth2.googleapis.com/token',
    'https://accounts.google.com/o/oauth2/auth',
    'http://oauth2.googleapis.com/token',
    'not a url',
    42,
    '',
  ]) {
    const r = checkTokenUri(bad, GOOGLE)
    t.equal(r.ok, false, String(bad))
    if (!r.ok) t.match(r.reason, /^token_uri must be Google's token endpoint https:\/\/oauth2\.googleapis\.com\/token;/)
  }
})

t.test('with a test provider, also an https URL on its host, any port', async (t) => {
  t.same(checkTokenUri('https://127.0.0.1:1/token', FAKE), { ok: true, uri: 'https://127.0.0.1:1/token' })
  t.same(checkTokenUri(GOOGLE_TOKEN_URI, FAKE), { ok: true, uri: GOOGLE_TOKEN_URI })
  for (const bad of ['https://localhost:9443/token', 'https://10.0.0.7/token', 'http://127.0.0.1:9443/token']) {
    const r = checkTokenUri(bad, FAKE)
    t.equal(r.ok, false, bad)
    if (!r.ok) t.match(r.reason, /or an https URL on 127\.0\.0\.1 \(the host of PM_FCM_BASE_URL\)/)
  }
})

t.test('parsing with the base URL refuses the file by name; the simulator mark never comes from a file', async (t) => {
  const text = JSON.stringify(serviceAccount('pombo-demo', { token_uri: 'https://127.0.0.1:8/token' }))
  t.throws(() => parseServiceAccount(text, 'SERVICE_ACCOUNT.json', GOOGLE), {
    message: /^SERVICE_ACCOUNT\.json: token_uri must be Google's token endpoint .*; got an address on 127\.0\.0\.1$/,
  })
  t.ok(parseServiceAccount(text, 'SERVICE_ACCOUNT.json', FAKE), "on the test provider's host")
  const marked = JSON.stringify(serviceAccount('pombo-demo', { simulator: { url: 'https://127.0.0.1:1', ca: 'x' } }))
  t.throws(() => parseServiceAccount(marked), { message: /"simulator" is not a service-account field/ })
})

t.test('storing: the rule against the instance, simulator credentials only where allowed', async (t) => {
  const cred = (over: Record<string, unknown>) => ({ ...serviceAccount('p'), ...over }) as unknown as FcmCredential
  const off = { fcmBaseUrl: GOOGLE, allowSimulators: false }
  const on = { fcmBaseUrl: GOOGLE, allowSimulators: true }
  t.doesNotThrow(() => checkStorable('fcm', cred({}), off))
  t.throws(() => checkStorable('fcm', cred({ token_uri: 'https://127.0.0.1/token' }), off), {
    message: /^service account: token_uri must be/,
  })
  const sim = cred({ token_uri: 'https://127.0.0.1:7/token', simulator: { url: 'https://127.0.0.1:7', ca: 'pem' } })
  t.throws(() => checkStorable('fcm', sim, off), { message: /only where PM_ALLOW_SIMULATORS is on/ })
  t.doesNotThrow(() => checkStorable('fcm', sim, on), "the token_uri is on the simulator's own host")
  const aimed = cred({ token_uri: 'https://10.0.0.7/token', simulator: { url: 'https://127.0.0.1:7', ca: 'pem' } })
  t.throws(() => checkStorable('fcm', aimed, on), { message: /token_uri must be/ })
  const away = cred({ token_uri: 'https://10.0.0.7/token', simulator: { url: 'https://10.0.0.7', ca: 'pem' } })
  t.throws(() => checkStorable('fcm', away, on), { message: /loopback/ })
  t.equal(simulatorTargetRefusal('https://[::1]:9'), null)
  t.equal(simulatorTargetRefusal('https://localhost:9'), null)
  t.match(simulatorTargetRefusal('http://127.0.0.1:9'), /https URL on a loopback host/)
})

t.test('at use: a simulator credential goes to its simulator only where allowed, and is refused elsewhere', async (t) => {
  const pool = { name: 'providers' } as unknown as H2Pool
  const simPool = { name: 'simulator' } as unknown as H2Pool
  const sim = {
    ...serviceAccount('p'),
    simulator: { url: 'https://127.0.0.1:7', ca: 'pem' },
  } as unknown as FcmCredential
  const deps = { pool, fcmBaseUrl: GOOGLE, apnsBaseUrl: null }
  t.same(providerRoute(sim, deps), { refused: SIMULATORS_OFF }, 'off by default')
  t.same(providerRoute(sim, { ...deps, allowSimulators: true, simulatorPool: () => simPool }), {
    pool: simPool,
    fcmBaseUrl: 'https://127.0.0.1:7',
    apnsBaseUrl: 'https://127.0.0.1:7',
  })
  t.same(providerRoute(serviceAccount('p') as unknown as FcmCredential, { ...deps, allowSimulators: true }), {
    pool,
    fcmBaseUrl: GOOGLE,
    apnsBaseUrl: null,
  })
  const refused = providerFor('fcm', sim, deps)
  t.same(await refused.send({ deviceId: 'd', token: 't', deviceType: 1 }, {} as never), {
    kind: 'credential',
    reason: SIMULATORS_OFF,
  })
})

t.test('the connection test shows a remote reason only when it has the form of a code', async (t) => {
  t.equal(reasonCode('BadDeviceToken'), 'BadDeviceToken')
  t.equal(reasonCode('invalid_grant'), 'invalid_grant')
  t.equal(reasonCode('PERMISSION_DENIED'), 'PERMISSION_DENIED')
  for (const v of ['<html>', 'ok: secret', 'a b', '', undefined, 'x'.repeat(65), 'é']) t.equal(reasonCode(v), null, String(v))
})
