// Starts `pombo serve` as a child process on its own schema and Redis prefix, for benchmarks; stops and cleans up.
// Benchmarks run it compiled (runChildrenCompiled), as the image does; tests run the sources.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import Redis from 'ioredis'
import pg from 'pg'
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL } from '../../src/core/config'
import { pomboArgv } from '../../test/helpers/entry'
import { freePort } from '../../test/helpers/serve-child'

export const ROOT = join(__dirname, '..', '..')

let compiledChildren = false

/**
 * bench/run.ts builds dist/ and calls this: from then on the child processes (Pombo, baselines, fakes) run compiled,
 * as the image runs Pombo. Tests that start Pombo as a child (crash tests) never call it: they run the sources, compiled
 * once for the test run when `npm test` did (PM_TEST_DIST_MAIN), else through tsx.
 */
export function runChildrenCompiled(): void {
  compiledChildren = true
}

/** How a child runs `tsFile`: its compiled twin in dist/, or the source through tsx. */
export function childEntry(tsFile: string): { file: string; execArgv: string[] } {
  if (!compiledChildren) return { file: tsFile, execArgv: ['--import', 'tsx'] }
  const out = join(ROOT, 'dist', relative(ROOT, tsFile)).replace(/\.ts$/, '.js')
  if (!existsSync(out)) throw new Error(`${out} is missing: run \`npm run build\` (npm run bench does it first)`)
  return { file: out, execArgv: [] }
}
export const PLATFORM_KEY = 'pm_platform_bench_key'
export const DATABASE_URL = process.env.DATABASE_URL || DEFAULT_DATABASE_URL
export const REDIS_URL = process.env.REDIS_URL || DEFAULT_REDIS_URL

export interface Pombo {
  url: string
  port: number
  pid: number
  schema: string
  prefix: string
  child: ChildProcess
  createApp(body?: Record<string, unknown>): Promise<{ id: string; api_key: string; receipt_key: string }>
  stop(): Promise<void>
}

export async function waitFor(url: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    try {
      const r = await fetch(url)
      await r.arrayBuffer()
      return
    } catch {
      if (Date.now() > until) throw new Error(`${url} did not come up`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

export interface PomboOptions {
  /** Join a running deployment (its schema and Redis prefix): a second process of it, e.g. a worker. Its schema
   *  and keys are left alone on stop. */
  shared?: { schema: string; prefix: string }
  /** Where the child's stdout (its log) goes: default ignored; a file descriptor keeps it for a post-mortem. */
  stdout?: 'ignore' | 'inherit' | number
}

/** A process without the API role is ready once its delivery worker has joined `<prefix>:workers`; `said` is the
 *  end of what it wrote on stderr (its one-line reason when it exits). */
async function workerJoined(
  prefix: string,
  pid: number,
  child: ChildProcess,
  said: () => string,
  timeoutMs = 30_000,
): Promise<void> {
  const redis = new Redis(REDIS_URL)
  try {
    const until = Date.now() + timeoutMs
    for (;;) {
      const ids = await redis.zrange(`${prefix}:workers`, '0', '-1')
      if (ids.some((w) => w.includes(`:${pid}:`))) return
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`worker ${pid} exited (${child.exitCode ?? child.signalCode}): ${said().trim() || 'nothing on stderr'}`)
      if (Date.now() > until) throw new Error(`worker ${pid} did not join ${prefix}:workers`)
      await new Promise((r) => setTimeout(r, 50))
    }
  } finally {
    redis.disconnect()
  }
}

/** `env` is added to the child's environment: benchmarks name the settings they change (docs/spec/contract.md). */
export async function startPombo(
  port: number,
  env: Record<string, string> = {},
  roles = 'api',
  nodeArgs: string[] = [],
  o: PomboOptions = {},
): Promise<Pombo> {
  const id = randomBytes(4).toString('hex')
  const schema = o.shared?.schema ?? `bench_${id}`
  const prefix = o.shared?.prefix ?? `pmb_${id}`
  // Benchmarks run dist/; tests run `pombo` as every test does (test/helpers/entry.ts): the sources compiled once for
  // the run under `npm test`, else through tsx.
  const serve = ['serve', '--roles', roles]
  // BENCH_CPU_PROF=<dir>: each Pombo child writes a V8 CPU profile there when it stops (open it in Chrome's DevTools).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
  const argv = compiledChildren
    ? [...profile, ...nodeArgs, childEntry(join(ROOT, 'src', 'main.ts')).file, ...serve]
    : pomboArgv(serve, nodeArgs)
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    stdio: ['ignore', o.stdout ?? 'ignore', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL,
      REDIS_URL,
      PORT: String(port),
      PM_DASHBOARD_PORT: String(port + 1),
      PM_DB_SCHEMA: schema,
      PM_REDIS_PREFIX: prefix,
      PM_PLATFORM_KEY: PLATFORM_KEY,
      PM_VAULT_KEY: 'cd'.repeat(32),
      PM_LOG_LEVEL: 'warn',
      // The confirmation stream is off unless the scenario names a port (8082 would collide between processes).
      PM_GRPC_PORT: '0',
      // The operations port on a free port (9464 would collide between processes): metrics are measured as in a
      // deployment, where the port is on.
      PM_OPS_PORT: String(await freePort()),
      ...env,
    },
  })
  // stderr passes through as before, and its end is kept for the error of a process that exits while starting.
  let said = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk)
    said = (said + chunk.toString()).slice(-2000)
  })
  const url = `http://127.0.0.1:${port}`
  try {
    if (roles.split(',').includes('api')) await waitFor(`${url}/`)
    else await workerJoined(prefix, child.pid as number, child, () => said)
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  }
  return {
    url,
    port,
    pid: child.pid as number,
    schema,
    prefix,
    child,
    async createApp(body = {}) {
      const r = await fetch(`${url}/api/v1/apps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${PLATFORM_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ nome: 'bench', ...body }),
      })
      if (r.status !== 201) throw new Error(`createApp: ${r.status} ${await r.text()}`)
      return (await r.json()) as { id: string; api_key: string; receipt_key: string }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        await exited
      }
      if (o.shared) return
      const c = new pg.Client({ connectionString: DATABASE_URL })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await c.end()
      const redis = new Redis(REDIS_URL)
      const keys = await redis.keys(`${prefix}:*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    },
  }
}

/** Rows of a table in a benchmark's schema (durable rows counted after a round). */
export async function countRows(schema: string, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  try {
    const r = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${table}`)
    return r.rows[0]?.n ?? 0
  } finally {
    await c.end()
  }
}
