// `npm start`: brings up Postgres and Redis on local defaults, keeps a
// generated platform key and vault key in .data/secrets.json, compiles src/ into dist/ when it changed, and runs
// `pombo serve`. Ctrl-C stops the service, then Redis and Postgres.
//
// Extra arguments go to `pombo serve`: npm start -- --roles api
//
// PM_LOCAL_PG_PORT and PM_LOCAL_REDIS_PORT move the embedded Postgres and the private Redis off 54329 and 63790, so
// a second checkout (or the README's test, test/integration/readme-first-minutes.test.ts) runs its own beside them
// instead of reusing the first one's servers and data.

import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { ensurePostgres, ensureRedis, ownedServiceNames, portOpen, REPO_ROOT, stopAllServices } from './local-services.mjs'
import { redactUrl } from './redact-url.mjs'

const { distChoice } = createRequire(import.meta.url)('../bin/dist.cjs')

const DATA_DIR = path.join(REPO_ROOT, '.data')
const SECRETS_FILE = path.join(DATA_DIR, 'secrets.json')

const log = (msg) => console.log(`[pombo] ${msg}`)
const fail = (msg) => {
  console.error(`[pombo] ${msg}`)
}

let child = null
let shuttingDown = false
let firstSignalAt = 0
let killTimer = null

async function loadSecrets() {
  let secrets = null
  try {
    secrets = JSON.parse(await readFile(SECRETS_FILE, 'utf8'))
  } catch (err) {
    if (err.code !== 'ENOENT') {
      throw new Error(
        `${path.relative(REPO_ROOT, SECRETS_FILE)} is unreadable (${err.message}); fix or delete it (deleting it makes new keys)`,
      )
    }
  }
  if (secrets) {
    if ((await stat(SECRETS_FILE)).mode & 0o077) await chmod(SECRETS_FILE, 0o600)
    if (typeof secrets.PM_PLATFORM_KEY !== 'string' || typeof secrets.PM_VAULT_KEY !== 'string') {
      throw new Error(`${path.relative(REPO_ROOT, SECRETS_FILE)} lacks PM_PLATFORM_KEY or PM_VAULT_KEY; fix or delete it`)
    }
    return { ...secrets, created: false }
  }
  secrets = {
    PM_PLATFORM_KEY: `pm_platform_${randomBytes(24).toString('hex')}`,
    PM_VAULT_KEY: randomBytes(32).toString('hex'),
  }
  try {
    await writeFile(SECRETS_FILE, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if (err.code === 'EEXIST') return loadSecrets() // another start won the race
    throw err
  }
  return { ...secrets, created: true }
}

function portSetting(name, fallback) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const port = Number(raw)
  if (!/^[0-9]+$/.test(raw) || port < 1 || port > 65535) throw new Error(`${name}: expected a port (1-65535), got "${raw}"`)
  return port
}

function reachableHost(host) {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1'
  if (host === '::' || host === '[::]') return '::1'
  return host
}

function urlHost(host) {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

async function waitForApi(host, port, ms) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!child || child.exitCode !== null || child.signalCode !== null) return false
    if (await portOpen(port, host, 500)) return true
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return false
}

function banner({ host, port, dashboardPort, platformKey, keySource, databaseUrl, redisUrl, ready }) {
  const stops = ownedServiceNames().reverse()
  const api = `http://${urlHost(host)}:${port}`
  const dashboard = `http://${urlHost(host)}:${dashboardPort}`
  const curlBase = `http://${urlHost(reachableHost(host))}:${port}`
  const line = '-'.repeat(78)
  const out = [
    '',
    line,
    ready ? ' Pombo is running.' : ` Pombo was started but ${api} is not answering yet (see the log above).`,
    '',
    `   API            ${api}`,
    `   Dashboard      ${dashboard}`,
    `   Platform key   ${platformKey}`,
    `                  (${keySource})`,
    // A DATABASE_URL or REDIS_URL given by the person may carry a password: never printed.
    `   Postgres       ${redactUrl(databaseUrl)}`,
    `   Redis          ${redactUrl(redisUrl)}`,
    '',
    ' Create your first app:',
    '',
    `   curl -s -X POST ${curlBase}/api/v1/apps -H "Authorization: Bearer ${platformKey}" -H 'content-type: application/json' -d '{"nome":"Meu app"}'`,
    '',
    ' Sign in to the dashboard (docs/dashboard.md): create an operator, then open /entrar:',
    '',
    "   printf '%s' 'a-password-of-12+-chars' | bin/pombo user create --email you@example.com --operador --senha-stdin",
    '',
    ` Ctrl-C stops Pombo${stops.length ? `, then ${stops.join(' and ')}` : ''}.`,
    line,
    '',
  ]
  console.log(out.join('\n'))
}

function exitCodeOf(code, signal) {
  if (code !== null) return code
  const signals = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 }
  return 128 + (signals[signal] ?? 1)
}

async function shutdown(code) {
  await stopAllServices().catch((err) => fail(`while stopping services: ${err.message}`))
  process.exit(code)
}

function onSignal(signal) {
  const now = Date.now()
  if (shuttingDown) {
    // npm forwards the terminal's SIGINT too, so one Ctrl-C can arrive twice.
    if (now - firstSignalAt < 1500) return
    if (child && child.exitCode === null && child.signalCode === null) {
      log('second signal: killing pombo now')
      child.kill('SIGKILL')
    }
    return
  }
  shuttingDown = true
  firstSignalAt = now
  if (child && child.exitCode === null && child.signalCode === null) {
    const services = ownedServiceNames()
    log(`${signal}: stopping pombo (pid ${child.pid})${services.length ? `, then ${services.reverse().join(' and ')}` : ''}`)
    child.kill(signal)
    killTimer = setTimeout(() => {
      log('pombo did not stop within 20 s; killing it')
      child.kill('SIGKILL')
    }, 20000)
    killTimer.unref()
  } else {
    log(`${signal}: stopping`)
    shutdown(exitCodeOf(null, signal))
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, onSignal)

/**
 * The service compiled to dist/ (scripts/build.mjs, about a second) unless the build there is current: the API, its
 * worker processes and every `pombo` command run from the checkout then start plain JavaScript, with less CPU and
 * memory than transforming src/ through tsx in each of them. A failed build is reported and src/ runs through tsx, as
 * it does with PM_USE_DIST=0.
 */
async function compile() {
  if (process.env.PM_USE_DIST === '0' || distChoice(REPO_ROOT).use) return
  log('compiling src/ into dist/ (npm run build) ...')
  const started = Date.now()
  const build = spawn(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.mjs')], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  build.stderr.on('data', (c) => {
    err += c
  })
  const code = await new Promise((done) => {
    build.on('error', (e) => {
      err += e.message
      done(1)
    })
    build.on('exit', (c, signal) => done(c ?? signal))
  })
  if (code === 0) log(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  else log(`the build failed (${err.trim().split('\n').slice(-3).join(' | ') || code}); running src/ through tsx`)
}

async function main() {
  await mkdir(DATA_DIR, { recursive: true, mode: 0o755 })

  const secrets = await loadSecrets()
  const platformKey = process.env.PM_PLATFORM_KEY || secrets.PM_PLATFORM_KEY
  const vaultKey = process.env.PM_VAULT_KEY || secrets.PM_VAULT_KEY
  const keySource = process.env.PM_PLATFORM_KEY
    ? 'from PM_PLATFORM_KEY'
    : `${secrets.created ? 'generated now, ' : ''}kept in .data/secrets.json; PM_PLATFORM_KEY overrides it`

  const pg = await ensurePostgres({ log, port: portSetting('PM_LOCAL_PG_PORT', 54329) })
  if (shuttingDown) return
  const redis = await ensureRedis({ log, port: portSetting('PM_LOCAL_REDIS_PORT', 63790) })
  if (shuttingDown) return

  const host = process.env.PM_HOST || '127.0.0.1'
  const port = process.env.PORT || '8080'
  const dashboardPort = process.env.PM_DASHBOARD_PORT || '8081'

  if (await portOpen(Number(port), reachableHost(host), 500)) {
    fail(`warning: something already listens on port ${port}; is another Pombo running? (set PORT to use another port)`)
  }

  const env = {
    ...process.env,
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    PM_PLATFORM_KEY: platformKey,
    PM_VAULT_KEY: vaultKey,
    PM_HOST: host,
    PORT: port,
    PM_DASHBOARD_PORT: dashboardPort,
    // A development instance: `pombo simulate` works against it with no other setting, and its worker delivers the
    // pushes of apps holding simulator credentials to their simulators. `pombo serve` and the image keep it off.
    PM_ALLOW_SIMULATORS: process.env.PM_ALLOW_SIMULATORS || '1',
  }

  // `pombo app create …` run from this checkout reads these, so the CLI talks to what npm start brought up.
  await writeFile(
    path.join(DATA_DIR, 'local-env.json'),
    `${JSON.stringify(
      {
        DATABASE_URL: pg.url,
        REDIS_URL: redis.url,
        PM_PLATFORM_KEY: platformKey,
        PM_VAULT_KEY: vaultKey,
        PM_ALLOW_SIMULATORS: env.PM_ALLOW_SIMULATORS,
      },
      null,
      2,
    )}\n`,
    { mode: 0o600 },
  )

  await compile()
  if (shuttingDown) return
  log('starting pombo serve ...')
  // Own process group: a Ctrl-C reaches only this script, which passes exactly
  // one signal on and stops Redis and Postgres after Pombo has exited. bin/pombo runs the build when it is current
  // (compile() made it so), src/ through tsx otherwise.
  child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'pombo'), 'serve', ...process.argv.slice(2)], {
    cwd: REPO_ROOT,
    env,
    stdio: 'inherit',
    detached: true,
  })
  child.on('error', (err) => {
    fail(`could not start pombo: ${err.message}`)
    shutdown(1)
  })
  child.on('exit', (code, signal) => {
    if (killTimer) clearTimeout(killTimer)
    if (shuttingDown) {
      // Stopped on request: a clean stop (or the signal we passed on) is success.
      const clean = code === 0 || (code === null && signal !== 'SIGKILL') || code === 130 || code === 143
      shutdown(clean ? 0 : exitCodeOf(code, signal))
    } else {
      const services = ownedServiceNames()
      log(
        `pombo exited (${code !== null ? `code ${code}` : signal})${services.length ? `; stopping ${services.reverse().join(' and ')}` : ''}`,
      )
      shutdown(exitCodeOf(code, signal))
    }
  })

  const ready = await waitForApi(reachableHost(host), Number(port), 60000)
  if (shuttingDown || child.exitCode !== null || child.signalCode !== null) return
  banner({ host, port, dashboardPort, platformKey, keySource, databaseUrl: pg.url, redisUrl: redis.url, ready })
}

main().catch((err) => {
  fail(err.message)
  shutdown(1)
})
