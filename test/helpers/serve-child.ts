// Runs the real `pombo serve` (the working tree's sources, started as test/helpers/entry.ts says) as a child process
// in its own schema and Redis prefix, on free ports, with its output captured: for what only a whole process shows
// (signals, shutdown, the process policy).
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import type { Test } from 'tap'
import { pomboArgv } from './entry'
import { DATABASE_URL, PLATFORM_KEY, REDIS_URL, TEST_SCRYPT_N, VAULT_KEY } from './service'

const ROOT = join(__dirname, '..', '..')

/** Ports handed out by this process: never twice. */
const handedOut = new Set<number>()

/**
 * A port free now, for a child to listen on later. Drawn below the kernel's ephemeral range (32768 and up on Linux),
 * which is where every port-0 listener (the in-process test services, the fakes) and every outgoing connection gets
 * its port: a port asked of the kernel and closed again could be handed to one of them before the child binds it
 * (seen under load: npm start's embedded Postgres found another server on its port, seconds after it was chosen).
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (handedOut.has(port)) continue
    const s = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false))
      s.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (!bound) continue
    await new Promise((resolve) => s.close(resolve))
    handedOut.add(port)
    return port
  }
  throw new Error('no free port between 20000 and 32000')
}

export interface ServeChild {
  child: ChildProcess
  port: number
  opsPort: number
  exited: Promise<number | null>
  /** Everything the process wrote (stdout and stderr). */
  logs(): string
  /** GET / answers 200. */
  up(): Promise<boolean>
  /** The status of /readyz on the operations port (0 when nothing answers). */
  ready(): Promise<number>
  schema: string
  prefix: string
}

/** Starts `pombo serve --roles api` (or the roles given; extra env and node flags given) and waits until /readyz
 *  answers 200. */
export async function serveChild(
  t: Test,
  o: { env?: Record<string, string>; nodeArgs?: string[]; roles?: string } = {},
): Promise<ServeChild> {
  const schema = `sc_${randomBytes(4).toString('hex')}`
  t.teardown(async () => {
    const db = new pg.Client({ connectionString: DATABASE_URL })
    await db.connect()
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  const port = await freePort()
  const opsPort = await freePort()
  const child = spawn(process.execPath, pomboArgv(['serve', '--roles', o.roles ?? 'api'], o.nodeArgs), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL,
      REDIS_URL,
      PORT: String(port),
      PM_DASHBOARD_PORT: String(await freePort()),
      PM_OPS_PORT: String(opsPort),
      // Tests read /metrics right after what they measure: every scrape computes (a test of the cache sets it).
      PM_OPS_METRICS_CACHE_MS: '0',
      PM_GRPC_PORT: '0',
      PM_DB_SCHEMA: schema,
      PM_REDIS_PREFIX: `pmt_${schema}`,
      PM_PLATFORM_KEY: PLATFORM_KEY,
      PM_VAULT_KEY: VAULT_KEY,
      PM_DASHBOARD_SCRYPT_N: TEST_SCRYPT_N,
      ...o.env,
    },
  })
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
  const up = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/`)).status === 200
    } catch {
      return false
    }
  }
  const ready = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status
    } catch {
      return 0
    }
  }
  for (let i = 0; i < 200 && child.exitCode === null && (await ready()) !== 200; i++) await new Promise((r) => setTimeout(r, 100))
  return { child, port, opsPort, exited, logs: () => out, up, ready, schema, prefix: `pmt_${schema}` }
}
