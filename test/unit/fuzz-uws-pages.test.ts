// The fuzzer's recognition of the pages the current uWebSockets.js build writes itself (test/fuzz/uws-pages.ts): only
// on that build, only for the request shapes measured to make them, only for the exact page, closed. Whether the
// builds really answer so is test/integration/uws-own-pages.test.ts (on Node 22 and 24: npm run test:runtimes).
import t from 'tap'
import { CURRENT_BUILD, NODE20_BUILD } from '../../src/http/uws'
import { isPage, UWS_MAX_HEAD_BYTES, UWS_PAGES, uwsPageFor } from '../fuzz/uws-pages'
import { headBytes, type WireAnswer, type WireRequest } from '../fuzz/wire'

const get = (target: Buffer | string, headers: Array<[string, string]> = []): WireRequest => ({
  method: 'GET',
  target: Buffer.isBuffer(target) ? target : Buffer.from(target),
  headers: headers.map(([k, v]): [string, Buffer] => [k, Buffer.from(v)]),
  body: null,
  transfer: 'length',
})
/** A GET of exactly `size` head bytes (one X-Pad header). */
const ofSize = (size: number): WireRequest => {
  const base = headBytes(get('/', [['X-Pad', '']])).length
  return get('/', [['X-Pad', 'p'.repeat(size - base)]])
}
const lines = (n: number): WireRequest =>
  get(
    '/',
    Array.from({ length: n - 1 }, (_, i): [string, string] => [`X-H${i}`, 'v']),
  )

t.test('the shapes that make the current build write its own page', async (t) => {
  for (const b of [0x00, 0x09, 0x0a, 0x1f, 0x20])
    t.equal(uwsPageFor(CURRENT_BUILD, get(Buffer.from([0x2f, 0x61, b, 0x62])))?.status, 505, `byte ${b} in the target`)
  for (const b of [0x7f, 0x80, 0xc3, 0xff, 0x25])
    t.equal(uwsPageFor(CURRENT_BUILD, get(Buffer.from([0x2f, 0x61, b, 0x62]))), null, `byte ${b} in the target reaches Pombo`)
  t.equal(uwsPageFor(CURRENT_BUILD, get(Buffer.from('/a\r\tb'))), null, 'a CR in the target: no page (the build waits)')
  t.equal(headBytes(ofSize(UWS_MAX_HEAD_BYTES)).length, UWS_MAX_HEAD_BYTES)
  t.equal(uwsPageFor(CURRENT_BUILD, ofSize(UWS_MAX_HEAD_BYTES)), null, 'a head of 4,096 bytes reaches Pombo')
  t.equal(uwsPageFor(CURRENT_BUILD, ofSize(UWS_MAX_HEAD_BYTES + 1))?.status, 431, 'a head of 4,097 bytes: 431')
  t.equal(uwsPageFor(CURRENT_BUILD, { ...ofSize(UWS_MAX_HEAD_BYTES + 1), transfer: 'split-head' })?.status, 431, 'also split')
  t.equal(uwsPageFor(CURRENT_BUILD, lines(98)), null, '98 header lines reach Pombo')
  t.equal(uwsPageFor(CURRENT_BUILD, lines(99))?.status, 431, '99 header lines: 431')
  t.equal(uwsPageFor(CURRENT_BUILD, get(`/a\t${'b'.repeat(6000)}`))?.status, 505, 'a bad target first, whatever the size')
  t.equal(uwsPageFor(CURRENT_BUILD, get('/api/v1/players?app_id=x')), null, 'an ordinary request reaches Pombo')
})

t.test('the Node 20 build writes none of them', async (t) => {
  for (const req of [get(Buffer.from('/a\tb')), ofSize(UWS_MAX_HEAD_BYTES + 1), lines(99)])
    t.equal(uwsPageFor(NODE20_BUILD, req), null)
})

t.test('only the exact page, closed, is taken for the build', async (t) => {
  const page = UWS_PAGES[431]
  const answer = (o: Partial<WireAnswer> = {}): WireAnswer => ({
    status: 431,
    headers: { connection: 'close' },
    head: page.head,
    body: Buffer.from(page.body),
    closed: true,
    hung: false,
    ms: 1,
    ...o,
  })
  t.ok(isPage(answer(), page), 'the page')
  t.notOk(isPage(answer(), UWS_PAGES[505]), 'not the other page')
  t.notOk(isPage(answer({ closed: false }), page), 'not when the connection stays open')
  t.notOk(isPage(answer({ head: `${page.head}\r\nX-Pm-Request-Id: r1` }), page), 'not with another header (Pombo writes several)')
  t.notOk(isPage(answer({ body: Buffer.from('{"errors":["x"]}') }), page), 'not with another body')
  t.notOk(isPage(answer({ status: 400, head: page.head.replace('431', '400') }), page), 'not with another status')
  t.notOk(isPage(answer({ status: null, head: '', body: Buffer.alloc(0) }), page), 'not without an answer')
})
