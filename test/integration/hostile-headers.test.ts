// The header limits of this uWebSockets.js build (measured, test/fuzz/README.md): at most 48
// header lines (Host included), and a head that arrives in more than one read must fit in 4,096 bytes. Legitimate
// traffic (a 2 KB Authorization, a proxy's 20 headers, heads split over reads) stays well inside and is answered;
// absurd headers may be refused by closing, and harm nobody else meanwhile.
import t from 'tap'
import { exchange, type WireRequest } from '../fuzz/wire'
import { startService } from '../helpers/service'

const PROXY_HEADERS: Array<[string, string]> = [
  ['X-Forwarded-For', '203.0.113.7, 198.51.100.23, 192.0.2.1'],
  ['X-Forwarded-Proto', 'https'],
  ['X-Forwarded-Host', 'api.example.com'],
  ['X-Forwarded-Port', '443'],
  ['X-Real-Ip', '203.0.113.7'],
  ['Forwarded', 'for=203.0.113.7;proto=https;by=198.51.100.23'],
  ['Via', '1.1 varnish (Varnish/7.4), 1.1 google'],
  ['X-Request-Id', 'f3b0c442-98fc-1c14-9afb-4c8996fb9242'],
  ['X-Amzn-Trace-Id', 'Root=1-67891233-abcdef012345678912345678'],
  ['Traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
  ['Tracestate', 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'],
  ['X-B3-TraceId', '463ac35c9f6413ad48485a3953bb6124'],
  ['X-B3-SpanId', 'a2fb4a1d1a96d312'],
  ['X-B3-Sampled', '1'],
  ['Cf-Connecting-Ip', '203.0.113.7'],
  ['Cf-Ray', '8c1a2b3c4d5e6f70-GRU'],
  ['True-Client-Ip', '203.0.113.7'],
  [
    'User-Agent',
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36',
  ],
  ['Accept', 'application/json, text/plain, */*'],
  ['Accept-Encoding', 'gzip, deflate, br'],
]

t.test('legitimate heads are answered: a 2 KB Authorization, 20 proxy headers, in one read or split over two', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const port = s.svc.api?.port as number
  const app = await s.createApp()
  // the spec, Authentication: Basic base64("anything:<KEY>"), the text before the colon ignored: a 2 KB credential.
  const auth = `Basic ${Buffer.from(`${'u'.repeat(1500)}:${app.api_key}`).toString('base64')}`
  t.ok(auth.length >= 2048, `the Authorization is ${auth.length} bytes`)
  const req = (transfer: WireRequest['transfer'], headers: Array<[string, string]>): WireRequest => ({
    method: 'GET',
    target: Buffer.from(`/api/v1/confirmacoes?app_id=${app.id}`),
    headers: [['Authorization', auth] as [string, string], ...headers].map(([k, v]): [string, Buffer] => [k, Buffer.from(v)]),
    body: null,
    transfer,
  })
  for (const transfer of ['length', 'split-head'] as const) {
    const r = await exchange(port, req(transfer, PROXY_HEADERS), 3000)
    t.equal(
      r.status,
      200,
      `2 KB Authorization + ${PROXY_HEADERS.length} proxy headers, ${transfer === 'length' ? 'one read' : 'two reads'}: 200 (got ${r.status})`,
    )
  }
  // 47 header lines with Host: one under this build's limit.
  const many = Array.from({ length: 45 }, (_, i): [string, string] => [`X-Trace-${i}`, `v${i}`])
  const r = await exchange(port, req('length', many), 3000)
  t.equal(r.status, 200, `47 header lines: 200 (got ${r.status})`)
  // A head of 4,000 bytes split over two reads: under the 4,096 bytes this build buffers.
  const pad: Array<[string, string]> = [['X-Pad', 'p'.repeat(4000 - 2200 - 200)]]
  const split = await exchange(port, req('split-head', pad), 3000)
  t.equal(split.status, 200, `a ~3.9 KB head in two reads: 200 (got ${split.status})`)
})

t.test('absurd heads are refused (or dropped) without harming anyone else', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const port = s.svc.api?.port as number
  const app = await s.createApp()
  const absurd = [
    exchange(
      port,
      {
        method: 'GET',
        target: Buffer.from('/'),
        headers: Array.from({ length: 100 }, (_, i): [string, Buffer] => [`X-H${i}`, Buffer.from('v')]),
        body: null,
        transfer: 'length',
      },
      1500,
    ),
    exchange(
      port,
      {
        method: 'GET',
        target: Buffer.from('/'),
        headers: [['X-Huge', Buffer.from('h'.repeat(8000))]],
        body: null,
        transfer: 'split-head',
      },
      1500,
    ),
  ]
  // Meanwhile another client's requests are served.
  for (let i = 0; i < 5; i++) {
    const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: `tok-${i}` } })
    t.equal(r.status, 200, `a registration during the absurd requests: 200 (got ${r.status})`)
  }
  const [count, huge] = await Promise.all(absurd)
  t.ok(
    count?.status === null || (count?.status as number) < 500,
    `100 headers: refused or dropped, never a 5xx (${count?.status ?? 'no answer'})`,
  )
  t.ok(
    huge?.status === null || (huge?.status as number) < 500,
    `8 KB head in two reads: refused or dropped (${huge?.status ?? 'no answer'})`,
  )
  // The head's two writes are 15 ms apart; a server whose loop was busy that long reads them as one, and a head in one
  // read may be larger (its limit is per read): then it is answered like any request.
  t.ok(
    huge?.closed || huge?.status === 200,
    `the 8 KB head split over reads is closed promptly, or answered when it reached the server in one read (${huge?.status ?? 'no answer'}, ${huge?.closed ? 'closed' : 'open'})`,
  )
  t.equal((await s.call('GET', '/')).status, 200, 'the service still answers')
})
