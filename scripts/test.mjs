// `npm test`: the two tiers in one tap run, with coverage checked against its floor (scripts/coverage.mjs).
//   unit         test/unit: no Postgres, no Redis, none started; a test that reaches for one stops with a message
//                (scripts/no-services.mjs). The whole tier runs in two processes (test/tiers); files named on the
//                command line run one process each. `npm run test:unit`.
//   integration  every other test file, against Postgres and Redis (see ensureTestServices) and a throw-away
//                3-master Redis Cluster (scripts/redis-cluster.mjs), with DATABASE_URL, REDIS_URL and
//                PM_TEST_REDIS_CLUSTER_NODES set, and the Redis-bound suites (CLUSTER_SUITES) a second time with
//                every service on the cluster (PM_TEST_REDIS=cluster). A full run starts most files inside a few
//                shards, long-lived processes that import their share, and the rest in processes of their own
//                (scripts/test-tiers.mjs says which and why). Chromium, PgBouncer and Docker Compose are
//                installed first when the files to run drive them (scripts/test-tools.mjs). Test services take
//                migrated schemas from the run's pool and empty them back into it (test/helpers/schema-pool.ts;
//                PM_TEST_SCHEMA_POOL=0: each migrates its own and drops it). Tests that start `pombo`
//                as a child start src/ compiled once for the run (scripts/test-dist.mjs), without tap's process-info
//                loader unless coverage is recorded (test/helpers/children.mjs). `npm run test:integration`.
// Test processes compile their TypeScript with test/helpers/ts-loader.cjs (esbuild, cached in .cache/ts-loader by
// content; entries over a week old are pruned here), not tsx: about a tenth of their CPU. When tap records coverage
// they run tsx (test/helpers/ts-loader.mjs says why).
// tap loads only the plugins the tests use (package.json "tap"."plugin"): each test file's process starts in about
// half the time it took with all of them. Its per-test error domains run on an AsyncLocalStorage instead of
// async-hook-domain's destroy hooks (test/helpers/tap-domain.cjs, put in place by test/helpers/children.mjs).
// PM_TEST_PROFILE=<file> records each test process's wall time, CPU (its own and its children's) and test services
// started (a shard is one line); `node scripts/test-profile.mjs <file>` prints them heaviest first (test/helpers/children.mjs).
// Extra arguments go to tap:
//   npm test -- test/unit/foo.test.ts                       (unit files only: run as the unit tier, no services)
//   npm test -- test/integration/delivery.test.ts           (any other file: with the services)
//   npm test -- --redis-cluster test/integration/delivery.test.ts   (those files, every service on the cluster)
// The machine's shared Postgres/Redis are left running; an embedded fallback and the cluster started here are
// stopped when tap is done.

import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildSdk } from './build-sdk.mjs'
import { checkCoverage, coverageArgs, coverageWanted, keepCoverage, resetCoverage } from './coverage.mjs'
import { ensureTestServices, REPO_ROOT, stopAllServices } from './local-services.mjs'
import { redactUrl } from './redact-url.mjs'
import { startRedisCluster } from './redis-cluster.mjs'
import { closeSchemaPool, openSchemaPool, vacuumWhileRunning } from './test-schema-pool.mjs'
import { ensureTapPlugins } from './tap-plugins.mjs'
import { buildTestDist } from './test-dist.mjs'
import { ALONE, CLUSTER_SUITES, integrationFiles, SERVICE_ENV, SLOW, shardEntries, UNIT_DIR } from './test-tiers.mjs'
import { ensureTestTools, toolsFor } from './test-tools.mjs'

/** Environment a unit-tier process never sees: the services' addresses. */

const log = (msg) => console.error(`[pombo test] ${msg}`)

let tap = null
let interrupted = null
let cluster = null
/** The sources compiled for this run's children; removed at the very end (the coverage report reads their maps). */
let testDist = null

const stopCluster = () => (cluster ? cluster.stop().catch(() => {}) : Promise.resolve())
const exitCode = () => (interrupted === 'SIGINT' ? 130 : 143)

function forward(signal) {
  if (tap && tap.exitCode === null && tap.signalCode === null) {
    interrupted = signal
    tap.kill(signal)
  } else if (!interrupted) {
    interrupted = signal
    Promise.all([stopAllServices(), stopCluster()]).finally(() => {
      testDist?.remove()
      process.exit(exitCode())
    })
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward)

function runTap(args, env) {
  const localTap = path.join(REPO_ROOT, 'node_modules', '.bin', 'tap')
  const [cmd, pre] = existsSync(localTap) ? [localTap, []] : ['npx', ['--no-install', 'tap']]
  return new Promise((resolve) => {
    tap = spawn(cmd, [...pre, ...args], { cwd: REPO_ROOT, stdio: 'inherit', env })
    tap.on('error', (err) => {
      log(`could not run tap: ${err.message}`)
      resolve(1)
    })
    tap.on('exit', (code, signal) => {
      const signals = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }
      resolve(code ?? 128 + (signals[signal] ?? 1))
    })
  })
}

/**
 * What a full integration run gives tap (`jobs` at a time): the shards and the files that keep a process of their own
 * (scripts/test-tiers.mjs). tap starts them in the order of their paths, not this one: the files alone, the cluster
 * shard, the small-file shards, then the slow shards as slots free up. `node scripts/test-profile.mjs` draws the
 * run's timeline. Every entry at once (17 jobs) was tried: the slowest shard stretched to 218 s under contention,
 * against 197-201 s for the whole tier with 8; the machine is about 90% busy either way.
 */
function fullIntegrationRun() {
  const all = new Set(integrationFiles())
  const missing = [...SLOW, ...ALONE].filter((f) => !all.has(f))
  if (missing.length) throw new Error(`scripts/test-tiers.mjs names files that do not exist: ${missing.join(' ')}`)
  return [...shardEntries('slow'), ...shardEntries('integration'), ...shardEntries('cluster'), ...ALONE]
}

/** The test processes' compiled TypeScript (test/helpers/ts-compile.cjs) made more than a week ago: a file still in
 *  use is compiled again once; the rest (sources since changed) would only pile up. */
function pruneCompiled() {
  const dir = path.join(REPO_ROOT, '.cache', 'ts-loader')
  if (!existsSync(dir)) return
  const before = Date.now() - 7 * 24 * 3_600_000
  for (const f of readdirSync(dir)) {
    const p = path.join(dir, f)
    if ((statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < before) rmSync(p, { force: true })
  }
}

const isUnitFile = (f) => path.relative(path.join(REPO_ROOT, UNIT_DIR), path.resolve(REPO_ROOT, f)).split(path.sep)[0] !== '..'

/** The unit tier: `files` (default test/unit) with the services out of reach. */
function unitTier(files, flags) {
  const env = { ...process.env }
  for (const k of SERVICE_ENV) delete env[k]
  const guard = `--import=${pathToFileURL(path.join(REPO_ROOT, 'scripts', 'no-services.mjs')).href}`
  env.NODE_OPTIONS = [env.NODE_OPTIONS, guard].filter(Boolean).join(' ')
  log(
    `unit tier: ${files.length ? files.join(' ') : `${UNIT_DIR}/ in ${shardEntries('unit').length} processes`} (no Postgres, no Redis)`,
  )
  return runTap([...flags, ...(files.length ? files : shardEntries('unit'))], env)
}

/** The integration tier: `files` (default every test file outside test/unit, and CLUSTER_SUITES on the cluster). */
async function integrationTier(files, flags, { onCluster, full, withUnit = false }) {
  // Chromium, PgBouncer and Compose for the files that drive them (scripts/test-tools.mjs), before any service.
  ensureTestTools(toolsFor(full ? null : files), { log })
  const { DATABASE_URL, REDIS_URL, stop } = await ensureTestServices({ log })
  if (interrupted) return 1
  log(`DATABASE_URL=${redactUrl(DATABASE_URL)} REDIS_URL=${redactUrl(REDIS_URL)}`)
  const env = { ...process.env, DATABASE_URL, REDIS_URL }
  // Test services take migrated schemas from the run's pool and empty them back into it (test/helpers/schema-pool.ts).
  let pool = null
  let stopVacuum = () => {}
  if (process.env.PM_TEST_SCHEMA_POOL !== '0') {
    pool = await openSchemaPool(DATABASE_URL, log)
    env.PM_TEST_SCHEMA_POOL = pool
    stopVacuum = vacuumWhileRunning(DATABASE_URL, log)
  }
  // Children that run `pombo` start the sources compiled once for this run (test/helpers/entry.ts); PM_TEST_DIST=0
  // has them run src/ through tsx instead.
  if (process.env.PM_TEST_DIST !== '0' && !env.PM_TEST_DIST_MAIN) {
    testDist = await buildTestDist()
    env.PM_TEST_DIST_MAIN = testDist.main
  }
  // Started once for the run (about 2 s) when something will use it; files run alone start their own.
  if (!env.PM_TEST_REDIS_CLUSTER_NODES && (full || onCluster || files.some((f) => /cluster/.test(f)))) {
    cluster = await startRedisCluster({ log })
    env.PM_TEST_REDIS_CLUSTER_NODES = cluster.nodes
  }
  const clusterEnv = { ...env, PM_TEST_REDIS: 'cluster' }
  let code
  if (onCluster) {
    code = await runTap([...flags, ...(full ? CLUSTER_SUITES : files)], clusterEnv)
  } else {
    if (full) {
      log(
        `${integrationFiles().length} files: ${SLOW.length} slow ones in ${shardEntries('slow').length} shards, ` +
          `${ALONE.length} alone, the others in ${shardEntries('integration').length} shards; ` +
          `and the Redis-bound suites again in one more, every service on the Redis Cluster (${env.PM_TEST_REDIS_CLUSTER_NODES})`,
      )
    }
    if (withUnit)
      log(`unit tier: ${UNIT_DIR}/ in ${shardEntries('unit').length} more shards of the same run (no Postgres, no Redis)`)
    code = await runTap([...flags, ...(full ? fullIntegrationRun() : files), ...(withUnit ? shardEntries('unit') : [])], env)
  }
  stopVacuum()
  await keepCoverage()
  if (pool)
    await closeSchemaPool(DATABASE_URL, pool, log).catch((err) => log(`while dropping the run's test schemas: ${err.message}`))
  await stopCluster()
  await stop().catch((err) => log(`while stopping services: ${err.message}`))
  return code
}

async function main() {
  // The tests import '@pombo/sdk' through its package exports (packages/sdk/dist).
  buildSdk()
  pruneCompiled()
  // Not when coverage is recorded (CI): its runs keep the set a fresh install has, as when the floors were set (a
  // change to coverage's figures is not risked on a speed-up of a local run).
  if (!coverageWanted()) await ensureTapPlugins(log)
  // One certificate for the provider simulators of the whole run (test/fakes/tls.ts): the first process that needs it
  // makes it with openssl, the others read it, instead of each making its own (several openssl runs a process).
  if (!process.env.PM_TEST_TLS_DIR) {
    const tlsDir = mkdtempSync(path.join(tmpdir(), 'pombo-test-tls-'))
    process.env.PM_TEST_TLS_DIR = tlsDir
    process.once('exit', () => rmSync(tlsDir, { recursive: true, force: true }))
  }
  const argv = process.argv.slice(2)
  const onCluster = argv.includes('--redis-cluster')
  const only = argv.includes('--unit') ? 'unit' : argv.includes('--integration') ? 'integration' : null
  const args = argv.filter((a) => !['--redis-cluster', '--unit', '--integration'].includes(a))
  const files = args.filter((a) => !a.startsWith('-'))
  const flags = args.filter((a) => a.startsWith('-'))
  // On the cluster every file runs with the services; otherwise unit files run as the unit tier.
  const unitFiles = onCluster ? [] : files.filter(isUnitFile)
  const otherFiles = onCluster ? files : files.filter((f) => !isUnitFile(f))

  const runUnit = !onCluster && (files.length ? unitFiles.length > 0 : only !== 'integration')
  const runIntegration = files.length ? otherFiles.length > 0 : only !== 'unit'
  // Coverage is measured over the whole suite only: a tier or a few files would fall under the floor.
  const coverage = files.length === 0 && only === null && !onCluster && coverageWanted()
  const tierFlags = coverage ? [...flags, ...coverageArgs()] : flags
  if (coverage) await resetCoverage()

  const codes = []
  // The whole suite is one tap run: the unit shards join the integration tier's entries (each keeps its guard, in
  // test/tiers/shard.ts), so their waits overlap with the other shards' work instead of coming first, alone.
  const together = runUnit && runIntegration && files.length === 0
  if (runUnit && !together) {
    codes.push(await unitTier(unitFiles, tierFlags))
    await keepCoverage()
  }
  if (runIntegration && !interrupted) {
    codes.push(await integrationTier(otherFiles, tierFlags, { onCluster, full: files.length === 0, withUnit: together }))
  }
  if (coverage && !interrupted) codes.push(await checkCoverage(runTap))
  testDist?.remove()
  process.exit(interrupted ? exitCode() : (codes.find((c) => c !== 0) ?? 0))
}

main().catch(async (err) => {
  log(err.message)
  await Promise.all([stopAllServices().catch(() => {}), stopCluster()])
  testDist?.remove()
  process.exit(1)
})
