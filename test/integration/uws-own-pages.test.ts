// The pages the current uWebSockets.js build writes itself, before any Pombo code runs (test/fuzz/uws-pages.ts,
// docs/runtimes.md), against the real service: for each request shape the fuzzer recognises, that build writes
// exactly its page and closes; for the shapes beside them (a head of 4,096 bytes, 98 header lines, DEL or 0xFF in
// the target) Pombo answers, with its request id. On Node 20 (the Node 20 build) no shape gets such a page: Pombo
// answers or the connection is dropped. `npm run test:runtimes` runs this file on Node 22 and 24.
import t from 'tap'
import { CURRENT_BUILD, loadUws } from '../../src/http/uws'
import { isPage, UWS_MAX_HEAD_BYTES, UWS_MAX_HEADER_LINES, uwsPageFor } from '../fuzz/uws-pages'
import { exchange, headBytes, type WireRequest } from '../fuzz/wire'
import { startService } from '../helpers/service'

t.test("the current build's own pages come exactly for the shapes the fuzzer recognises", async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const port = s.svc.api?.port as number
  const app = await s.createApp()
  const build = loadUws().choice.build
  const auth: [string, Buffer] = ['Authorization', Buffer.from(`Basic ${app.api_key}`)]
  const req = (target: Buffer | string, headers: Array<[string, Buffer]> = []): WireRequest => ({
    method: 'GET',
    target: Buffer.isBuffer(target) ? target : Buffer.from(target),
    headers: [auth, ...headers],
    body: null,
    transfer: 'length',
  })
  const confirmations = `/api/v1/confirmacoes?app_id=${app.id}`
  const ofSize = (size: number): WireRequest => {
    const base = headBytes(req(confirmations, [['X-Pad', Buffer.alloc(0)]])).length
    return req(confirmations, [['X-Pad', Buffer.alloc(size - base, 0x70)]])
  }
  const lines = (n: number): WireRequest =>
    req(
      confirmations,
      Array.from({ length: n - 2 }, (_, i): [string, Buffer] => [`X-H${i}`, Buffer.from('v')]),
    )
  const withByte = (b: number): WireRequest => req(Buffer.concat([Buffer.from(`${confirmations}&x=a`), Buffer.from([b])]))
  const shapes: Array<[string, WireRequest]> = [
    ['TAB in the query', withByte(0x09)],
    ['NUL in the query', withByte(0x00)],
    ['a space in the query', withByte(0x20)],
    ['TAB in a path parameter', req(Buffer.from(`/api/v1/players/a\tb?app_id=${app.id}`))],
    ['DEL in the query', withByte(0x7f)],
    ['0xFF in the query', withByte(0xff)],
    [`a head of ${UWS_MAX_HEAD_BYTES} bytes`, ofSize(UWS_MAX_HEAD_BYTES)],
    [`a head of ${UWS_MAX_HEAD_BYTES + 1} bytes`, ofSize(UWS_MAX_HEAD_BYTES + 1)],
    [`a head of ${UWS_MAX_HEAD_BYTES} bytes in two reads`, { ...ofSize(UWS_MAX_HEAD_BYTES), transfer: 'split-head' }],
    [`a head of ${UWS_MAX_HEAD_BYTES + 1} bytes in two reads`, { ...ofSize(UWS_MAX_HEAD_BYTES + 1), transfer: 'split-head' }],
    ['a 6 KB head in two reads', { ...ofSize(6000), transfer: 'split-head' }],
    [`${UWS_MAX_HEADER_LINES} header lines`, lines(UWS_MAX_HEADER_LINES)],
    [`${UWS_MAX_HEADER_LINES + 1} header lines`, lines(UWS_MAX_HEADER_LINES + 1)],
  ]
  let pages = 0
  const answers = await Promise.all(shapes.map(([, r]) => exchange(port, r, 1500)))
  for (const [i, [what, r]] of shapes.entries()) {
    const a = answers[i]
    if (!a) continue
    const page = uwsPageFor(build, r)
    const got = `${a.status ?? (a.closed ? 'closed' : 'none')} ${JSON.stringify(a.head.split('\r\n')[0] ?? '')}`
    if (page) {
      pages++
      t.ok(isPage(a, page), `${what}: the build's own ${page.status} page, then closed (got ${got})`)
    } else if (build === CURRENT_BUILD) {
      t.ok(a.status !== null && a.headers['x-pm-request-id'], `${what}: Pombo's answer (got ${got})`)
    } else {
      // The Node 20 build drops what it will not take (docs/runtimes.md); whatever is answered is Pombo's.
      t.ok(a.status === null || a.headers['x-pm-request-id'], `${what}: Pombo's answer or none (got ${got})`)
    }
  }
  t.equal(pages, build === CURRENT_BUILD ? 8 : 0, `${build}: shapes answered by the build itself`)
  t.equal((await s.call('GET', '/')).status, 200, 'the service still answers')
})
