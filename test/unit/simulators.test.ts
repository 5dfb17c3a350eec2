// The shipped provider simulators' own features, over real TLS HTTP/2: the delivery hook (what a simulated device
// receives), validate_only (answered like FCM, never delivered), the APNs placeholder token, configurable latency,
// transient failure rates and dead tokens with the providers' real error bodies; and the latency forms.
import { mkdtempSync, rmSync } from 'node:fs'
import https from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import jwt from 'jsonwebtoken'
import t from 'tap'
import { type ApnsDelivery, startApnsSimulator } from '../../src/simulators/apns'
import { Conditions, parseLatency, sampleLatency } from '../../src/simulators/conditions'
import { type FcmDelivery, startFcmSimulator } from '../../src/simulators/fcm'
import { simulatorTls } from '../../src/simulators/tls'
import { RawH2Client } from '../fakes/h2-client'
import { testTls } from '../fakes/tls'

const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging'
const BUNDLE = 'com.pombo.demo'

/** A seeded random source, so rates are checked on a known draw. */
function seeded(seed = 42): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = Math.imul(s ^ (s >>> 15), 1 | s)
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

async function fcmWorld(t: Tap, opts: Parameters<typeof startFcmSimulator>[0] = {}) {
  const delivered: FcmDelivery[] = []
  const fcm = await startFcmSimulator({ tls: testTls(), onDeliver: (m) => delivered.push(m), ...opts })
  const sa = fcm.serviceAccount('sim-test')
  const iat = Math.floor(Date.now() / 1000)
  const assertion = jwt.sign(
    { iss: sa.client_email, scope: FCM_SCOPE, aud: sa.token_uri, iat, exp: iat + 3600 },
    sa.private_key,
    {
      algorithm: 'RS256',
      keyid: sa.private_key_id,
    },
  )
  const client = new RawH2Client(fcm.url)
  const tok = await client.request(
    'POST',
    '/token',
    { 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  )
  t.teardown(async () => {
    await client.close()
    await fcm.close()
  })
  const send = (token: string, extra: Record<string, unknown> = {}) =>
    client.post(
      '/v1/projects/sim-test/messages:send',
      { authorization: `Bearer ${tok.json.access_token}` },
      {
        message: { token, data: { pm_msg_id: 'm1', pm_rcpt: 'r'.repeat(32) } },
        ...extra,
      },
    )
  return { fcm, delivered, send }
}

async function apnsWorld(t: Tap, opts: Parameters<typeof startApnsSimulator>[0] = {}) {
  const delivered: ApnsDelivery[] = []
  const apns = await startApnsSimulator({ tls: testTls(), bundleId: BUNDLE, onDeliver: (n) => delivered.push(n), ...opts })
  const key = apns.key()
  const client = new RawH2Client(apns.url)
  t.teardown(async () => {
    await client.close()
    await apns.close()
  })
  const headers = (k = key) => ({
    authorization: `bearer ${jwt.sign({ iss: k.teamId, iat: Math.floor(Date.now() / 1000) }, k.p8, { algorithm: 'ES256', keyid: k.keyId })}`,
    'apns-topic': BUNDLE,
    'apns-push-type': 'alert',
  })
  const push = (token: string, h = headers()) =>
    client.post(`/3/device/${token}`, h, { aps: { alert: 'Oi' }, pm_msg_id: 'm1', pm_rcpt: 'r'.repeat(32) })
  return { apns, key, delivered, push, headers }
}
type Tap = { teardown(fn: () => unknown): void }

t.test(
  'FCM: an accepted message is handed to the delivery hook with its data; validate_only is answered and never delivered',
  async (t) => {
    const w = await fcmWorld(t)
    const ok = await w.send('tok-1')
    t.equal(ok.status, 200)
    t.match(ok.json.name, /^projects\/sim-test\/messages\/0:\d+/)
    t.equal(w.delivered.length, 1)
    t.equal(w.delivered[0]?.target, 'tok-1')
    t.same(w.delivered[0]?.message.data, { pm_msg_id: 'm1', pm_rcpt: 'r'.repeat(32) })
    t.equal(w.delivered[0]?.name, ok.json.name, 'the device gets the message FCM named')

    const v = await w.send('tok-1', { validate_only: true })
    t.equal(v.status, 200)
    t.same(v.json, { name: 'projects/sim-test/messages/fake_message_id' }, 'FCM answers validate_only with this name')
    t.equal(w.delivered.length, 1, 'validate_only reaches no device')
    t.equal(w.fcm.stats().delivered, 1, 'and is not counted as a delivery')

    const bad = await w.send('tok-1', { validate_only: true, message: { token: 'tok-1', data: { n: 1 } } })
    t.equal(bad.status, 400, 'validate_only still checks the message')
    t.equal(bad.json.error.details[0].fieldViolations[0].field, 'message.data[0].value')
  },
)

t.test("FCM: dead tokens answer 404 UNREGISTERED with FCM's body, every time", async (t) => {
  const w = await fcmWorld(t, { deadTokenRate: 0.5 })
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => w.send(`tok-${i}`)))
  const dead = answers.filter((a) => a.status === 404)
  t.ok(dead.length > 8 && dead.length < 32, `about half the tokens are dead: ${dead.length} of 40`)
  t.same(dead[0]?.json, {
    error: {
      code: 404,
      message: 'Requested entity was not found.',
      status: 'NOT_FOUND',
      details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
    },
  })
  const again = await Promise.all(Array.from({ length: 40 }, (_, i) => w.send(`tok-${i}`)))
  t.same(
    again.map((a) => a.status),
    answers.map((a) => a.status),
    'a dead token stays dead; a live one stays live',
  )
  t.equal(w.delivered.length, 80 - 2 * dead.length, 'dead tokens reach no device')

  w.fcm.markDead('tok-live')
  t.equal((await w.send('tok-live')).status, 404, 'markDead kills one token')
})

t.test('FCM: failure rates draw transient errors (503 UNAVAILABLE) at the configured share', async (t) => {
  const w = await fcmWorld(t, { failureRates: { unavailable: 0.3, internal: 0.1 }, random: seeded(7) })
  const answers = await Promise.all(Array.from({ length: 400 }, (_, i) => w.send(`tok-${i}`)))
  const n = (s: number) => answers.filter((a) => a.status === s).length
  t.ok(n(503) > 90 && n(503) < 150, `~30% unavailable: ${n(503)}`)
  t.ok(n(500) > 20 && n(500) < 65, `~10% internal: ${n(500)}`)
  t.equal(n(200) + n(503) + n(500), 400)
  t.same(answers.find((a) => a.status === 503)?.json.error, {
    code: 503,
    message: 'The service is currently unavailable.',
    status: 'UNAVAILABLE',
    details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNAVAILABLE' }],
  })
  w.fcm.script('tok-scripted', 'quota:9')
  const q = await w.send('tok-scripted')
  t.equal(q.status, 429, 'a scripted failure wins over a drawn one')
  t.equal(q.headers['retry-after'], '9')
})

t.test('FCM: latency delays every answer that has no delay of its own', async (t) => {
  // A latency far above a loaded machine's own delay (a request took ~130 ms over it in CI), so the two cases differ
  // by much more than the noise.
  const LATENCY = 1_000
  const w = await fcmWorld(t, { latency: { kind: 'fixed', ms: LATENCY } })
  const t0 = Date.now()
  await w.send('tok-1')
  const took = Date.now() - t0
  t.ok(took >= LATENCY - 10, `answered after the latency: ${took} ms`)
  w.fcm.script('tok-fast', 'ok~0')
  const t1 = Date.now()
  await w.send('tok-fast')
  const fast = Date.now() - t1
  t.ok(fast < LATENCY / 2, `a step with its own delay keeps it: ${fast} ms`)
})

t.test("APNs: the placeholder token answers BadDeviceToken once the key is accepted (a connection test's proof)", async (t) => {
  const w = await apnsWorld(t)
  const r = await w.push('0'.repeat(64))
  t.equal(r.status, 400)
  t.same(r.json, { reason: 'BadDeviceToken' })
  t.match(r.headers['apns-id'], /^[0-9a-f-]{36}$/)
  w.apns.revokeKey(w.key.keyId)
  const refused = await w.push('0'.repeat(64))
  t.equal(refused.status, 403, 'a bad key is refused before the token is looked at')
  t.same(refused.json, { reason: 'InvalidProviderToken' })
  t.equal(w.delivered.length, 0)
})

t.test('APNs: an accepted notification reaches the hook; dead tokens answer 410 Unregistered with a timestamp', async (t) => {
  const w = await apnsWorld(t)
  const live = 'a'.repeat(64)
  const r = await w.push(live)
  t.equal(r.status, 200)
  t.equal(w.delivered.length, 1)
  t.equal(w.delivered[0]?.token, live)
  t.equal(w.delivered[0]?.topic, BUNDLE)
  t.equal(w.delivered[0]?.pushType, 'alert')
  t.same(w.delivered[0]?.payload, { aps: { alert: 'Oi' }, pm_msg_id: 'm1', pm_rcpt: 'r'.repeat(32) })
  t.equal(w.delivered[0]?.apnsId, r.headers['apns-id'])

  w.apns.markDead(live)
  const before = Date.now()
  const gone = await w.push(live)
  t.equal(gone.status, 410)
  t.equal(gone.json.reason, 'Unregistered')
  t.ok(
    gone.json.timestamp >= before - 1000 && gone.json.timestamp <= Date.now() + 1000,
    'timestamp: when the token stopped being valid',
  )
  t.equal(w.delivered.length, 1)
})

t.test("APNs: failure rates and the dead-token rate, with Apple's reasons", async (t) => {
  const w = await apnsWorld(t, { failureRates: { unavailable: 0.25 }, deadTokenRate: 0.2, random: seeded(3) })
  const tokens = Array.from({ length: 300 }, (_, i) => i.toString(16).padStart(64, 'b'))
  const answers = await Promise.all(tokens.map((tk) => w.push(tk)))
  const reasons = new Map<string, number>()
  for (const a of answers) reasons.set(a.json?.reason ?? 'ok', (reasons.get(a.json?.reason ?? 'ok') ?? 0) + 1)
  const gone = reasons.get('Unregistered') ?? 0
  const unavailable = reasons.get('ServiceUnavailable') ?? 0
  t.ok(gone > 30 && gone < 95, `~20% dead: ${gone}`)
  t.ok(unavailable > 35 && unavailable < 95, `~25% of the live ones unavailable: ${unavailable}`)
  t.equal(answers.find((a) => a.status === 503)?.json.reason, 'ServiceUnavailable')
  t.equal(w.delivered.length, reasons.get('ok'))
})

t.test('a simulator listens where it is told, with the certificate of a shared directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-sim-tls-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const tls = simulatorTls(dir)
  t.equal(simulatorTls(dir), tls, 'made once per directory')
  const probe = https.createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  const fcm = await startFcmSimulator({ tls, port })
  t.teardown(() => fcm.close())
  t.equal(fcm.url, `https://127.0.0.1:${port}`)
  t.equal(fcm.caPem, tls.caPem)
  const status = await new Promise<number>((resolve, reject) => {
    https
      .get(`${fcm.url}/nothing`, { ca: tls.caPem }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      .on('error', reject)
  })
  t.equal(status, 404, "its certificate is trusted through the directory's CA")
  await t.rejects(startFcmSimulator({ tls, port }), { code: 'EADDRINUSE' })
})

t.test('latency forms: fixed, uniform range, log-normal by median and p99; bad forms refused', async (t) => {
  t.same(parseLatency('40'), { kind: 'fixed', ms: 40 })
  t.same(parseLatency('10-80'), { kind: 'uniform', minMs: 10, maxMs: 80 })
  t.same(parseLatency('lognormal:40:250'), { kind: 'lognormal', medianMs: 40, p99Ms: 250 })
  for (const bad of ['', 'fast', '80-10', 'lognormal:0:10', 'lognormal:50:10', '999999999', '-5', '1e3']) {
    t.throws(() => parseLatency(bad), { message: /latency/ }, `"${bad}" refused`)
  }
  const r = seeded(11)
  const u = Array.from({ length: 2000 }, () => sampleLatency({ kind: 'uniform', minMs: 10, maxMs: 80 }, r))
  t.ok(Math.min(...u) >= 10 && Math.max(...u) <= 80, 'uniform stays in its range')
  const ln = Array.from({ length: 20_000 }, () => sampleLatency({ kind: 'lognormal', medianMs: 40, p99Ms: 250 }, r)).sort(
    (a, b) => a - b,
  )
  const median = ln[10_000] as number
  const p99 = ln[19_800] as number
  t.ok(median >= 36 && median <= 44, `median ≈ 40: ${median}`)
  t.ok(p99 >= 200 && p99 <= 310, `p99 ≈ 250: ${p99}`)
})

t.test('conditions refuse rates that cannot be', async (t) => {
  const known = new Set(['ok', 'unavailable', 'internal'])
  t.throws(() => new Conditions({ failureRates: { typo: 0.1 } }, known), /unknown failure step 'typo'/)
  t.throws(() => new Conditions({ failureRates: { unavailable: 1.5 } }, known), /within 0\.\.1/)
  t.throws(() => new Conditions({ failureRates: { unavailable: 0.6, internal: 0.6 } }, known), /more than 1/)
  t.throws(() => new Conditions({ deadTokenRate: -1 }, known), /dead token rate/)
  const c = new Conditions({ deadTokenRate: 1 }, known)
  t.ok(c.isDead('anything'))
})
