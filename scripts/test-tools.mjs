// The programs some integration tests drive besides Postgres and Redis: Chromium (browser tests), PgBouncer (the
// transaction-pooling tests) and Docker Compose (the deployment test, which validates compose.yaml). `npm test`
// installs the ones the chosen files need from Debian's packages before tap starts, with one line saying what and
// why, as it does for redis-server; these tests never skip, so a tool that cannot be installed stops the run with
// the command to install it by hand.
//
// Plain Node ESM, no TypeScript. `node scripts/test-tools.mjs` installs every tool (what .ci/run relied on).

import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/**
 * Each tool: the Debian package, how to tell it is there, and which test files need it (read from the file's text,
 * so a new browser test is covered by importing the browser helper).
 */
export const TOOLS = [
  {
    name: 'chromium',
    why: 'browser tests',
    present: () => [process.env.PM_CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium'].some((p) => p && existsSync(p)),
    needed: (text) => /helpers\/browser['"]/.test(text),
  },
  {
    name: 'pgbouncer',
    why: 'PgBouncer tests',
    present: () => existsSync(process.env.PGBOUNCER_BIN || '/usr/sbin/pgbouncer'),
    needed: (text) => /helpers\/pgbouncer['"]/.test(text),
  },
  {
    name: 'docker-compose',
    why: 'the compose.yaml test',
    present: () => ok('docker', ['compose', 'version']) || ok('docker-compose', ['version']),
    needed: (text) => /docker-compose|\bcompose\.yaml\b/.test(text),
  },
]

function ok(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  return r.status === 0
}

/** The tools `files` (paths relative to the repository) need; every tool when `files` is null. */
export function toolsFor(files) {
  if (files === null) return TOOLS
  const texts = files.map((f) => {
    try {
      return readFileSync(path.resolve(REPO_ROOT, f), 'utf8')
    } catch {
      return ''
    }
  })
  return TOOLS.filter((tool) => texts.some((text) => tool.needed(text)))
}

/** Installs the missing tools among `tools`; throws with what to run by hand when it cannot. */
export function ensureTestTools(tools, { log = console.error } = {}) {
  const missing = tools.filter((tool) => !tool.present())
  if (missing.length === 0) return []
  const names = missing.map((tool) => tool.name)
  const byHand = `apt-get install -y --no-install-recommends ${names.join(' ')}`
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  const prefix = root ? [] : ok('sudo', ['-n', 'true']) ? ['sudo', '-n'] : null
  if (prefix === null || !ok('sh', ['-c', 'command -v apt-get'])) {
    throw new Error(`the tests need ${names.join(', ')}; install them (${byHand}) and run again`)
  }
  log(
    `installing Debian packages the tests run: ${missing.map((tool) => `${tool.name} (${tool.why})`).join(', ')}; about a minute`,
  )
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const apt = (args) => {
    const [cmd, ...pre] = [...prefix, 'apt-get']
    const r = spawnSync(cmd, [...pre, ...args], { stdio: ['ignore', 'ignore', 'inherit'], env })
    if (r.status !== 0) throw new Error(`\`apt-get ${args.join(' ')}\` failed; install ${names.join(', ')} by hand (${byHand})`)
  }
  apt(['update', '-qq'])
  apt(['install', '-y', '-qq', '--no-install-recommends', ...names])
  const still = missing.filter((tool) => !tool.present()).map((tool) => tool.name)
  if (still.length) throw new Error(`apt-get finished but ${still.join(', ')} is still missing; install by hand (${byHand})`)
  return names
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const installed = ensureTestTools(TOOLS, { log: (m) => console.log(`[pombo test] ${m}`) })
    console.log(installed.length ? `installed: ${installed.join(', ')}` : 'every tool the tests run is installed')
  } catch (err) {
    console.error(`[pombo test] ${err.message}`)
    process.exit(1)
  }
}
