// The keep-alive HTTP/1.1 client (src/http/client.ts) that `pombo simulate`'s fleet and the tests call the service
// with: what it sends and reads, its fetch-shaped face for the device SDK, one connection kept for calls in turn, a
// kept-alive connection the server dropped as it was reused tried once more, an aborted call not tried again, https.
import http from 'node:http'
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import t, { type Test as Tap } from 'tap'
import { httpClient } from '../../src/http/client'
import { testTls } from '../fakes/tls'

async function listen(t: Tap, server: net.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return (server.address() as AddressInfo).port
}

t.test('sends the method, headers and body; reads the status, headers and text, through fetch’s face too', async (t) => {
  const seen: Array<{ method?: string; headers: http.IncomingHttpHeaders; body: string }> = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', () => {
      seen.push({ method: req.method, headers: req.headers, body })
      res.writeHead(req.url === '/missing' ? 404 : 201, { 'x-answer': 'yes', 'content-type': 'application/json' })
      res.end(JSON.stringify({ got: body }))
    })
  })
  const port = await listen(t, server)
  const client = httpClient()
  t.teardown(() => client.close())
  const r = await client.request(`http://127.0.0.1:${port}/a`, {
    method: 'POST',
    headers: { 'x-mine': 'ola' },
    body: '{"n":"ção"}',
  })
  t.equal(r.status, 201)
  t.equal(r.headers.get('X-Answer'), 'yes', 'headers read case-insensitively')
  t.same(JSON.parse(r.text), { got: '{"n":"ção"}' })
  t.match(seen[0], { method: 'POST', body: '{"n":"ção"}', headers: { 'x-mine': 'ola', 'content-length': '13' } })

  const f = await client.fetch(`http://127.0.0.1:${port}/missing`, { method: 'GET', headers: { accept: 'application/json' } })
  t.equal(f.status, 404)
  t.equal(f.ok, false)
  t.equal(f.headers.get('content-type'), 'application/json')
  t.same(await f.json(), { got: '' })
  const g = await client.fetch(`http://127.0.0.1:${port}/b`, { method: 'PUT', body: 'x' })
  t.equal(g.ok, true)
  t.equal(await g.text(), '{"got":"x"}')
  t.equal(seen[2]?.method, 'PUT')
})

t.test('calls in turn share one kept-alive connection', async (t) => {
  let connections = 0
  const server = http.createServer((_req, res) => res.end('ok'))
  server.on('connection', () => connections++)
  const port = await listen(t, server)
  const client = httpClient()
  t.teardown(() => client.close())
  for (let i = 0; i < 5; i++) t.equal((await client.request(`http://127.0.0.1:${port}/`)).text, 'ok')
  t.equal(connections, 1)
})

t.test('a kept-alive connection dropped as it is reused: the call is made again on a new one', async (t) => {
  // Answers the first request of each connection and keeps it open; a second request on it is dropped unanswered.
  let connections = 0
  const server = net.createServer((socket) => {
    connections++
    let requests = 0
    socket.on('data', (chunk) => {
      if (!chunk.toString().includes('\r\n\r\n')) return
      if (++requests > 1) return socket.resetAndDestroy()
      socket.write('HTTP/1.1 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\nok')
    })
    socket.on('error', () => {})
  })
  const port = await listen(t, server)
  const client = httpClient()
  t.teardown(() => client.close())
  t.equal((await client.request(`http://127.0.0.1:${port}/`)).text, 'ok')
  t.equal((await client.request(`http://127.0.0.1:${port}/`)).text, 'ok', 'the second call answered')
  t.equal(connections, 2, 'on a second connection')
})

t.test('an aborted call fails with the signal’s reason and is not made again', async (t) => {
  let requests = 0
  const server = http.createServer(() => {
    requests++ // never answers
  })
  const port = await listen(t, server)
  const client = httpClient()
  t.teardown(() => client.close())
  const ctl = new AbortController()
  const call = client.fetch(`http://127.0.0.1:${port}/`, { signal: ctl.signal })
  setTimeout(() => ctl.abort(), 50)
  await t.rejects(call, { name: 'AbortError' })
  const already = new AbortController()
  already.abort()
  await t.rejects(client.request(`http://127.0.0.1:${port}/`, { signal: already.signal }), { name: 'AbortError' })
  t.equal(requests, 1, 'the aborted one reached the server once; the one aborted before it never did')
})

t.test('https, with the certificates it is given to trust', async (t) => {
  const tls = testTls()
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (_req, res) => res.end('secure'))
  const port = await listen(t, server)
  const client = httpClient({ ca: tls.caPem })
  t.teardown(() => client.close())
  t.equal((await client.request(`https://localhost:${port}/`)).text, 'secure')
  // Unless the process was started trusting the test CA itself.
  if (process.env.NODE_EXTRA_CA_CERTS === tls.caFile) return
  const untrusting = httpClient()
  t.teardown(() => untrusting.close())
  await t.rejects(untrusting.request(`https://localhost:${port}/`), 'a certificate it was not told to trust is refused')
})
