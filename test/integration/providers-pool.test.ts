// The HTTP/2 pool against the fake FCM over TLS: GOAWAY and dropped connections (reconnect and continue, nothing
// hangs), streams bounded by the server's SETTINGS_MAX_CONCURRENT_STREAMS, several sessions, unreachable hosts.
import { createSecureServer } from 'node:http2'
import { connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import type { FcmCredential } from '../../src/providers/credentials'
import { FcmProvider } from '../../src/providers/fcm'
import { H2Pool } from '../../src/h2/pool'
import type { Outcome } from '../../src/providers/types'
import { type FakeFcm, startFakeFcm } from '../fakes/fcm'
import { testCa, testTls } from '../fakes/tls'
import { android, pushFor } from '../helpers/push'
import { until } from '../helpers/until'

let fcm: FakeFcm
let sa: FcmCredential
t.before(async () => {
  fcm = await startFakeFcm()
  sa = fcm.serviceAccount('pombo-test') as unknown as FcmCredential
})
t.teardown(() => fcm.close())

function setup(t: { teardown(fn: () => unknown): void }, o: ConstructorParameters<typeof H2Pool>[0] = {}) {
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 2_000, ...o })
  t.teardown(() => pool.close())
  return { pool, provider: new FcmProvider(sa, { baseUrl: fcm.url, pool }) }
}
function kinds(os: Outcome[]): Record<string, number> {
  const m: Record<string, number> = {}
  for (const o of os) m[o.kind] = (m[o.kind] ?? 0) + 1
  return m
}
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('GOAWAY mid-flight: every request settles, new ones go over a new session', async (t) => {
  const { pool, provider } = setup(t)
  fcm.script(/^ga-/, 'slow:200')
  const inflight = Array.from({ length: 40 }, (_, i) => provider.send(android(`ga-${i}`), pushFor()))
  // The GOAWAY must find the session: on a loaded machine its TLS handshake outlasted a fixed 80 ms (CI), the GOAWAY
  // reached no connection, and nothing reconnected. The fake holds the streams once it has recorded one.
  await until('the fake holds streams of the session', () => fcm.requests.some((r) => r.target?.startsWith('ga-')))
  const opened = pool.sessionsOpened
  fcm.goaway()
  const outcomes = await Promise.all(inflight)
  t.equal(outcomes.length, 40, 'none hangs')
  t.same(kinds(outcomes), { accepted: 40 }, 'streams the server had taken are answered')
  const after = await Promise.all(Array.from({ length: 20 }, (_, i) => provider.send(android(`gb-${i}`), pushFor())))
  t.same(kinds(after), { accepted: 20 })
  t.ok(pool.sessionsOpened > opened, 'reconnected')
})

t.test('GOAWAY refusing the streams in flight: they are sent again on a new session and answered', async (t) => {
  const { pool, provider } = setup(t, { sessionsPerOrigin: 1 })
  await provider.send(android('gr-warm'), pushFor()) // stream 1 done: the fake can refuse from stream 3 on
  fcm.script(/^gr-\d/, 'slow:200')
  const inflight = Array.from({ length: 10 }, (_, i) => provider.send(android(`gr-${i}`), pushFor()))
  await until('the fake holds the 10 streams', () => fcm.requests.filter((r) => /^gr-\d/.test(r.target ?? '')).length === 10)
  fcm.goaway({ refuseInFlight: true })
  t.same(kinds(await Promise.all(inflight)), { accepted: 10 })
  t.ok(pool.streamsResent > 0, `refused streams sent again (${pool.streamsResent})`)
  t.equal(pool.sessionsOpened, 2)
})

t.test('an origin that cannot be connected to resolves as a failure', async (t) => {
  const pool = new H2Pool()
  t.teardown(() => pool.close())
  t.match(await pool.request('ftp://nowhere', { ':method': 'GET', ':path': '/' }), { status: 0, failure: 'connection' })
})

t.test('the connection cut under load: in-flight requests are transient, the next ones go through', async (t) => {
  const { pool, provider } = setup(t)
  await provider.send(android('warm'), pushFor())
  fcm.script(/^cut-/, 'slow:300')
  const inflight = Array.from({ length: 30 }, (_, i) => provider.send(android(`cut-${i}`), pushFor()))
  await until('the fake holds the 30 streams', () => fcm.requests.filter((r) => r.target?.startsWith('cut-')).length === 30)
  const opened = pool.sessionsOpened
  fcm.dropAll()
  const outcomes = await Promise.all(inflight)
  t.same(kinds(outcomes), { transient: 30 })
  t.ok(outcomes.every((o) => o.kind === 'transient' && o.reason.startsWith('connection')))
  t.strictSame(await provider.send(android('after-cut'), pushFor()), { kind: 'accepted' })
  t.ok(pool.sessionsOpened > opened)
})

t.test("streams per session never exceed the server's SETTINGS_MAX_CONCURRENT_STREAMS", async (t) => {
  fcm.setMaxConcurrentStreams(3)
  t.teardown(() => fcm.setMaxConcurrentStreams(100))
  const { pool, provider } = setup(t, { sessionsPerOrigin: 2 })
  await provider.send(android('ms-warm'), pushFor()) // the token fetch and the sessions are up
  fcm.script(/^ms-\d/, 'slow:150')
  const inflight = Array.from({ length: 20 }, (_, i) => provider.send(android(`ms-${i}`), pushFor()))
  let peak = 0
  let peakWaiting = 0
  const timer = setInterval(() => {
    const s = pool.stats()[fcm.url]
    peak = Math.max(peak, s?.active ?? 0)
    peakWaiting = Math.max(peakWaiting, s?.waiting ?? 0)
  }, 5)
  const outcomes = await Promise.all(inflight)
  clearInterval(timer)
  t.same(kinds(outcomes), { accepted: 20 })
  t.strictSame(pool.stats()[fcm.url]?.maxStreams, [3, 3], "read from the server's SETTINGS")
  t.ok(peak <= 6, `at most 2 sessions × 3 streams in flight (peak ${peak})`)
  t.ok(peak >= 4, `both sessions used (peak ${peak})`)
  t.ok(peakWaiting > 0, 'the rest waited for a free stream')
})

t.test('a second session opens only once the first is three-quarters full', async (t) => {
  fcm.setMaxConcurrentStreams(8)
  t.teardown(() => fcm.setMaxConcurrentStreams(100))
  const { pool, provider } = setup(t, { sessionsPerOrigin: 2 })
  await provider.send(android('sq-warm'), pushFor()) // the token fetch and the first session are up
  fcm.script(/^sq-\d/, 'slow:150')
  const few = Array.from({ length: 5 }, (_, i) => provider.send(android(`sq-${i}`), pushFor()))
  await tick(50)
  t.equal(pool.stats()[fcm.url]?.sessions, 1, '5 of 8 streams: one session carries them')
  t.same(kinds(await Promise.all(few)), { accepted: 5 })
  const many = Array.from({ length: 12 }, (_, i) => provider.send(android(`sq-${10 + i}`), pushFor()))
  await tick(50)
  t.equal(pool.stats()[fcm.url]?.sessions, 2, 'crowded: a second session is opened')
  t.same(kinds(await Promise.all(many)), { accepted: 12 })
})

t.test('a peer that accepts TCP but never answers the handshake fails the session after the timeout', async (t) => {
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    sockets.add(s) // held open, never a byte back
    s.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 300, sessionsPerOrigin: 1 })
  t.teardown(() => pool.close())
  t.match(await pool.request(url, { ':method': 'GET', ':path': '/' }), { status: 0, failure: 'timeout' })
  // The session's own SETTINGS deadline (the same 300 ms) fires beside the request's: wait for it, on a busy machine
  // as long as it takes, but a session that stays is a failure.
  for (let i = 0; i < 50 && (pool.stats()[url]?.sessions ?? 0) > 0; i++) await tick(100)
  t.strictSame(pool.stats()[url]?.sessions ?? 0, 0, 'the stuck session is gone, so the next request can open a new one')
  t.match(await pool.request(url, { ':method': 'GET', ':path': '/' }), { status: 0 })
  t.equal(pool.sessionsOpened, 2)
})

t.test("a new session starts no stream before the server's SETTINGS, so even the first burst respects them", async (t) => {
  fcm.setMaxConcurrentStreams(1)
  t.teardown(() => fcm.setMaxConcurrentStreams(100))
  const pool = new H2Pool({ ca: testCa(), sessionsPerOrigin: 1 })
  t.teardown(() => pool.close())
  const burst = Array.from({ length: 5 }, () =>
    pool.request(fcm.url, { ':method': 'POST', ':path': '/token' }, 'grant_type=none'),
  )
  t.match(pool.stats()[fcm.url], { sessions: 1, active: 0, waiting: 5 })
  let peak = 0
  const timer = setInterval(() => {
    peak = Math.max(peak, pool.stats()[fcm.url]?.active ?? 0)
  }, 1)
  const rs = await Promise.all(burst)
  clearInterval(timer)
  t.ok(
    rs.every((r) => r.status === 400),
    'all answered (unsupported_grant_type)',
  )
  t.equal(peak, 1)
})

t.test(
  'an untrusted certificate: the connect error names the reason',
  {
    skip:
      process.env.NODE_EXTRA_CA_CERTS === testTls().caFile ? 'the test CA is trusted process-wide (NODE_EXTRA_CA_CERTS)' : false,
  },
  async (t) => {
    const pool = new H2Pool()
    t.teardown(() => pool.close())
    t.match(await pool.request(fcm.url, { ':method': 'GET', ':path': '/' }), {
      status: 0,
      failure: 'connection',
      detail: /certificate/,
    })
  },
)

t.test('a lower limit announced on a live session is honoured', async (t) => {
  const { pool, provider } = setup(t, { sessionsPerOrigin: 1 })
  await provider.send(android('ls-warm'), pushFor())
  fcm.setMaxConcurrentStreams(2)
  t.teardown(() => fcm.setMaxConcurrentStreams(100))
  await tick(50)
  t.strictSame(pool.stats()[fcm.url]?.maxStreams, [2])
  fcm.script(/^ls-\d/, 'slow:100')
  const inflight = Array.from({ length: 6 }, (_, i) => provider.send(android(`ls-${i}`), pushFor()))
  await tick(30)
  t.equal(pool.stats()[fcm.url]?.active, 2)
  t.same(kinds(await Promise.all(inflight)), { accepted: 6 })
})

t.test('a request waiting for a stream also times out', async (t) => {
  fcm.setMaxConcurrentStreams(1)
  t.teardown(() => fcm.setMaxConcurrentStreams(100))
  const { provider } = setup(t, { sessionsPerOrigin: 1, timeoutMs: 1_000 })
  await provider.send(android('wt-warm'), pushFor())
  fcm.script('wt-hang', 'hang')
  // The queued request gets the stream when the hung one gives it up (~1 s) and is answered slowly: had its wait not
  // counted, it would time out a whole timeout later (~2 s). Timed by its own end, so a loaded machine's late start
  // of the second request cannot let it be answered in time.
  fcm.script('wt-next', 'slow:3000')
  const started = performance.now()
  const [hung, queued] = await Promise.all([
    provider.send(android('wt-hang'), pushFor()),
    provider.send(android('wt-next'), pushFor()).then((r) => ({ r, ms: performance.now() - started })),
  ])
  t.match(hung, { kind: 'transient', reason: 'timeout: no answer in time' })
  t.match(queued.r, { kind: 'transient', reason: /^timeout/ })
  t.ok(queued.ms < 1_700, `the wait counted: it ended ${Math.round(queued.ms)} ms after it was asked (timeout 1 s)`)
})

/** A TCP proxy to the fake that can go silent (bytes swallowed both ways, nothing closed): a half-dead path. */
async function freezableProxy(t: { teardown(fn: () => unknown): void }, target: string) {
  const { port: targetPort } = new URL(target)
  const sockets = new Set<Socket>()
  const state = { frozen: false }
  const server = createServer((client) => {
    const upstream = connect(Number(targetPort), '127.0.0.1')
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a)
      a.on('data', (chunk) => {
        if (!state.frozen) b.write(chunk)
      })
      a.on('close', () => {
        sockets.delete(a)
        b.destroy()
      })
      a.on('error', () => {})
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, state }
}

t.test('a session that went silent fails its PING after a timeout and is replaced', async (t) => {
  const proxy = await freezableProxy(t, fcm.url)
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 300, pingTimeoutMs: 300, sessionsPerOrigin: 1 })
  t.teardown(() => pool.close())
  const provider = new FcmProvider(sa, { baseUrl: proxy.url, pool })
  // The first send opens both sessions (TLS through the proxy, the token's RSA signature): on a busy machine that can
  // outlast the 300 ms timeout, which is not what this test is about, so it is tried again until accepted.
  let first = await provider.send(android('fz-1'), pushFor())
  for (let i = 0; i < 20 && first.kind !== 'accepted'; i++) first = await provider.send(android(`fz-1-${i}`), pushFor())
  t.strictSame(first, { kind: 'accepted' })
  const opened = pool.sessionsOpened // the token endpoint's session and the proxied one
  proxy.state.frozen = true
  t.match(await provider.send(android('fz-2'), pushFor()), { kind: 'transient', reason: 'timeout: no answer in time' })
  await tick(450)
  t.strictSame(pool.stats()[proxy.url]?.sessions, 0, 'the silent session is gone')
  proxy.state.frozen = false
  // The next send opens a new session (TLS through the proxy again), which on a busy machine can outlast the 300 ms
  // too: tried again until accepted, each try allowed at most one more session.
  let third = await provider.send(android('fz-3'), pushFor())
  let tries = 1
  for (; tries < 20 && third.kind !== 'accepted'; tries++) third = await provider.send(android(`fz-3-${tries}`), pushFor())
  t.strictSame(third, { kind: 'accepted' })
  t.ok(
    pool.sessionsOpened > opened && pool.sessionsOpened <= opened + tries,
    `a new session replaced the silent one (${pool.sessionsOpened - opened} opened in ${tries} tries)`,
  )
})

t.test('a slow answer alone does not cost the session (its PING is answered)', async (t) => {
  const { pool, provider } = setup(t, { sessionsPerOrigin: 1, timeoutMs: 200, pingTimeoutMs: 300 })
  await provider.send(android('sl-warm'), pushFor())
  fcm.script('sl-hang', 'hang')
  t.match(await provider.send(android('sl-hang'), pushFor()), { kind: 'transient', reason: 'timeout: no answer in time' })
  const opened = pool.sessionsOpened
  await tick(100)
  t.strictSame(await provider.send(android('sl-next'), pushFor()), { kind: 'accepted' })
  t.equal(pool.sessionsOpened, opened, 'the same session')
})

t.test('an idle session is closed and its group forgotten; the next request opens a new one', async (t) => {
  const { pool, provider } = setup(t, { sessionsPerOrigin: 1, idleMs: 100 })
  t.strictSame(await provider.send(android('id-1'), pushFor()), { kind: 'accepted' })
  const opened = pool.sessionsOpened
  await tick(350)
  t.strictSame(pool.stats(), {}, 'nothing left open')
  t.strictSame(await provider.send(android('id-2'), pushFor()), { kind: 'accepted' })
  t.equal(pool.sessionsOpened, opened + 1)
})

t.test('an unreachable host answers transient at once; a closed pool answers closed', async (t) => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port
      s.close(() => resolve(p))
    })
  })
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 5_000 })
  const started = Date.now()
  const rs = await Promise.all(
    Array.from({ length: 5 }, () => pool.request(`https://127.0.0.1:${port}`, { ':method': 'GET', ':path': '/' })),
  )
  t.ok(rs.every((r) => r.status === 0 && 'failure' in r && r.failure === 'connection'))
  t.ok(Date.now() - started < 2_000, 'no waiting for the timeout')
  await pool.close()
  t.match(await pool.request(fcm.url, { ':method': 'GET', ':path': '/' }), { status: 0, failure: 'closed' })
})

t.test(
  "timeouts: the pool's own end from one list in order, a request's own ends on its own timer, answered requests leave the list",
  async (t) => {
    const tls = testTls()
    const server = createSecureServer({ key: tls.key, cert: tls.cert })
    server.on('stream', (stream, headers) => {
      if (headers[':path'] === '/quick') stream.respond({ ':status': 204 }, { endStream: true })
      // '/hang': never answered
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
    const pool = new H2Pool({ ca: testCa(), timeoutMs: 400, sessionsPerOrigin: 1 })
    t.teardown(async () => {
      await pool.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
    const get = (path: string, timeoutMs?: number) =>
      pool.request(url, { ':method': 'GET', ':path': path }, undefined, timeoutMs ? { timeoutMs } : {})
    // Answered at once: each leaves the deadline list when it settles (a stale entry would time out a settled request
    // or keep the list's head from moving on).
    const quick = await Promise.all(Array.from({ length: 20 }, () => get('/quick')))
    t.ok(
      quick.every((r) => r.status === 204),
      'answered',
    )
    const started = Date.now()
    const hung = [get('/hang'), get('/hang'), get('/hang')]
    const longer = get('/hang', 1_500)
    const shorter = await get('/hang', 100)
    t.match(shorter, { status: 0, failure: 'timeout' }, 'a shorter timeout of its own')
    t.ok(Date.now() - started < 390, `ended on its own timer (${Date.now() - started} ms), before the pool's deadline`)
    const outs = await Promise.all(hung)
    const waited = Date.now() - started
    t.ok(
      outs.every((r) => r.status === 0 && 'failure' in r && r.failure === 'timeout'),
      "the pool's timeout ended every unanswered request",
    )
    t.ok(waited >= 395 && waited < 1_000, `at the pool's timeout, at most an eighth of it late on a quiet machine (${waited} ms)`)
    t.match(await longer, { status: 0, failure: 'timeout' })
    t.ok(Date.now() - started >= 1_490, 'a longer timeout of its own is not cut short by the list')
  },
)
