// Shutdown as a load balancer sees it (src/main.ts): at SIGTERM /readyz turns 503 while a request is still in
// flight; the drain ends when that request ends, at PM_DRAIN_TIMEOUT_MS, or at a second signal.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { DATABASE_URL, PLATFORM_KEY, REDIS_URL, VAULT_KEY } from '../helpers/service'

const ROOT = join(__dirname, '..', '..')

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise((resolve) => s.close(resolve))
  return port
}

async function serve(t: Test, env: Record<string, string> = {}) {
  const schema = `ops_${randomBytes(4).toString('hex')}`
  t.teardown(async () => {
    const db = new pg.Client({ connectionString: DATABASE_URL })
    await db.connect()
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  const port = await freePort()
  const opsPort = await freePort()
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'serve', '--roles', 'api'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        PORT: String(port),
        PM_OPS_PORT: String(opsPort),
        PM_GRPC_PORT: '0',
        PM_DB_SCHEMA: schema,
        PM_REDIS_PREFIX: `pmt_${schema}`,
        PM_PLATFORM_KEY: PLATFORM_KEY,
        PM_VAULT_KEY: VAULT_KEY,
        ...env,
      },
    },
  )
  let out = ''
  child.stdout?.on('data', (c) => {
    out += c
  })
  child.stderr?.on('data', (c) => {
    out += c
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  const ready = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status
    } catch {
      return 0
    }
  }
  for (let i = 0; i < 200 && (await ready()) !== 200; i++) await new Promise((r) => setTimeout(r, 100))
  /** A request that never ends: its body is declared and never sent, so it stays in flight. */
  const hang = async (): Promise<Socket> => {
    const sock = connect(port, '127.0.0.1')
    sock.on('error', () => {})
    await new Promise((resolve) => sock.once('connect', resolve))
    sock.write('POST /api/v1/receipts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{')
    t.teardown(() => sock.destroy())
    await new Promise((r) => setTimeout(r, 200))
    return sock
  }
  return { child, exited, ready, hang, logs: () => out }
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
