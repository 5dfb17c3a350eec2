// Runs the real `pombo` entry point as a child process against a test service's namespace (schema + Redis prefix).
import { type ChildProcess, execFile } from 'node:child_process'
import type { Test } from 'tap'
import { pomboArgv } from './entry'
import { DATABASE_URL, REDIS_URL, TEST_SCRYPT_N, type TestService, VAULT_KEY } from './service'

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The environment a `pombo` child gets: the service's schema, prefix and Redis (cluster or not), its vault key, no
 *  platform key; `env` on top. */
export function cliEnv(s: TestService, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL,
    REDIS_URL,
    // The CLI talks to the Redis the service uses: the cluster's seeds when it is on one, none otherwise.
    REDIS_CLUSTER_NODES: s.cfg.redisClusterNodes?.map((n) => `${n.host}:${n.port}`).join(',') ?? '',
    PM_DB_SCHEMA: s.cfg.dbSchema,
    PM_REDIS_PREFIX: s.cfg.redisPrefix,
    PM_VAULT_KEY: VAULT_KEY,
    PM_PLATFORM_KEY: '',
    // The password cost the service uses (a bare namespace has the tests' own): `pombo user create` hashes as the
    // dashboard will verify.
    PM_DASHBOARD_SCRYPT_N: String(s.cfg.dashboard?.scryptN ?? TEST_SCRYPT_N),
    ...env,
  }
}

/** At most this many `pombo` children of a test process run at once: a test that starts many side by side (a list
 *  of refusals) has the rest wait their turn instead of crowding two cores. */
const AT_ONCE = 4
let running = 0
const queued: Array<() => void> = []

async function turn<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= AT_ONCE) await new Promise<void>((resolve) => queued.push(resolve))
  running++
  try {
    return await fn()
  } finally {
    running--
    queued.shift()?.()
  }
}

/** `pombo <args>` against the service's namespace; `input` is written to its standard input (then closed). */
export function pombo(s: TestService, args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  return turn(() => run(s, args, env, input))
}

/** `pombo <args>` as a process the test can signal (a run that lasts until told to stop); not queued. */
export function pomboProcess(s: TestService, args: string[], env: Record<string, string> = {}): Started {
  return start(s, args, env)
}

export interface Started {
  child: ChildProcess
  done: Promise<Run>
}

function start(s: TestService, args: string[], env: Record<string, string>, input?: string): Started {
  let child: ChildProcess | undefined
  const done = new Promise<Run>((resolve) => {
    child = execFile(process.execPath, pomboArgv(args), { env: cliEnv(s, env) }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
    if (input !== undefined) child.stdin?.end(input)
  })
  return { child: child as ChildProcess, done }
}

const run = (s: TestService, args: string[], env: Record<string, string>, input?: string): Promise<Run> =>
  start(s, args, env, input).done

/** Refusals started side by side (each a process of its own; a refusal writes nothing), checked in order. */
export async function allRefused(t: Test, cases: Array<[Promise<Run>, RegExp]>): Promise<void> {
  for (const [run, pattern] of cases) oneLineFailure(t, await run, pattern)
}

/** docs/spec/contract.md: bad input exits non-zero (2) with a one-line reason. */
export function oneLineFailure(t: Test, r: Run, pattern: RegExp): void {
  t.equal(r.code, 2, 'exits 2')
  t.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr.trim()}`)
  t.match(r.stderr, pattern)
  t.equal(r.stdout, '', 'prints nothing on stdout')
}
