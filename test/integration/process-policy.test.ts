// The process's policy for bugs that escape every request boundary (src/main.ts): an unhandled rejection is logged
// with context and the process serves on; an uncaught exception is logged, the process drains and exits 1.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { DATABASE_URL, PLATFORM_KEY, REDIS_URL, VAULT_KEY } from '../helpers/service'

const ROOT = join(__dirname, '..', '..')

async function serve(t: Test, kind: string) {
  const schema = `pp_${randomBytes(4).toString('hex')}`
  t.teardown(async () => {
    const db = new pg.Client({ connectionString: DATABASE_URL })
    await db.connect()
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', join(ROOT, 'test', 'fixtures', 'misbehave.mjs'), join(ROOT, 'src', 'main.ts'), 'serve', '--roles', 'api'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        PORT: String(port),
        PM_DB_SCHEMA: schema,
        PM_REDIS_PREFIX: `pmt_${schema}`,
        PM_PLATFORM_KEY: PLATFORM_KEY,
        PM_VAULT_KEY: VAULT_KEY,
        PM_TEST_MISBEHAVE: kind,
        PM_OPS_PORT: '0',
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
  const up = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/`)).status === 200
    } catch {
      return false
    }
  }
  for (let i = 0; i < 100 && !(await up()); i++) await new Promise((r) => setTimeout(r, 100))
  return { child, exited, up, logs: () => out }
}

t.test('an unhandled rejection is logged and the process serves on', async (t) => {
  const p = await serve(t, 'rejection')
  t.ok(await p.up(), 'serving')
  for (let i = 0; i < 50 && !p.logs().includes('unhandled promise rejection'); i++) await new Promise((r) => setTimeout(r, 100))
  t.match(p.logs(), /unhandled promise rejection.*a promise nobody awaited|a promise nobody awaited.*unhandled promise rejection/s)
  t.ok(await p.up(), 'still serving after it')
  t.equal(p.child.exitCode, null, 'still running')
  p.child.kill('SIGTERM')
  t.equal(await p.exited, 0)
})

t.test('an uncaught exception is logged; the process drains and exits 1 for its supervisor', async (t) => {
  const p = await serve(t, 'exception')
  t.equal(await p.exited, 1, 'exit code 1')
  t.match(p.logs(), /uncaught exception/)
  t.match(p.logs(), /a throw outside any request/)
  t.match(p.logs(), /stopping: finishing in-flight requests/, 'drained first')
})
