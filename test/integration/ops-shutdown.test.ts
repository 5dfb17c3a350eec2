// Shutdown as a load balancer sees it (src/main.ts): at SIGTERM /readyz turns 503 while a request is still in
// flight; the drain ends when that request ends, at PM_DRAIN_TIMEOUT_MS, or at a second signal.
import { connect, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { serveChild } from '../helpers/serve-child'

async function serve(t: Test, env: Record<string, string> = {}) {
  const p = await serveChild(t, { env })
  const port = p.port
  /** A request that never ends: its body is declared and never sent, so it stays in flight. */
  const hang = async (): Promise<Socket> => {
    const sock = connect(port, '127.0.0.1')
    sock.on('error', () => {})
    await new Promise((resolve) => sock.once('connect', resolve))
    sock.write('POST /api/v1/receipts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{')
    t.teardown(() => sock.destroy())
    // The child shows nothing of a request still reading its body (no in-flight count outside the process): a pause.
    await new Promise((r) => setTimeout(r, 200))
    return sock
  }
  return { ...p, hang }
}

t.test('SIGTERM: not ready at once while a request is in flight; the drain deadline ends it', async (t) => {
  const p = await serve(t, { PM_DRAIN_TIMEOUT_MS: '1500' })
  t.equal(await p.ready(), 200, 'ready')
  await p.hang()
  p.child.kill('SIGTERM')
  let status = 0
  for (let i = 0; i < 50 && status !== 503; i++) {
    status = await p.ready()
    if (status !== 503) await new Promise((r) => setTimeout(r, 20))
  }
  t.equal(status, 503, '/readyz answers 503 while draining')
  t.equal(p.child.exitCode, null, 'still draining')
  t.equal(await p.exited, 1, 'the deadline ended the drain')
  t.match(p.logs(), /stopping: finishing in-flight requests/)
  t.match(p.logs(), /drain deadline passed/)
})

t.test('a second SIGTERM ends the drain at once', async (t) => {
  const p = await serve(t, { PM_DRAIN_TIMEOUT_MS: '60000' })
  await p.hang()
  p.child.kill('SIGTERM')
  for (let i = 0; i < 50 && (await p.ready()) !== 503; i++) await new Promise((r) => setTimeout(r, 20))
  t.equal(p.child.exitCode, null, 'draining')
  p.child.kill('SIGTERM')
  t.equal(await p.exited, 1)
  t.match(p.logs(), /second signal: exiting without finishing the drain/)
})
