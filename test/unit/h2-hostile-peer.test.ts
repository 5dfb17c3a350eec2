// The HTTP/2 client (src/h2/) against a hostile peer: a raw TLS server (test/fakes/h2-raw-peer.ts) writing frames by
// hand plays each attack the client must survive: a flood of one-byte header references, empty CONTINUATIONs, PING and
// SETTINGS floods, a peer ignoring our windows, malformed answer heads, answers too long, no SETTINGS, a header block
// left open. Each case runs twice: on one session (every request's handler is called exactly once, classified
// 'protocol') and through the pool (every request resolves once as a 'protocol' failure, the peer gets GOAWAY with the
// expected code, and the next request, once the peer behaves, is answered on a fresh session). The process must live
// through all of it, and the heap and RSS growth of each case, sampled while it runs, stay under a bound.
import { rootCertificates } from 'node:tls'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test as Tap } from 'tap'
import { encodeInteger } from '../../src/h2/hpack'
import type { H2Limits } from '../../src/h2/limits'
import { H2Pool } from '../../src/h2/pool'
import { H2Session } from '../../src/h2/session'
import type { H2Result } from '../../src/h2/types'
import {
  ACK,
  END_HEADERS,
  END_STREAM,
  frameBytes,
  literal,
  type RawConn,
  rawPeer,
  STATUS_200,
  settingsBytes,
  T,
} from '../fakes/h2-raw-peer'
import { testCa } from '../fakes/tls'

v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const CODE = { PROTOCOL_ERROR: 0x1, FLOW_CONTROL_ERROR: 0x3, SETTINGS_TIMEOUT: 0x4, ENHANCE_YOUR_CALM: 0xb }
const MiB = 1024 * 1024
/** Growth allowed while a case runs, over its start (after a full GC). The old client grew its heap by ~100 MB on the
 *  empty-CONTINUATION flood alone, and died on the header-reference flood. */
const HEAP_BOUND = 32 * MiB
const RSS_BOUND = 64 * MiB

interface Case {
  name: string
  /** What the peer does on a connection while the case is hostile (the first connection of each phase). */
  attack: (c: RawConn, n: number) => Promise<void>
  /** The code of the GOAWAY the client must send (none: the session lives, one stream is refused). */
  goaway?: number
  /** What the failure's detail names (the rule and its setting). */
  detail: RegExp
  limits?: Partial<H2Limits>
  /** Requests in flight during the attack (default 3). */
  requests?: number
}

/** HPACK: a literal field with incremental indexing and a new name (RFC 7541 §6.2.1): it enters the table at 62. */
function indexed(name: string, value: string): Buffer {
  return Buffer.concat([
    Buffer.from([0x40]),
    encodeInteger(name.length, 7),
    Buffer.from(name),
    encodeInteger(value.length, 7),
    Buffer.from(value),
  ])
}

/** A header block as HEADERS and as many CONTINUATIONs as 16 KB frames need. */
function headerFrames(stream: number, block: Buffer, endStream: boolean): Buffer[] {
  const out: Buffer[] = []
  for (let at = 0; at < block.length || at === 0; at += 16_384) {
    const last = at + 16_384 >= block.length
    const type = at === 0 ? T.HEADERS : T.CONTINUATION
    const flags = (last ? END_HEADERS : 0) | (at === 0 && endStream ? END_STREAM : 0)
    out.push(frameBytes(type, flags, stream, block.subarray(at, at + 16_384)))
  }
  return out
}

/** The handshake, then the stream of the first request. */
async function firstStream(c: RawConn): Promise<number> {
  await c.handshake()
  await c.until(() => c.requests.length > 0)
  return c.requests[0] as number
}

/** An answer whose head is `block` (then 'ok', or trailers when given). */
function badHead(name: string, block: Buffer, o: { trailers?: Buffer; body?: string } = {}): Case {
  return {
    name: `malformed answer: ${name}`,
    goaway: CODE.PROTOCOL_ERROR,
    detail: /PROTOCOL_ERROR: malformed (response head|trailers)|does not match its content-length/,
    attack: async (c) => {
      const id = await firstStream(c)
      const body = Buffer.from(o.body ?? 'ok')
      if (o.trailers) {
        await c.send(frameBytes(T.HEADERS, END_HEADERS, id, block), frameBytes(T.DATA, 0, id, body))
        await c.send(frameBytes(T.HEADERS, END_HEADERS | END_STREAM, id, o.trailers))
      } else await c.send(frameBytes(T.HEADERS, END_HEADERS, id, block), frameBytes(T.DATA, END_STREAM, id, body))
    },
  }
}

/** Sends each request a body honouring the client's windows (round robin), up to `perStream` bytes or a reset. */
async function honestFlood(c: RawConn, ids: number[], perStream: number): Promise<void> {
  const sent = new Map(ids.map((id) => [id, 0]))
  for (const id of ids) await c.send(frameBytes(T.HEADERS, END_HEADERS, id, STATUS_200))
  const open = () => ids.filter((id) => !c.reset.has(id) && (sent.get(id) as number) < perStream)
  while (!c.closed && open().length > 0) {
    let progress = false
    for (const id of open()) {
      const n = Math.min(16_384, c.streamWindow.get(id) ?? 0, c.connWindow, perStream - (sent.get(id) as number))
      if (n <= 0) continue
      c.streamWindow.set(id, (c.streamWindow.get(id) as number) - n)
      c.connWindow -= n
      sent.set(id, (sent.get(id) as number) + n)
      progress = true
      if (!(await c.send(frameBytes(T.DATA, 0, id, Buffer.alloc(n, 0x7a))))) return
    }
    if (!progress) {
      const before = c.frames.length
      await c.until(() => c.frames.length > before, 2_000) // a WINDOW_UPDATE or a reset
    }
  }
}

const cases: Case[] = [
  {
    name: 'header-reference flood: 140 KB of one-byte references to a 4 KB entry',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /ENHANCE_YOUR_CALM: a header block over 65535 bytes \(maxHeaderListBytes\)/,
    attack: async (c) => {
      const id = await firstStream(c)
      const block = Buffer.concat([STATUS_200, indexed('x-a', 'a'.repeat(4_000)), Buffer.alloc(140_000, 0xbe)])
      await c.send(...headerFrames(id, block, true))
    },
  },
  {
    name: 'header-reference flood in one frame: 16 KB of references to a small entry',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /ENHANCE_YOUR_CALM: more than 128 header fields \(maxHeaderListPairs/,
    attack: async (c) => {
      const id = await firstStream(c)
      await c.send(...headerFrames(id, Buffer.concat([STATUS_200, indexed('x-b', '1'), Buffer.alloc(16_000, 0xbe)]), true))
    },
  },
  {
    name: 'empty CONTINUATION flood: 8 MB of 9-byte frames after one HEADERS',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /more than 8 CONTINUATION frames \(maxContinuations\)/,
    attack: async (c) => {
      const id = await firstStream(c)
      await c.send(frameBytes(T.HEADERS, 0, id, STATUS_200))
      await c.flood(frameBytes(T.CONTINUATION, 0, id), 8 * MiB)
    },
  },
  {
    name: 'PING flood from a peer that does not read',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /more than 1000 acknowledgements and resets queued \(maxQueuedControlFrames\)/,
    attack: async (c) => {
      await c.handshake()
      c.sock.pause()
      await c.flood(frameBytes(T.PING, 0, 0, Buffer.alloc(8, 1)), 64 * MiB)
    },
  },
  {
    name: 'SETTINGS flood from a peer that does not read',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /more than 1000 acknowledgements and resets queued \(maxQueuedControlFrames\)/,
    attack: async (c) => {
      await c.handshake()
      c.sock.pause()
      await c.flood(settingsBytes(), 64 * MiB)
    },
  },
  {
    name: 'SETTINGS with 33 entries',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /more than 32 SETTINGS entries \(maxSettingsEntries\)/,
    attack: async (c) => {
      await c.send(settingsBytes(Array.from({ length: 33 }, (_, i) => [0x100 + i, 0] as [number, number])))
    },
  },
  {
    name: 'window overrun: 96 KB of DATA on a stream whose window is 64 KiB + 1',
    goaway: CODE.FLOW_CONTROL_ERROR,
    detail: /FLOW_CONTROL_ERROR: DATA beyond the stream window/,
    attack: async (c) => {
      const id = await firstStream(c)
      await c.send(frameBytes(T.HEADERS, END_HEADERS, id, STATUS_200))
      for (let i = 0; i < 6; i++) await c.send(frameBytes(T.DATA, 0, id, Buffer.alloc(16_384, 0x79)))
    },
  },
  badHead('an upper-case field name', Buffer.concat([STATUS_200, literal('X-Up', '1')])),
  badHead('a connection-specific field', Buffer.concat([STATUS_200, literal('connection', 'close')])),
  badHead('te other than trailers', Buffer.concat([STATUS_200, literal('te', 'gzip')])),
  badHead('a request pseudo-header', Buffer.concat([STATUS_200, literal(':path', '/')])),
  badHead('a pseudo-header after a regular field', Buffer.concat([literal('x-a', '1'), STATUS_200])),
  badHead('two :status', Buffer.concat([STATUS_200, literal(':status', '204')])),
  badHead('no :status', literal('x-a', '1')),
  badHead(':status 2000', literal(':status', '2000')),
  badHead('a value with a leading space', Buffer.concat([STATUS_200, literal('x-a', ' 1')])),
  badHead('a value with NUL', Buffer.concat([STATUS_200, literal('x-a', 'a\0b')])),
  badHead('a pseudo-header in trailers', STATUS_200, { trailers: literal(':status', '200') }),
  badHead('a body longer than its content-length', Buffer.concat([STATUS_200, literal('content-length', '1')]), {
    body: 'longer',
  }),
  {
    // Interleaved, the 24 answers fill the connection window before any reaches the cap: the longest unfinished one
    // is refused each time the peer has no room left, the others at the cap.
    name: 'answers too long: 24 bodies of up to 32 MB sent round robin, honouring our windows',
    detail:
      /answer body over 65536 bytes \(maxResponseBodyBytes\)|unfinished answers over 1048576 bytes \(connectionWindowBytes\)/,
    requests: 24,
    attack: async (c, n) => {
      await c.handshake()
      await c.until(() => c.requests.length >= n)
      await honestFlood(c, c.requests.slice(0, n), 32 * MiB)
    },
  },
  {
    name: 'no SETTINGS: a peer that completes TLS and stays silent',
    goaway: CODE.SETTINGS_TIMEOUT,
    detail: /SETTINGS_TIMEOUT: no SETTINGS from the peer within 400 ms \(settingsTimeoutMs\)/,
    limits: { settingsTimeoutMs: 400 },
    attack: async (c) => {
      await c.until(() => c.closed, 10_000)
    },
  },
  {
    name: 'no SETTINGS first: a PING before them',
    goaway: CODE.PROTOCOL_ERROR,
    detail: /PROTOCOL_ERROR: the first frame from the peer is not SETTINGS/,
    attack: async (c) => {
      await c.send(frameBytes(T.PING, 0, 0, Buffer.alloc(8)), settingsBytes())
    },
  },
  {
    name: 'our SETTINGS never acknowledged',
    goaway: CODE.SETTINGS_TIMEOUT,
    detail: /SETTINGS_TIMEOUT: our SETTINGS were not acknowledged within 400 ms/,
    limits: { settingsTimeoutMs: 400 },
    attack: async (c) => {
      await c.send(settingsBytes([[0x3, 100]]))
      await c.until(() => c.closed, 10_000)
    },
  },
  {
    name: 'a slow header block: a CONTINUATION every 150 ms, never the end',
    goaway: CODE.ENHANCE_YOUR_CALM,
    detail: /ENHANCE_YOUR_CALM: a header block still open after 600 ms \(headerBlockTimeoutMs\)/,
    limits: { headerBlockTimeoutMs: 600 },
    attack: async (c) => {
      const id = await firstStream(c)
      await c.send(frameBytes(T.HEADERS, 0, id, STATUS_200))
      for (let i = 0; i < 7 && !c.closed; i++) {
        await new Promise((r) => setTimeout(r, 150))
        await c.send(frameBytes(T.CONTINUATION, 0, id))
      }
    },
  },
]

/** Peak growth of heap and RSS over the moment it starts (after a full GC), sampled every 10 ms. */
function memoryWatch(): { stop(): { heap: number; rss: number } } {
  gc()
  const base = process.memoryUsage()
  let heap = 0
  let rss = 0
  const sample = () => {
    const m = process.memoryUsage()
    heap = Math.max(heap, m.heapUsed - base.heapUsed)
    rss = Math.max(rss, m.rss - base.rss)
  }
  // Unref'd: a case that throws before stop() must not keep the process alive after its last test.
  const timer = setInterval(sample, 10).unref()
  return {
    stop() {
      sample()
      clearInterval(timer)
      return { heap, rss }
    },
  }
}

type Ending = { calls: number; kind?: string; reason?: string; status?: number }

/** `n` requests on one session; resolves when each handler was called (or after `ms`), with the calls counted. */
async function onOneSession(url: string, n: number, limits: Partial<H2Limits> | undefined, ms: number): Promise<Ending[]> {
  const s = new H2Session(url, { ca: [...rootCertificates, testCa()], limits })
  const ends: Ending[] = Array.from({ length: n }, () => ({ calls: 0 }))
  let done = 0
  let wake = () => {}
  const all = new Promise<void>((r) => {
    wake = () => done >= n && r()
  })
  ends.forEach((e, i) => {
    s.request('POST', `/one/${i}`, [['content-type', 'application/json']], '{}', {
      onResponse(status) {
        if (e.calls++ === 0) done++
        e.status = status
        wake()
      },
      onFail(_code, reason, kind) {
        if (e.calls++ === 0) done++
        e.kind = kind
        e.reason = reason
        wake()
      },
    })
  })
  await Promise.race([all, new Promise((r) => setTimeout(r, ms))])
  await new Promise((r) => setTimeout(r, 30)) // a fixed pause on purpose: nothing may be called a second time in it
  s.destroy()
  return ends
}

/** One case: its attack on one session, then through the pool, then a well-behaved peer; memory watched throughout. */
async function runCase(t: Tap, c: Case): Promise<void> {
  const n = c.requests ?? 3
  let hostile = true
  const peer = await rawPeer(async (conn) => {
    if (!hostile) {
      await conn.handshake()
      conn.serveWell()
      return
    }
    await c.attack(conn, n)
    if (!c.goaway) conn.serveWell(n) // the session lives: later requests on it are answered
  })
  t.teardown(() => peer.close())
  const mem = memoryWatch()
  t.teardown(() => void mem.stop())

  // One session: every handler called exactly once.
  const ends = await onOneSession(peer.url, n, c.limits, 8_000)
  for (const [i, e] of ends.entries())
    t.match(e, { calls: 1, kind: 'protocol', reason: c.detail }, `session request ${i}: ended once, classified`)

  // The pool: every request resolves as a 'protocol' failure; the peer gets GOAWAY; a fresh session follows.
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 6_000, sessionsPerOrigin: 1, limits: c.limits })
  t.teardown(() => pool.close())
  const results: H2Result[] = await Promise.all(
    Array.from({ length: n }, (_, i) => pool.request(peer.url, { ':method': 'POST', ':path': `/pool/${i}` }, '{}')),
  )
  for (const [i, r] of results.entries())
    t.match(r, { status: 0, failure: 'protocol', detail: c.detail }, `pool request ${i}: a 'protocol' failure`)
  const attacked = peer.conns[1] as RawConn
  if (c.goaway !== undefined && !attacked.sock.isPaused()) {
    t.ok(await attacked.until(() => attacked.goaway !== null, 3_000), 'the peer got GOAWAY')
    t.equal(attacked.goaway?.code, c.goaway, `GOAWAY's code is ${c.goaway}`)
  }
  hostile = false
  const after = await pool.request(peer.url, { ':method': 'POST', ':path': '/after' }, '{}')
  t.match(after, { status: 200 }, 'the next request is answered once the peer behaves')
  if (c.goaway !== undefined) t.equal(pool.sessionsOpened, 2, 'on a fresh session')
  else t.equal(pool.sessionsOpened, 1, 'on the same session: only the long answers were refused')

  const grew = mem.stop()
  t.comment(`heap +${(grew.heap / MiB).toFixed(1)} MB, rss +${(grew.rss / MiB).toFixed(1)} MB`)
  t.ok(grew.heap < HEAP_BOUND, `heap growth ${(grew.heap / MiB).toFixed(1)} MB under ${HEAP_BOUND / MiB} MB`)
  t.ok(grew.rss < RSS_BOUND, `rss growth ${(grew.rss / MiB).toFixed(1)} MB under ${RSS_BOUND / MiB} MB`)
}

const malformed = cases.filter((c) => c.name.startsWith('malformed answer'))
for (const c of cases) if (!malformed.includes(c)) t.test(c.name, (t) => runCase(t, c))

// Each on its own peer and session, and quick: in parallel (their memory is watched together, under the same bounds).
t.test('malformed answers', (t) => {
  t.jobs = malformed.length
  for (const c of malformed) t.test(c.name, (t) => runCase(t, c))
  t.end()
})

t.test('a flood of SETTINGS ACKs the client never asked for is a protocol error, not work', async (t) => {
  const peer = await rawPeer(async (conn) => {
    await conn.handshake()
    await conn.flood(frameBytes(T.SETTINGS, ACK, 0), MiB)
  })
  t.teardown(() => peer.close())
  const pool = new H2Pool({ ca: testCa(), timeoutMs: 4_000 })
  t.teardown(() => pool.close())
  t.match(await pool.request(peer.url, { ':method': 'GET', ':path': '/' }), {
    failure: 'protocol',
    detail: /PROTOCOL_ERROR: SETTINGS ACK for nothing we sent/,
  })
})
