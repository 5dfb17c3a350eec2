// The fake FCM over real TLS: a service-account assertion buys an access token (HTTP/1.1, as token clients do),
// messages:send over HTTP/2 is checked and recorded, and scripted tokens answer FCM's real error bodies.
import { execFile } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import https from 'node:https'
import { promisify } from 'node:util'
import jwt from 'jsonwebtoken'
import t from 'tap'
import { parseBehaviour } from '../fakes/behaviour'
import { FCM_SCOPE, type FakeFcm, JWT_BEARER, type ServiceAccount, startFakeFcm } from '../fakes/fcm'
import { RawH2Client } from '../fakes/h2-client'
import { startFakeProviders } from '../fakes/index'
import { testCa, testTls } from '../fakes/tls'

const nowS = () => Math.floor(Date.now() / 1000)

function assertion(sa: ServiceAccount, claims: Record<string, unknown> = {}, key = sa.private_key): string {
  const iat = nowS()
  return jwt.sign({ iss: sa.client_email, scope: FCM_SCOPE, aud: sa.token_uri, iat, exp: iat + 3600, ...claims }, key, {
    algorithm: 'RS256',
    keyid: sa.private_key_id,
  })
}

/** POST to the token endpoint over HTTP/1.1 with a form body, as Google's auth libraries do. */
function postToken(
  uri: string,
  form: Record<string, string>,
): Promise<{ status: number; httpVersion: string; json: Record<string, unknown> }> {
  const body = new URLSearchParams(form).toString()
  return new Promise((resolve, reject) => {
    const req = https.request(
      uri,
      { method: 'POST', ca: testCa(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            httpVersion: res.httpVersion,
            json: JSON.parse(Buffer.concat(chunks).toString()),
          }),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function accessToken(sa: ServiceAccount): Promise<string> {
  const r = await postToken(sa.token_uri, { grant_type: JWT_BEARER, assertion: assertion(sa) })
  if (r.status !== 200) throw new Error(`token: ${r.status} ${JSON.stringify(r.json)}`)
  return r.json.access_token as string
}

let fcm: FakeFcm
let sa: ServiceAccount
let token: string
let client: RawH2Client
t.before(async () => {
  fcm = await startFakeFcm()
  sa = fcm.serviceAccount('pombo-test')
  token = await accessToken(sa)
  client = new RawH2Client(fcm.url)
})
t.teardown(async () => {
  await client.close()
  await fcm.close()
})

const sendPath = (project = 'pombo-test') => `/v1/projects/${project}/messages:send`
const auth = () => ({ authorization: `Bearer ${token}` })
const msg = (deviceToken: string, extra: Record<string, unknown> = {}) => ({
  message: { token: deviceToken, data: { pm_msg_id: 'm1', n: '1' }, ...extra },
})

t.test('a signed assertion buys a token over HTTP/1.1; a send over HTTP/2 is accepted and recorded', async (t) => {
  t.match(sa, {
    type: 'service_account',
    project_id: 'pombo-test',
    token_uri: `${fcm.url}/token`,
    client_email: /@pombo-test\.iam\.gserviceaccount\.com$/,
  })
  t.match(sa.private_key, /^-----BEGIN PRIVATE KEY-----\n/)
  const r = await postToken(sa.token_uri, { grant_type: JWT_BEARER, assertion: assertion(sa) })
  t.equal(r.status, 200)
  t.equal(r.httpVersion, '1.1')
  t.match(r.json, { access_token: /^ya29\./, expires_in: 3600, token_type: 'Bearer' })
  t.equal(fcm.tokensIssued, 2, 'one in before(), one here')
  t.match(fcm.tokenRequests.at(-1), {
    status: 200,
    clientEmail: sa.client_email,
    claims: { scope: FCM_SCOPE, aud: sa.token_uri },
  })

  const before = fcm.stats().delivered
  const a = await client.post(
    sendPath(),
    { authorization: `Bearer ${r.json.access_token}` },
    msg('tok-ok', { android: { ttl: '3600s', priority: 'HIGH' } }),
  )
  t.equal(a.status, 200)
  t.match(a.json.name, /^projects\/pombo-test\/messages\/0:\d+%[0-9a-f]{16}$/)
  const [rec] = (await fcm.waitForDelivered(before + 1)).slice(-1)
  t.match(rec, {
    httpVersion: '2.0',
    project: 'pombo-test',
    target: 'tok-ok',
    status: 200,
    step: 'ok',
    clientEmail: sa.client_email,
  })
  t.same(rec?.body.message.data, { pm_msg_id: 'm1', n: '1' })
  t.equal(rec?.headers.authorization, `Bearer ${r.json.access_token}`)
})

t.test('bad assertions are refused like Google refuses them', async (t) => {
  const other = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  })
  const issuedBefore = fcm.tokensIssued
  const cases: Array<[string, Record<string, string>, number, Record<string, unknown>]> = [
    [
      'signed with another key',
      { grant_type: JWT_BEARER, assertion: assertion(sa, {}, other.privateKey) },
      400,
      { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' },
    ],
    [
      'unknown service account',
      { grant_type: JWT_BEARER, assertion: assertion(sa, { iss: 'nobody@x.iam.gserviceaccount.com' }) },
      400,
      { error: 'invalid_grant', error_description: 'Invalid grant: account not found' },
    ],
    [
      'audience is not the token_uri',
      { grant_type: JWT_BEARER, assertion: assertion(sa, { aud: 'https://oauth2.googleapis.com/token' }) },
      400,
      { error: 'invalid_grant', error_description: /Failed audience check/ },
    ],
    [
      'lifetime over one hour',
      { grant_type: JWT_BEARER, assertion: assertion(sa, { exp: nowS() + 7200 }) },
      400,
      { error: 'invalid_grant', error_description: /short-lived token \(60 minutes\)/ },
    ],
    [
      'already expired',
      { grant_type: JWT_BEARER, assertion: assertion(sa, { iat: nowS() - 7200, exp: nowS() - 3600 }) },
      400,
      { error: 'invalid_grant' },
    ],
    ['no scope', { grant_type: JWT_BEARER, assertion: assertion(sa, { scope: '' }) }, 400, { error: 'invalid_scope' }],
    [
      'wrong grant type',
      { grant_type: 'client_credentials', assertion: assertion(sa) },
      400,
      { error: 'unsupported_grant_type' },
    ],
    ['no assertion', { grant_type: JWT_BEARER }, 400, { error: 'invalid_request' }],
    ['not a JWT', { grant_type: JWT_BEARER, assertion: 'abc' }, 400, { error: 'invalid_grant' }],
  ]
  for (const [name, form, status, body] of cases) {
    const r = await postToken(sa.token_uri, form)
    t.equal(r.status, status, name)
    t.match(r.json, body, name)
  }
  const hs = jwt.sign({ iss: sa.client_email, scope: FCM_SCOPE, aud: sa.token_uri, iat: nowS(), exp: nowS() + 600 }, 'secret', {
    algorithm: 'HS256',
  })
  t.match(
    (await postToken(sa.token_uri, { grant_type: JWT_BEARER, assertion: hs })).json,
    { error: 'invalid_grant' },
    'HS256 is not RS256',
  )
  t.equal(fcm.tokensIssued, issuedBefore, 'no token issued')
})

t.test('each account of a simulator has its own key; another simulator trusts none of them', async (t) => {
  const second = fcm.serviceAccount('pombo-test')
  t.not(second.private_key, sa.private_key, 'a second account of the same simulator: another key')
  t.not(second.client_email, sa.client_email)
  t.ok(await accessToken(second), 'which buys its own token')
  const mixed = await postToken(second.token_uri, {
    grant_type: JWT_BEARER,
    assertion: assertion(second, {}, sa.private_key),
  })
  t.match(
    mixed.json,
    { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' },
    'signed with the first account’s key: refused',
  )
  // Another simulator of the process makes its accounts from the same key pairs (each costs ~100 ms to generate),
  // and trusts only its own accounts.
  const other = await startFakeFcm()
  t.teardown(() => other.close())
  const theirs = other.serviceAccount('pombo-test')
  t.equal(theirs.private_key, sa.private_key, 'the other simulator’s first account reuses the process’s first key')
  const foreign = await postToken(theirs.token_uri, {
    grant_type: JWT_BEARER,
    assertion: assertion(sa, { aud: theirs.token_uri }),
  })
  t.match(
    foreign.json,
    { error: 'invalid_grant', error_description: 'Invalid grant: account not found' },
    'our account, same key: unknown there',
  )
  t.ok(await accessToken(theirs), 'its own account works')
})

t.test('messages:send refuses bad credentials and malformed messages', async (t) => {
  const other = fcm.serviceAccount('other-project')
  const otherToken = await accessToken(other)
  const narrow = (
    await postToken(sa.token_uri, {
      grant_type: JWT_BEARER,
      assertion: assertion(sa, { scope: 'https://www.googleapis.com/auth/userinfo.email' }),
    })
  ).json.access_token
  const cases: Array<[string, Record<string, string>, unknown, number, unknown]> = [
    ['no bearer', {}, msg('x'), 401, { error: { code: 401, status: 'UNAUTHENTICATED' } }],
    ['unknown bearer', { authorization: 'Bearer ya29.nope' }, msg('x'), 401, { error: { status: 'UNAUTHENTICATED' } }],
    [
      'token of another project',
      { authorization: `Bearer ${otherToken}` },
      msg('x'),
      403,
      { error: { status: 'PERMISSION_DENIED', message: /cloudmessaging\.messages\.create/ } },
    ],
    [
      'token without the messaging scope',
      { authorization: `Bearer ${narrow}` },
      msg('x'),
      403,
      { error: { message: 'Request had insufficient authentication scopes.' } },
    ],
    [
      'data value not a string',
      auth(),
      { message: { token: 'x', data: { a: 'ok', n: 12 } } },
      400,
      {
        error: {
          status: 'INVALID_ARGUMENT',
          message: "Invalid value at 'message.data[1].value' (TYPE_STRING), 12",
          details: [
            { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.data[1].value' }] },
          ],
        },
      },
    ],
    ['no target', auth(), { message: { data: {} } }, 400, { error: { message: 'Recipient of the message is not set.' } }],
    [
      'two targets',
      auth(),
      { message: { token: 'x', topic: 'news' } },
      400,
      { error: { message: /oneof field 'target' is already set/ } },
    ],
    [
      'android priority in lower case',
      auth(),
      msg('x', { android: { priority: 'high' } }),
      400,
      { error: { message: /message\.android\.priority/ } },
    ],
    ['ttl not a Duration', auth(), msg('x', { android: { ttl: 3600 } }), 400, { error: { message: /message\.android\.ttl/ } }],
    [
      'accent colour not #rrggbb',
      auth(),
      msg('x', { android: { notification: { color: 'red' } } }),
      400,
      { error: { message: /color/ } },
    ],
    [
      'data over 4096 bytes',
      auth(),
      { message: { token: 'x', data: { big: 'x'.repeat(4100) } } },
      400,
      { error: { status: 'INVALID_ARGUMENT' } },
    ],
    ['not JSON', auth(), '{', 400, { error: { status: 'INVALID_ARGUMENT' } }],
  ]
  for (const [name, headers, body, status, answer] of cases) {
    const a = await client.post(sendPath(), headers, body)
    t.equal(a.status, status, name)
    t.match(a.json, answer, name)
  }
  const a401 = await client.post(sendPath(), {}, msg('x'))
  t.match(a401.headers['www-authenticate'], /error="invalid_token"/)
  const v = await client.post(sendPath(), auth(), { validate_only: true, ...msg('x') })
  t.same(v.json, { name: 'projects/pombo-test/messages/fake_message_id' }, 'validate_only is answered, not delivered')
  t.equal(fcm.delivered.filter((r) => r.target === 'x').length, 0)
})

t.test('an expired or revoked access token answers 401; a new assertion works again', async (t) => {
  const sa2 = fcm.serviceAccount('pombo-test')
  const tok = await accessToken(sa2)
  t.equal((await client.post(sendPath(), { authorization: `Bearer ${tok}` }, msg('e1'))).status, 200)
  fcm.expireAccessTokens()
  t.equal((await client.post(sendPath(), { authorization: `Bearer ${tok}` }, msg('e1'))).status, 401)
  const fresh = await accessToken(sa2)
  t.equal((await client.post(sendPath(), { authorization: `Bearer ${fresh}` }, msg('e1'))).status, 200)
  fcm.revoke(sa2.client_email)
  t.equal((await client.post(sendPath(), { authorization: `Bearer ${fresh}` }, msg('e1'))).status, 401)
  t.match((await postToken(sa2.token_uri, { grant_type: JWT_BEARER, assertion: assertion(sa2) })).json, {
    error: 'invalid_grant',
  })
  token = await accessToken(sa) // the shared token expired with the others
})

const detail = (errorCode: string) => [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }]

t.test('scripted tokens answer FCM error bodies', async (t) => {
  const cases: Array<[string, number, unknown, string | undefined]> = [
    [
      'unregistered',
      404,
      { error: { code: 404, message: 'Requested entity was not found.', status: 'NOT_FOUND', details: detail('UNREGISTERED') } },
      undefined,
    ],
    [
      'invalid-argument',
      400,
      {
        error: {
          code: 400,
          message: 'The registration token is not a valid FCM registration token',
          status: 'INVALID_ARGUMENT',
          details: detail('INVALID_ARGUMENT'),
        },
      },
      undefined,
    ],
    ['quota:7', 429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: detail('QUOTA_EXCEEDED') } }, '7'],
    [
      'unavailable',
      503,
      {
        error: {
          code: 503,
          message: 'The service is currently unavailable.',
          status: 'UNAVAILABLE',
          details: detail('UNAVAILABLE'),
        },
      },
      undefined,
    ],
    ['unavailable:30', 503, { error: { status: 'UNAVAILABLE' } }, '30'],
    [
      'internal',
      500,
      { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL', details: detail('INTERNAL') } },
      undefined,
    ],
    ['sender-id-mismatch', 403, { error: { status: 'PERMISSION_DENIED', details: detail('SENDER_ID_MISMATCH') } }, undefined],
    [
      'third-party-auth-error',
      401,
      { error: { status: 'UNAUTHENTICATED', details: detail('THIRD_PARTY_AUTH_ERROR') } },
      undefined,
    ],
  ]
  for (const [behaviour, status, body, retryAfter] of cases) {
    const tok = `tok-${behaviour}`
    fcm.script(tok, behaviour)
    const a = await client.post(sendPath(), auth(), msg(tok))
    t.equal(a.status, status, behaviour)
    t.match(a.json, body, behaviour)
    t.equal(a.headers['retry-after'], retryAfter, `${behaviour}: retry-after`)
  }
  t.equal(fcm.requests.find((r) => r.target === 'tok-unregistered')?.status, 404, 'refusals are recorded with their status')
})

t.test('sequences, patterns, delays and drops', async (t) => {
  fcm.script('flaky', 'unavailable*2, ok')
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await client.post(sendPath(), auth(), msg('flaky'))).status)
  t.same(statuses, [503, 503, 200, 200], 'fails twice, then the last step repeats')

  fcm.script(/^dead-/, 'unregistered')
  t.equal((await client.post(sendPath(), auth(), msg('dead-1'))).status, 404)
  t.equal((await client.post(sendPath(), auth(), msg('dead-2'))).status, 404)
  t.equal((await client.post(sendPath(), auth(), msg('alive-1'))).status, 200)

  fcm.script('slow', 'slow:300')
  const t0 = Date.now()
  t.equal((await client.post(sendPath(), auth(), msg('slow'))).status, 200)
  t.ok(Date.now() - t0 >= 290, 'answered after the delay')

  fcm.script('dropped', 'drop, ok')
  const err = await client.post(sendPath(), auth(), msg('dropped')).catch((e: NodeJS.ErrnoException) => e)
  t.match(err, { code: 'ERR_HTTP2_STREAM_ERROR' }, 'the stream is reset')
  t.equal((await client.post(sendPath(), auth(), msg('dropped'))).status, 200, 'same connection still usable')

  const c2 = new RawH2Client(fcm.url)
  fcm.script('crash', 'drop-session')
  const closed = new Promise((resolve) => c2.session.once('close', resolve))
  await t.rejects(c2.post(sendPath(), auth(), msg('crash')))
  await closed
  t.ok(c2.session.closed || c2.session.destroyed, 'the whole connection is gone')

  t.throws(() => fcm.script('x', 'unregisterd'), /unknown behaviour step 'unregisterd'/)
  t.throws(() => fcm.script('x', 'ok*0'), /out of range/)
})

t.test('the behaviour DSL expands counts, arguments and delays', async (t) => {
  const known = new Set(['ok', 'slow', 'internal', 'quota'])
  t.same(parseBehaviour('internal~200*2, quota:5, slow:50', known), [
    { name: 'internal', arg: undefined, delayMs: 200 },
    { name: 'internal', arg: undefined, delayMs: 200 },
    { name: 'quota', arg: 5, delayMs: undefined },
    { name: 'ok', delayMs: 50 },
  ])
  t.same(parseBehaviour(['internal', { name: 'ok', delayMs: 5 }], known), [
    { name: 'internal', arg: undefined, delayMs: undefined },
    { name: 'ok', delayMs: 5 },
  ])
  t.throws(() => parseBehaviour('internal?', known), /unreadable behaviour step/)
  t.throws(() => parseBehaviour('', known), /unreadable|empty/)
})

t.test('GOAWAY reaches the client; SETTINGS carry the stream cap', async (t) => {
  const c = new RawH2Client(fcm.url)
  t.equal((await c.ready()).maxConcurrentStreams, 100)
  t.equal((await c.post(sendPath(), auth(), msg('g'))).status, 200)
  const updated = new Promise<number | undefined>((resolve) =>
    c.session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)),
  )
  fcm.setMaxConcurrentStreams(7)
  t.equal(await updated, 7, 'a live connection gets the new cap')
  const goaway = new Promise<number>((resolve) => c.session.once('goaway', (code) => resolve(code)))
  const opened = fcm.stats().sessionsOpened
  fcm.script('g-slow', 'slow:150')
  const inFlight = c.post(sendPath(), auth(), msg('g-slow'))
  await fcm.waitForRequests(fcm.stats().requests + 1)
  fcm.goaway()
  t.equal(await goaway, 0, 'GOAWAY with NO_ERROR')
  t.equal((await inFlight).status, 200, 'a graceful GOAWAY lets the request in flight finish')
  await t.rejects(c.post(sendPath(), auth(), msg('g')), 'no new stream on a connection that got GOAWAY')
  const again = new RawH2Client(fcm.url)
  t.equal((await again.ready()).maxConcurrentStreams, 7, 'new connections get the new cap too')
  t.equal((await again.post(sendPath(), auth(), msg('g'))).status, 200)
  t.equal(fcm.stats().sessionsOpened, opened + 1)
  await again.close()
  fcm.setMaxConcurrentStreams(100)
})

t.test('a process started with NODE_EXTRA_CA_CERTS trusts the fake without being given the CA', async (t) => {
  const code = `fetch(process.argv[1], { method: 'POST', body: 'grant_type=x' }).then(async (r) => console.log(r.status, (await r.json()).error))`
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', code, fcm.tokenUri], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: testTls().caFile },
  })
  t.equal(stdout.trim(), '400 unsupported_grant_type')
})

t.test('startFakeProviders gives both fakes, their environment, and tears them down with the test', async (t) => {
  const p = await startFakeProviders(t, { apns: { environment: 'sandbox' } })
  t.match(p.env, {
    PM_FCM_BASE_URL: /^https:\/\/127\.0\.0\.1:\d+$/,
    PM_APNS_BASE_URL: /^https:\/\/127\.0\.0\.1:\d+$/,
    NODE_EXTRA_CA_CERTS: testTls().caFile,
  })
  t.equal(p.ca, testCa())
  t.equal(p.apns.environment, 'sandbox')
})

t.test('record: false keeps counts only (the bench)', async (t) => {
  const lean = await startFakeFcm({ record: false, maxConcurrentStreams: 1000 })
  t.teardown(() => lean.close())
  const leanSa = lean.serviceAccount()
  const tok = (await postToken(leanSa.token_uri, { grant_type: JWT_BEARER, assertion: assertion(leanSa) })).json.access_token
  const c = new RawH2Client(lean.url)
  t.teardown(() => c.close())
  const path = `/v1/projects/${leanSa.project_id}/messages:send`
  await Promise.all(Array.from({ length: 50 }, (_, i) => c.post(path, { authorization: `Bearer ${tok}` }, msg(`b${i}`))))
  await lean.waitForDelivered(50)
  t.same(
    lean.stats(),
    { requests: 50, delivered: 50, byStatus: { 200: 50 }, tokensIssued: 1, sessionsOpened: 1 },
    'HTTP/1.1 token connections are not HTTP/2 sessions',
  )
  t.equal(lean.requests.length, 0)
})
