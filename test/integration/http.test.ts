import { connect } from 'node:net'
import t from 'tap'
import { PLATFORM_KEY, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

const platform = { authorization: `Bearer ${PLATFORM_KEY}` }

/** Writes raw HTTP/1.1 and collects whatever comes back until the server closes or `ms` pass. */
function rawExchange(s: TestService, chunks: string[], ms = 1_000): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(s.svc.api?.port as number, '127.0.0.1')
    let out = ''
    sock.on('data', (d) => {
      out += d.toString()
    })
    sock.on('error', () => {})
    const timer = setTimeout(() => {
      sock.destroy()
      resolve(out)
    }, ms)
    sock.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
    for (const c of chunks) sock.write(c)
  })
}

t.test('body over the cap is 413 from Content-Length, before the body is read', async (t) => {
  const s = await startService(t)
  const big = JSON.stringify({ nome: 'x'.repeat(17 * 1024) })
  const r = await s.call('POST', '/api/v1/apps', { raw: big, headers: { ...platform, 'content-type': 'application/json' } })
  t.equal(r.status, 413)
  t.equal(r.json.explain.limite, 16 * 1024)
  t.ok(r.headers.get('x-pm-request-id'))
  const justUnder = JSON.stringify({ nome: 'x', ignorado: 'x'.repeat(16 * 1024 - 40) }) // nome itself is capped (PM_APP_NAME_MAX_BYTES)
  t.equal((await s.call('POST', '/api/v1/apps', { raw: justUnder, headers: platform })).status, 201)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 1, 'only the one under the cap was written')
})

t.test('a chunked body (no Content-Length) is cut off at the cap', async (t) => {
  const s = await startService(t)
  const chunk = 'x'.repeat(4096)
  const body = ['{"nome":"', chunk, chunk, chunk, chunk, chunk, '"}'].map((c) => `${c.length.toString(16)}\r\n${c}\r\n`).join('')
  const out = await rawExchange(s, [
    `POST /api/v1/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${PLATFORM_KEY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
    `${body}0\r\n\r\n`,
  ])
  t.match(out, /^HTTP\/1\.1 413 /)
  t.match(out, /X-Pm-Request-Id: [0-9a-f-]{36}/i)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0)
})

t.test('a client that aborts mid-body gets nothing written and the server keeps serving', async (t) => {
  const s = await startService(t)
  const out = await rawExchange(
    s,
    [`POST /api/v1/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${PLATFORM_KEY}\r\nContent-Length: 100\r\n\r\n{"nome":"me`],
    200,
  )
  t.equal(out, '', 'no answer to a body that never completed')
  const r = await s.call('GET', '/')
  t.equal(r.status, 200)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0)
})

t.test('graceful shutdown: stops accepting, finishes the request in flight', async (t) => {
  const s = await startService(t)
  const port = s.svc.api?.port as number
  const sock = connect(port, '127.0.0.1')
  let out = ''
  sock.on('data', (d) => {
    out += d.toString()
  })
  const body = '{"nome":"em voo"}'
  sock.write(
    `POST /api/v1/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${PLATFORM_KEY}\r\nContent-Length: ${body.length}\r\n\r\n{"nome"`,
  )
  await until('the request is in flight', () => s.svc.api?.router.inflight === 1)
  const stopping = s.svc.api?.close(5_000) as Promise<void>
  let stopped = false
  stopping.then(() => {
    stopped = true
  })
  // A fixed pause on purpose: the assertion is that nothing happens (close does not finish) during it.
  await new Promise((r) => setTimeout(r, 100))
  t.notOk(stopped, 'waits for the request in flight')
  await t.rejects(fetch(`http://127.0.0.1:${port}/`), 'no new connections are accepted')
  const closed = new Promise((r) => sock.on('close', r))
  sock.write(body.slice(7))
  await stopping
  await closed
  t.match(out, /^HTTP\/1\.1 201 /, 'the request in flight was answered')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 1)
  sock.destroy()
})

t.test('unknown routes and methods answer the 404 envelope', async (t) => {
  const s = await startService(t)
  for (const [m, p] of [
    ['GET', '/api/v2/apps'],
    ['DELETE', '/api/v1/apps'],
    ['GET', '/api/v1/apps'],
  ] as const) {
    const r = await s.call(m, p)
    t.equal(r.status, 404, `${m} ${p}`)
    t.ok(r.json.errors[0])
    t.equal(r.json.explain.request_id, r.headers.get('x-pm-request-id'))
  }
})
