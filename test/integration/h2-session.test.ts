// The provider HTTP/2 client (src/h2/session.ts) against Node's own HTTP/2 server (nghttp2) over
// TLS: bodies larger than the peer's windows and frames, answers split over CONTINUATION, trailers, informational
// heads, a peer that keeps no HPACK table, oversized answers, headers that may not be sent, PING, and a peer that
// speaks garbage. Each request's answer is checked byte for byte against what the server saw.
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http2'
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2'
import net, { type AddressInfo } from 'node:net'
import tls from 'node:tls'
import fc from 'fast-check'
import t from 'tap'
import { H2Session, type StreamHandler } from '../../src/h2/session'
import { testCa, testTls } from '../fakes/tls'
import { until } from '../helpers/until'

type Answer = { status: number; headers: IncomingHttpHeaders; body: Buffer } | { failed: number | undefined; reason: string }

function ask(s: H2Session, path: string, body?: Buffer | string, headers: Array<[string, string]> = []): Promise<Answer> {
  return new Promise((resolve) => {
    const h: StreamHandler = {
      onResponse: (status, hs, b) => resolve({ status, headers: hs, body: b }),
      onFail: (code, reason) => resolve({ failed: code, reason }),
    }
    s.request('POST', path, headers, body, h) // text as text: the session writes it into its frame itself
  })
}

async function server(
  t: { teardown(fn: () => unknown): void },
  handler: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: Buffer) => void,
  settings: Parameters<typeof createSecureServer>[0] extends infer O
    ? O extends { settings?: infer S }
      ? S
      : never
    : never = {},
): Promise<{ url: string; srv: Http2SecureServer; sessions: ServerHttp2Session[] }> {
  const { key: keyPem, cert: certPem } = testTls()
  const srv = createSecureServer({ key: keyPem, cert: certPem, settings })
  const sessions: ServerHttp2Session[] = []
  srv.on('session', (x) => {
    sessions.push(x)
    x.on('error', () => {}) // a client dropping its socket is what some tests do
  })
  srv.on('stream', (stream, headers) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => handler(stream, headers, Buffer.concat(chunks)))
    stream.on('error', () => {})
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())))
  return { url: `https://localhost:${(srv.address() as AddressInfo).port}`, srv, sessions }
}

function session(t: { teardown(fn: () => unknown): void }, url: string): H2Session {
  const s = new H2Session(url, { ca: [...tls.rootCertificates, testCa()] })
  t.teardown(() => s.destroy())
  return s
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')

t.test('concurrent requests: each answer is its own request echoed, headers and body', async (t) => {
  const { url } = await server(t, (stream, headers, body) => {
    stream.respond({
      ':status': 200,
      'x-path': String(headers[':path']),
      'x-len': String(body.length),
      'content-type': 'application/json',
    })
    stream.end(body)
  })
  const s = session(t, url)
  const bodies = Array.from({ length: 300 }, (_, i) => JSON.stringify({ i, pad: 'é'.repeat(i % 50) }))
  const answers = await Promise.all(bodies.map((b, i) => ask(s, `/echo/${i}`, b, [['content-type', 'application/json']])))
  answers.forEach((a, i) => {
    if (!('status' in a)) {
      t.fail(`request ${i}: ${a.reason}`)
      return
    }
    t.equal(a.status, 200)
    t.equal(a.headers['x-path'], `/echo/${i}`)
    t.equal(a.body.toString(), bodies[i])
  })
  t.equal(s.active, 0, 'every stream ended')
})

t.test("a body larger than the peer's stream window and frame size arrives whole (flow control)", async (t) => {
  const { url } = await server(
    t,
    (stream, _h, body) => {
      stream.respond({ ':status': 200, 'x-sha': sha(body) })
      stream.end()
    },
    { initialWindowSize: 1_000 },
  )
  const s = session(t, url)
  const big = Buffer.alloc(300_000, 'x')
  for (let i = 0; i < big.length; i += 97) big[i] = i % 251
  const text = `${'z'.repeat(50_000)}é` // text over the window: cut into frames like a buffer
  const answers = await Promise.all([
    ask(s, '/big', big),
    ask(s, '/big2', big.subarray(0, 70_000)),
    ask(s, '/small', 'ok'),
    ask(s, '/text', text),
  ])
  t.same(
    answers.map((a) => ('status' in a ? a.headers['x-sha'] : a.reason)),
    [sha(big), sha(big.subarray(0, 70_000)), sha('ok'), sha(text)],
  )
})

t.test('an answer head over one frame (CONTINUATION), trailers, and an informational head', async (t) => {
  const huge = 'v'.repeat(40_000)
  const { url } = await server(t, (stream, headers) => {
    const p = String(headers[':path'])
    if (p === '/huge') {
      stream.respond({ ':status': 200, 'x-huge': huge, 'x-after': 'yes' })
      stream.end('h')
    } else if (p === '/trailers') {
      stream.respond({ ':status': 200 }, { waitForTrailers: true })
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-trailer': 'done' }))
      stream.end('body before trailers')
    } else {
      stream.additionalHeaders({ ':status': 103, link: '</x>; rel=preload' })
      stream.respond({ ':status': 201 })
      stream.end('after 103')
    }
  })
  const s = session(t, url)
  const [h, tr, info] = await Promise.all([ask(s, '/huge'), ask(s, '/trailers'), ask(s, '/info')])
  t.ok(
    'status' in h && h.headers['x-huge'] === huge && h.headers['x-after'] === 'yes',
    'a 40 KB header read across CONTINUATION frames',
  )
  t.ok('status' in tr && tr.status === 200 && tr.body.toString() === 'body before trailers', 'trailers end the answer')
  t.ok('status' in info && info.status === 201 && info.body.toString() === 'after 103', 'the 103 is skipped')
  // The session is still in step (HPACK included) after all that.
  const again = await ask(s, '/trailers')
  t.ok('status' in again && again.status === 200)
})

t.test('a peer that keeps no HPACK table (SETTINGS_HEADER_TABLE_SIZE 0) still gets every header', async (t) => {
  const { url } = await server(
    t,
    (stream, headers) => {
      stream.respond({ ':status': 200, 'x-auth': String(headers.authorization) })
      stream.end()
    },
    { headerTableSize: 0 },
  )
  const s = session(t, url)
  for (let i = 0; i < 3; i++) {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, j) => ask(s, '/x', 'b', [['authorization', `Bearer tok-${j % 3}`]])),
    )
    answers.forEach((a, j) => {
      t.equal('status' in a && a.headers['x-auth'], `Bearer tok-${j % 3}`)
    })
  }
})

t.test('an answer body over maxResponseBodyBytes is refused; a header value with a line break is never sent', async (t) => {
  const { url } = await server(t, (stream, headers) => {
    stream.respond({ ':status': 200 })
    const path = headers[':path']
    stream.end(path === '/flood' ? Buffer.alloc(1_100_000) : path === '/cap' ? Buffer.alloc(64 * 1024, 1) : 'fine')
  })
  const s = session(t, url)
  const cap = await ask(s, '/cap')
  t.ok('status' in cap && cap.body.length === 64 * 1024, 'an answer of exactly 64 KiB (the default cap) arrives')
  // nghttp2 honours the stream window we announce (the cap plus one byte): one byte past the cap and it waits.
  const flood = await ask(s, '/flood')
  t.ok('failed' in flood && /over 65536 bytes \(maxResponseBodyBytes\)/.test(flood.reason), 'refused')
  t.throws(() => s.request('POST', '/x', [['x-bad', 'a\r\nb']], undefined, { onResponse() {}, onFail() {} }), TypeError)
  const after = await ask(s, '/ok')
  t.ok('status' in after && after.body.toString() === 'fine', 'the session goes on')
})

t.test('PING is answered; a GOAWAY from the server ends the session once its streams are done', async (t) => {
  let taken = 0
  const { url, sessions } = await server(t, (stream) => {
    taken++
    setTimeout(() => {
      stream.respond({ ':status': 200 })
      stream.end('late')
    }, 100)
  })
  const s = session(t, url)
  const pingError = await new Promise<Error | undefined>((resolve) => s.ping(resolve))
  t.equal(pingError, undefined, 'ping answered')
  let goaway = 0
  let closed = 0
  s.onGoaway = () => goaway++
  s.onClose = () => closed++
  const pending = ask(s, '/slow')
  await until('the server has taken the stream', () => taken === 1)
  for (const x of sessions) x.goaway(0, 1) // NO_ERROR, stream 1 (ours) will be processed
  const a = await pending
  t.ok('status' in a && a.body.toString() === 'late', 'a stream the server had taken is answered')
  await until('the session closed', () => closed === 1)
  t.equal(goaway, 1, 'told once')
  t.equal(closed, 1, 'closed once its last stream ended')
  t.throws(() => s.request('POST', '/x', [], undefined, { onResponse() {}, onFail() {} }), /closing/, 'no new stream')
  for (const x of sessions) x.destroy() // a server session that sent GOAWAY waits for its peer; the test does not
})

t.test('a peer speaking garbage: the streams fail, nothing throws', async (t) => {
  const { key: keyPem, cert: certPem } = testTls()
  const srv = tls.createServer({ key: keyPem, cert: certPem, ALPNProtocols: ['h2'] }, (sock) => {
    sock.on('data', () => sock.write(Buffer.from([0xff, 0xff, 0xff, 0x00, 0x00, 0, 0, 0, 0]))) // a 16 MB frame header
    sock.on('error', () => {})
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())))
  const s = session(t, `https://localhost:${(srv.address() as AddressInfo).port}`)
  let error: Error | undefined
  s.onError = (e) => {
    error = e
  }
  const a = await ask(s, '/x', 'y')
  t.ok('failed' in a, 'the stream failed')
  t.match(error?.message, /frame of \d+ bytes/)
  t.ok(s.destroyed)
})

t.test('a peer without HTTP/2 (no ALPN h2) fails the session with the reason', async (t) => {
  const { key: keyPem, cert: certPem } = testTls()
  const srv = tls.createServer({ key: keyPem, cert: certPem, ALPNProtocols: ['http/1.1'] }, (sock) => sock.on('error', () => {}))
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())))
  const s = session(t, `https://localhost:${(srv.address() as AddressInfo).port}`)
  const failed = new Promise<Error>((r) => {
    s.onError = r
  })
  t.match((await failed).message, /did not agree to HTTP\/2|application protocol/i, 'HTTP/2 was not agreed')
})

t.test('a hostile peer sending arbitrary frames: every stream ends exactly once, nothing throws', async (t) => {
  // A cleartext peer (the session speaks prior-knowledge h2c to http: origins) that reads our preface and then sends
  // whatever the property generated: valid-looking frames of every type with random flags, ids and payloads, or raw
  // bytes. The session must settle every request (an answer or a failure, once) and never throw out of its reader.
  const frameArb = fc.oneof(
    fc.record({
      type: fc.integer({ min: 0, max: 12 }),
      flags: fc.integer({ min: 0, max: 255 }),
      stream: fc.constantFrom(0, 1, 3, 5, 7, 2, 99),
      payload: fc.uint8Array({ maxLength: 40 }),
    }),
    fc.uint8Array({ minLength: 1, maxLength: 30 }).map((raw) => ({ raw })),
    // Well-formed pieces of answers, so that answers, trailers and resets of our own streams happen too: a
    // `:status 200` head (static index 8), with or without END_STREAM, and DATA with or without END_STREAM.
    fc.record({
      type: fc.constant(1),
      flags: fc.constantFrom(0x4, 0x5),
      stream: fc.constantFrom(1, 3, 5, 7),
      payload: fc.constant(Uint8Array.of(0x88)),
    }),
    fc.record({
      type: fc.constant(0),
      flags: fc.constantFrom(0, 1),
      stream: fc.constantFrom(1, 3, 5, 7),
      payload: fc.uint8Array({ maxLength: 8 }),
    }),
  )
  let cases = 0
  await fc.assert(
    fc.asyncProperty(fc.array(frameArb, { minLength: 1, maxLength: 12 }), async (frames) => {
      cases++
      const srv = net.createServer((sock) => {
        sock.on('error', () => {})
        sock.once('data', () => {
          const out: Buffer[] = [settingsFrameBytes()]
          for (const f of frames) {
            if ('raw' in f) out.push(Buffer.from(f.raw))
            else {
              const p = Buffer.from(f.payload)
              const h = Buffer.alloc(9)
              h.writeUIntBE(p.length, 0, 3)
              h[3] = f.type
              h[4] = f.flags
              h.writeUInt32BE(f.stream, 5)
              out.push(h, p)
            }
          }
          sock.end(Buffer.concat(out))
        })
      })
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
      const s = new H2Session(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`)
      const settled = [0, 0, 0, 0]
      const asks = settled.map(
        (_, i) =>
          new Promise<void>((resolve) => {
            s.request('POST', `/${i}`, [], Buffer.from('x'), {
              onResponse: () => {
                settled[i] = (settled[i] ?? 0) + 1
                resolve()
              },
              onFail: () => {
                settled[i] = (settled[i] ?? 0) + 1
                resolve()
              },
            })
          }),
      )
      // The peer closes its side after its frames: whatever they were, every stream ends.
      await Promise.all(asks)
      // A fixed pause on purpose: the assertion is that no stream settles a second time during it.
      await new Promise((r) => setTimeout(r, 5))
      s.destroy()
      await new Promise<void>((r) => srv.close(() => r()))
      return settled.every((n) => n === 1)
    }),
    { numRuns: 60, seed: 20261127 },
  )
  t.equal(cases >= 60, true, `${cases} peers`)
})

/** An empty SETTINGS frame: what a peer sends first. */
function settingsFrameBytes(): Buffer {
  return Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])
}
