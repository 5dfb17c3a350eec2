// The webhook sender's connections and calls (src/confirmations/sender.ts): idle keep-alive connections are closed
// before servers close them, a call in flight is never cut by that, and a lost lease cancels the call in flight.
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { type Cancellable, WebhookSender } from '../../src/confirmations/sender'
import { testTls } from '../fakes/tls'
import { until } from '../helpers/until'

async function receiver(t: Test, answerAfterMs: number): Promise<{ url: string; server: Server }> {
  const tls = testTls()
  const server = createServer({ key: tls.key, cert: tls.cert, keepAlive: true, keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume()
    req.on('end', () => setTimeout(() => res.writeHead(200).end('{}'), answerAfterMs).unref())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server }
}

const attempt = (url: string) => ({ url, secret: 's', event: 'delivery.received', eventId: '1', body: Buffer.from('{}') })

t.test('an idle keep-alive connection is closed after idleMs; a call longer than idleMs is not cut', async (t) => {
  const rx = await receiver(t, 400)
  const sender = new WebhookSender({ timeoutMs: 5_000, allowPrivate: true, ca: testTls().caPem, maxSockets: 4, idleMs: 150 })
  t.teardown(() => sender.close())
  const r = await sender.send(attempt(rx.url))
  t.match(r, { ok: true, status: 200 }, 'the call outlived idleMs and was answered')
  t.equal(sender.openConnections, 1, 'its connection stays open for the next call')
  const again = await sender.send(attempt(rx.url))
  t.match(again, { ok: true }, 'and is reused')
  const closedAt = performance.now()
  await until('the idle connection is closed', () => sender.openConnections === 0, 3_000)
  t.ok(performance.now() - closedAt >= 100, 'not before it was idle for about idleMs')
})

t.test('a lost lease cancels the call in flight at once; the slot is cleared after each call', async (t) => {
  const rx = await receiver(t, 2_000)
  const sender = new WebhookSender({ timeoutMs: 5_000, allowPrivate: true, ca: testTls().caPem, maxSockets: 4 })
  t.teardown(() => sender.close())
  const call: Cancellable = { cancel: null }
  const started = performance.now()
  const pending = sender.send(attempt(rx.url), call)
  t.type(call.cancel, 'function', 'the call can be cancelled while in flight')
  setTimeout(() => call.cancel?.(), 100)
  const r = await pending
  t.match(r, { ok: false, result: 'network', reason: 'interrompida pelo despachante' })
  t.ok(performance.now() - started < 1_500, 'at once, not at the answer')
  t.equal(call.cancel, null, 'nothing is left to cancel')
})
