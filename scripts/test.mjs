// `npm test`: makes sure Postgres and Redis are there (see ensureTestServices),
// then runs tap with DATABASE_URL and REDIS_URL set. Extra arguments go to tap:
//   npm test -- test/unit/foo.test.ts
// The machine's shared Postgres/Redis are left running; an embedded fallback
// started here is stopped when tap is done.

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { buildSdk } from './build-sdk.mjs'
import { ensureTestServices, REPO_ROOT, stopAllServices } from './local-services.mjs'

const log = (msg) => console.error(`[pombo test] ${msg}`)

let tap = null
let interrupted = null

function forward(signal) {
  if (tap && tap.exitCode === null && tap.signalCode === null) {
    tap.kill(signal)
  } else if (!interrupted) {
    interrupted = signal
    stopAllServices().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward)

async function main() {
  // The tests import '@pombo/sdk' through its package exports (packages/sdk/dist).
  buildSdk()
  const { DATABASE_URL, REDIS_URL, stop } = await ensureTestServices({ log })
  if (interrupted) return
  log(`DATABASE_URL=${DATABASE_URL.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')} REDIS_URL=${REDIS_URL}`)

  const localTap = path.join(REPO_ROOT, 'node_modules', '.bin', 'tap')
  const [cmd, args] = existsSync(localTap) ? [localTap, []] : ['npx', ['--no-install', 'tap']]
  tap = spawn(cmd, [...args, ...process.argv.slice(2)], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
    env: { ...process.env, DATABASE_URL, REDIS_URL },
  })
  tap.on('error', async (err) => {
    log(`could not run tap: ${err.message}`)
    await stop()
    process.exit(1)
  })
  tap.on('exit', async (code, signal) => {
    await stop().catch((err) => log(`while stopping services: ${err.message}`))
    const signals = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }
    process.exit(code ?? 128 + (signals[signal] ?? 1))
  })
}

main().catch(async (err) => {
  log(err.message)
  await stopAllServices().catch(() => {})
  process.exit(1)
})
