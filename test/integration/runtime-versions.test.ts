// Pombo on the Node runtimes users run, as far as this machine can show it: each runtime is fetched as an npm package
// (scripts/node-runtimes.mjs) and `pombo serve` is started on it. Where the system's glibc is older than 2.38 (this
// machine: Debian 12), Node 22 and 24 must be refused at once, in one line naming the runtime, the glibc and what to
// do, before anything connects; where it is newer, the current uWebSockets.js build must load. The whole suite on
// Node 22 and 24 against a current glibc runs with `npm run test:runtimes` (a Debian 13 root, docs/runtimes.md).
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { chooseUws, currentRuntime } from '../../src/http/uws'
import { startService } from '../helpers/service'

const ROOT = join(__dirname, '..', '..')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function run(node: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      node,
      args,
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

t.test('Node 22 and 24, fetched from the npm registry', async (t) => {
  const { nodeBinary, RUNTIMES } = await import('../../scripts/node-runtimes.mjs')
  const here = currentRuntime()
  for (const version of Object.values(RUNTIMES) as string[]) {
    await t.test(`Node ${version}`, async (t) => {
      const node = nodeBinary(version, (m: string) => t.comment(m))
      const v = await run(node, ['--version'])
      t.equal(v.stdout.trim(), `v${version}`, 'the fetched binary runs')
      const expected = chooseUws({ ...here, node: `v${version}` })
      // An unreachable database: a refusal must come before any connection is tried.
      const r = await run(node, ['bin/pombo', 'serve', '--roles', 'api'], {
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        REDIS_URL: 'redis://127.0.0.1:1',
        PM_PLATFORM_KEY: 'k'.repeat(32),
        PM_VAULT_KEY: 'a'.repeat(64),
        PORT: '0',
        PM_LOG_LEVEL: 'info',
      })
      if ('refusal' in expected) {
        t.equal(r.code, 2, 'refused with the CLI exit code')
        const lines = r.stderr.trim().split('\n')
        t.equal(lines.length, 1, 'in one line')
        t.equal(lines[0], `pombo: ${expected.refusal}`)
        t.match(lines[0], `v${version}`, 'naming the runtime')
        t.match(lines[0], `glibc ${here.glibc}`, 'naming the C library')
        t.notMatch(r.stdout, /starting/, 'before anything started')
      } else {
        // A current glibc: the build loads; the start then fails on the unreachable database, not on HTTP.
        t.notMatch(r.stderr, /cannot (serve HTTP|load)/, `${expected.build} loads`)
      }
    })
  }
})

t.test('this runtime: the build is chosen and logged at start', async (t) => {
  const expected = chooseUws(currentRuntime())
  if (!('build' in expected)) return t.fail(expected.refusal)
  const s = await startService(t)
  const line = s.logs.find((l) => l.msg === `HTTP server: ${expected.why}`)
  t.equal(line?.build, expected.build, 'logged with the build')
  t.equal((await s.call('GET', '/')).status, 200, 'and it serves')
})
