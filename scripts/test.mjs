// `npm test`: makes sure Postgres and Redis are there (see ensureTestServices), starts a throw-away 3-master Redis
// Cluster (scripts/redis-cluster.mjs), then runs tap with DATABASE_URL, REDIS_URL and PM_TEST_REDIS_CLUSTER_NODES
// set. A full run then runs the Redis-bound suites (CLUSTER_SUITES) a second time with every service on the
// cluster (PM_TEST_REDIS=cluster). Extra arguments go to tap:
//   npm test -- test/unit/foo.test.ts
//   npm test -- --redis-cluster test/integration/delivery.test.ts   (those files, every service on the cluster)
// The machine's shared Postgres/Redis are left running; an embedded fallback and the cluster started here are
// stopped when tap is done.

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { buildSdk } from './build-sdk.mjs'
import { ensureTestServices, REPO_ROOT, stopAllServices } from './local-services.mjs'
import { startRedisCluster } from './redis-cluster.mjs'

/** The suites a full run repeats against the Redis Cluster: delivery, sends, receipts and the shared pace. */
const CLUSTER_SUITES = [
  'test/integration/delivery.test.ts',
  'test/integration/sends-create.test.ts',
  'test/integration/receipts.test.ts',
  'test/integration/pace-shared.test.ts',
  'test/integration/group-release.test.ts',
]

const log = (msg) => console.error(`[pombo test] ${msg}`)

let tap = null
let interrupted = null
let cluster = null

const stopCluster = () => (cluster ? cluster.stop().catch(() => {}) : Promise.resolve())

function forward(signal) {
  if (tap && tap.exitCode === null && tap.signalCode === null) {
    interrupted = signal
    tap.kill(signal)
  } else if (!interrupted) {
    interrupted = signal
    Promise.all([stopAllServices(), stopCluster()]).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
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

async function main() {
  // The tests import '@pombo/sdk' through its package exports (packages/sdk/dist).
  buildSdk()
  const argv = process.argv.slice(2)
  const onCluster = argv.includes('--redis-cluster')
  const args = argv.filter((a) => a !== '--redis-cluster')
  const files = args.filter((a) => !a.startsWith('-'))
  const full = files.length === 0

  const { DATABASE_URL, REDIS_URL, stop } = await ensureTestServices({ log })
  if (interrupted) return
  log(`DATABASE_URL=${DATABASE_URL.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')} REDIS_URL=${REDIS_URL}`)
  const env = { ...process.env, DATABASE_URL, REDIS_URL }
  // Started once for the run (about 2 s) when something will use it; files run alone start their own.
  if (!env.PM_TEST_REDIS_CLUSTER_NODES && (full || onCluster || files.some((f) => /cluster/.test(f)))) {
    cluster = await startRedisCluster({ log })
    env.PM_TEST_REDIS_CLUSTER_NODES = cluster.nodes
  }

  let code = await runTap(onCluster && full ? [...args, ...CLUSTER_SUITES] : args, onCluster ? { ...env, PM_TEST_REDIS: 'cluster' } : env)
  if (full && !onCluster && !interrupted) {
    log(`the delivery, sends and receipts suites again, every service on the Redis Cluster (${env.PM_TEST_REDIS_CLUSTER_NODES})`)
    const again = await runTap([...args, ...CLUSTER_SUITES], { ...env, PM_TEST_REDIS: 'cluster' })
    code = code || again
  }
  await stopCluster()
  await stop().catch((err) => log(`while stopping services: ${err.message}`))
  process.exit(interrupted ? (interrupted === 'SIGINT' ? 130 : 143) : code)
}

main().catch(async (err) => {
  log(err.message)
  await Promise.all([stopAllServices().catch(() => {}), stopCluster()])
  process.exit(1)
})
