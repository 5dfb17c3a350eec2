// Debian's PgBouncer in front of the local Postgres, on a free port, for tests of Pombo behind a connection pooler.
// Trust authentication (the local Postgres trusts loopback too); the users it lets in are listed in its auth file.
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort } from './serve-child'

export const PGBOUNCER = process.env.PGBOUNCER_BIN || '/usr/sbin/pgbouncer'

export interface PgBouncer {
  port: number
  /** A connection string through PgBouncer for `user` to `database`. */
  url(user: string, database?: string): string
  logs(): string
}

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

export function hasPgBouncer(): boolean {
  return existsSync(PGBOUNCER)
}

/** Starts PgBouncer (`mode`: its pool_mode) forwarding every database to the Postgres at `upstream`. */
export async function startPgBouncer(
  t: Test,
  o: { mode: 'transaction' | 'session'; users: string[]; upstream: { host: string; port: number }; poolSize?: number },
): Promise<PgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-pgbouncer-'))
  chmodSync(dir, 0o755)
  const port = await freePort()
  writeFileSync(join(dir, 'users.txt'), o.users.map((u) => `"${u}" ""\n`).join(''), { mode: 0o644 })
  const ini = [
    '[databases]',
    `* = host=${o.upstream.host} port=${o.upstream.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    `pool_mode = ${o.mode}`,
    'max_client_conn = 200',
    `default_pool_size = ${o.poolSize ?? 8}`,
    // PgBouncer refuses to run as root; a CI container often is.
    ...(process.getuid?.() === 0 ? ['user = nobody'] : []),
  ].join('\n')
  writeFileSync(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 })
  let out = ''
  const child: ChildProcess = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout?.on('data', (b) => {
    out += b
  })
  child.stderr?.on('data', (b) => {
    out += b
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    child.kill('SIGINT')
    await exited
  })
  for (let i = 0; i < 100 && !(await reachable(port)); i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited: ${out}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  if (!(await reachable(port))) throw new Error(`pgbouncer did not listen: ${out}`)
  return {
    port,
    url: (user, database = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${database}`,
    logs: () => out,
  }
}
