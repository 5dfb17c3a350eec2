// Loaded into every process of the unit tier (`npm run test:unit`, NODE_OPTIONS=--import): unit tests run with no
// Postgres and no Redis, so a test that reaches for one (a connection to their ports or socket, or starting one)
// stops its process at once with a message naming what it tried, instead of hanging on a client's retries or
// passing only on a machine where they happen to run.
import childProcess from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'
import net from 'node:net'
import { promisify } from 'node:util'

const PORTS = new Map([
  [5432, 'Postgres'],
  [6432, 'PgBouncer'],
  [6379, 'Redis'],
])
const PROGRAMS = /(^|\/)(postgres|pg_ctl|pg_ctlcluster|initdb|pgbouncer|redis-server|redis-cli)$/

function refuse(what) {
  const where = (new Error().stack ?? '').split('\n').slice(3, 12).join('\n')
  process.stderr.write(
    `\n[pombo test:unit] this unit test tried to ${what}.\n` +
      'Unit tests (test/unit) run without Postgres and Redis: move the file to test/integration, or stop it ' +
      `from needing the service.\n${where}\n`,
  )
  process.exit(1)
}

/** The port or path of any of net.Socket#connect's call forms (options, port+host, path, normalized array). */
function target(args) {
  const a = Array.isArray(args[0]) ? args[0][0] : args[0]
  if (a !== null && typeof a === 'object') return { port: Number(a.port), path: a.path, host: a.host }
  if (typeof a === 'number' || /^\d+$/.test(String(a))) return { port: Number(a), host: args[1] }
  return { path: a }
}

const connect = net.Socket.prototype.connect
net.Socket.prototype.connect = function guardedConnect(...args) {
  const t = target(args)
  if (PORTS.has(t.port)) refuse(`connect to ${PORTS.get(t.port)} (${t.host ?? 'localhost'}:${t.port})`)
  if (typeof t.path === 'string' && t.path.includes('.s.PGSQL.')) refuse(`connect to Postgres (${t.path})`)
  if (typeof t.path === 'string' && /redis.*\.sock$/.test(t.path)) refuse(`connect to Redis (${t.path})`)
  return connect.apply(this, args)
}

function guardProgram(fn) {
  return function guarded(file, ...rest) {
    if (typeof file === 'string' && PROGRAMS.test(file)) refuse(`start ${file}`)
    return fn.call(this, file, ...rest)
  }
}
for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync']) {
  const original = childProcess[name]
  const guarded = guardProgram(original)
  // util.promisify(execFile) resolves {stdout, stderr} through this symbol; keep it, guarded too.
  if (original[promisify.custom]) guarded[promisify.custom] = guardProgram(original[promisify.custom])
  childProcess[name] = guarded
}
syncBuiltinESMExports()
