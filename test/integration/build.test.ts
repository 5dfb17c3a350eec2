// The compiled service (`npm run build`, what the image runs: node dist/src/main.js): it finds its migrations and
// package.json from dist/, applies the schema, serves GET / with the package's version, and stops on SIGTERM.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { freePort } from '../helpers/serve-child'
import { DATABASE_URL, PLATFORM_KEY, REDIS_URL, VAULT_KEY } from '../helpers/service'

const ROOT = join(__dirname, '..', '..')
const run = (file: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(process.execPath, [file, ...args], { cwd: ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  )

t.test('npm run build: the compiled service migrates and serves', async (t) => {
  const build = await run(join(ROOT, 'scripts', 'build.mjs'), [])
  t.equal(build.code, 0, `build: ${build.stderr}`)
  const schema = `build_${randomBytes(4).toString('hex')}`
  const db = new pg.Client({ connectionString: DATABASE_URL })
  await db.connect()
  t.teardown(async () => {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  })
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js'), 'serve', '--roles', 'api'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL,
      REDIS_URL,
      PORT: String(port),
      PM_DB_SCHEMA: schema,
      PM_REDIS_PREFIX: `pmt_${schema}`,
      PM_PLATFORM_KEY: PLATFORM_KEY,
      PM_VAULT_KEY: VAULT_KEY,
      PM_LOG_LEVEL: 'warn',
      PM_GRPC_PORT: '0',
      PM_OPS_PORT: '0',
    },
  })
  let stderr = ''
  child.stderr?.on('data', (c) => {
    stderr += c
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  let body: { servico?: string; versao?: string } = {}
  // Up to a minute for the first answer: the service migrates a new schema first, and CI's coverage-instrumented
  // children on a loaded machine once took longer than ten seconds (the loop ends at once if the process exits).
  for (let i = 0; i < 600; i++) {
    try {
      body = (await (await fetch(`http://127.0.0.1:${port}/`)).json()) as typeof body
      break
    } catch {
      if (child.exitCode !== null) break
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version
  t.match(body, { servico: 'pombo', versao: version }, `GET / from the compiled service (stderr: ${stderr})`)
  const migrations = await db
    .query(`SELECT count(*)::int AS n FROM ${schema}.schema_migrations`)
    .catch((e) => ({ rows: [{ n: String(e) }] }))
  const files = readdirSync(join(ROOT, 'src', 'db', 'migrations')).filter((f) => f.endsWith('.sql'))
  t.equal(migrations.rows[0]?.n, files.length, 'every migration applied from dist/')
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'stops cleanly on SIGTERM')
})
