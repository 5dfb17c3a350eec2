// tap's error domains as the test processes run them (test/helpers/tap-domain.cjs, installed by children.mjs in place
// of the async-hook-domain package): a fixture of errors thrown from where tests started work (a timer, a promise
// chain, a socket callback in a nested test, a timer outliving its test) is run as a tap process of its own, once
// with the replacement and once with the package, and each error must fail the test it came from (or, once its test
// has ended, the nearest one still running), the others still run, and both give the same report.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'

const ROOT = join(__dirname, '..', '..')
const FIXTURE = join('test', 'fixtures', 'tap-domain', 'errors.ts')

function runFixture(domain: 'package' | 'replacement'): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PM_TEST_TAP_DOMAIN: domain === 'package' ? 'package' : '' }
  // The fixture reports as a root tap process, not as a child of this one, and records no coverage.
  for (const k of Object.keys(env)) if (/^(TAP|_TAPJS|NODE_OPTIONS$|NODE_V8_COVERAGE$)/.test(k)) delete env[k]
  return new Promise((done) =>
    execFile(
      process.execPath,
      ['--import=tsx', '--import=./test/helpers/children.mjs', FIXTURE],
      { cwd: ROOT, env, timeout: 60_000 },
      (err, stdout) => done({ code: err ? ((err as { code?: number }).code ?? null) : 0, out: stdout }),
    ),
  )
}

/** The report without its timings. */
const untimed = (out: string) => out.replace(/(^| )# time=[\d.]+ms/gm, '')

t.test('each error fails the test that started its work; later tests still run; same report as the package', async (t) => {
  const [run, theirs] = await Promise.all([runFixture('replacement'), runFixture('package')])
  t.equal(run.code, 1, 'the run fails')
  const mine = { out: untimed(run.out) }
  t.match(mine.out, /# Subtest: a throw from a timer the test started\n {4}not ok 1 - thrown from a timer\n/)
  t.match(mine.out, /tapCaught: uncaughtException/)
  t.match(
    mine.out,
    /# Subtest: a rejection nobody handles, from a promise chain the test started\n {4}not ok 1 - rejected in a chain\n[\s\S]*?tapCaught: unhandledRejection/,
  )
  t.match(
    mine.out,
    / {4}# Subtest: inner\n {8}not ok 1 - thrown from a socket callback\n/,
    'the nested test fails, not its parent directly',
  )
  t.match(mine.out, /\nok 4 - a test after them passes\n/, 'a later test runs and passes')
  t.match(mine.out, /\nok 5 - a timer outliving its test\n/, 'a test that ended before its timer threw passed')
  t.match(mine.out, /\nnot ok 7 - thrown after its test ended\n[\s\S]*?test: TAP\n/, 'that throw goes to the root test')
  t.match(mine.out, /# \{ total: 7, pass: 3, fail: 4 \}/)
  t.equal(mine.out, untimed(theirs.out), 'the same report as with async-hook-domain')
})
