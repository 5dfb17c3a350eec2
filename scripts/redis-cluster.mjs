// A throw-away Redis Cluster on loopback ports, for the tests (and for trying Pombo on a cluster by hand):
//   node scripts/redis-cluster.mjs [--masters 3] [--port 7301] [--appendonly]
// prints `REDIS_CLUSTER_NODES=…` and runs until interrupted. Each master is a child `redis-server` in cluster mode
// with its data under the OS temporary directory; the slots are split evenly with CLUSTER ADDSLOTSRANGE, the nodes
// meet each other, and the cluster is ready once every node reports cluster_state:ok and knows every slot.
// Without --port, free ports are chosen at run time (the cluster bus uses port + 10000, so both must be free).

import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Redis from 'ioredis'

const SLOTS = 16384
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function findRedisServer() {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/bin', '/usr/local/bin', '/usr/sbin'])) {
    const p = path.join(dir, 'redis-server')
    if (dir && existsSync(p)) return p
  }
  throw new Error('redis cluster: redis-server is not installed (Debian: apt-get install -y redis-server)')
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/** `count` ports p where p and p + 10000 (the cluster bus) are free, from `base` or else picked at random. */
async function choosePorts(count, base) {
  const ports = []
  if (base) {
    for (let i = 0; i < count; i++) {
      const p = base + i
      if (!(await portFree(p)) || !(await portFree(p + 10000)))
        throw new Error(`redis cluster: port ${p} or ${p + 10000} is taken`)
      ports.push(p)
    }
    return ports
  }
  for (let tries = 0; ports.length < count && tries < 500; tries++) {
    const p = 20000 + Math.floor(Math.random() * 30000)
    if (ports.includes(p) || ports.includes(p + 10000) || ports.includes(p - 10000)) continue
    if ((await portFree(p)) && (await portFree(p + 10000))) ports.push(p)
  }
  if (ports.length < count) throw new Error('redis cluster: no free ports found')
  return ports
}

async function waitFor(what, f, ms) {
  const deadline = Date.now() + ms
  let last
  while (Date.now() < deadline) {
    try {
      if (await f()) return
    } catch (err) {
      last = err
    }
    await sleep(50)
  }
  throw new Error(`redis cluster: timed out waiting for ${what}${last ? ` (${last.message})` : ''}`)
}

/**
 * Starts a cluster of `masters` masters (no replicas). `appendonly` turns on the append-only file with fsync at
 * every write, so a node killed and restarted keeps every acknowledged write.
 */
export async function startRedisCluster({ masters = 3, port, appendonly = false, nodeTimeoutMs = 3000, log = () => {} } = {}) {
  const binary = findRedisServer()
  const ports = await choosePorts(masters, port)
  const root = mkdtempSync(path.join(os.tmpdir(), 'pombo-redis-cluster-'))
  const children = new Map()
  // A test process that ends without calling stop() (a failed assertion, a timeout) leaves nothing behind.
  const onExit = () => {
    for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', onExit)

  const args = (p) => [
    '--port',
    String(p),
    '--bind',
    '127.0.0.1',
    '--dir',
    root,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${p}.conf`,
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    '--save',
    '',
    '--appendonly',
    appendonly ? 'yes' : 'no',
    '--appendfilename',
    `appendonly-${p}.aof`,
    '--appenddirname',
    `aof-${p}`,
    '--appendfsync',
    'always',
    '--logfile',
    path.join(root, `redis-${p}.log`),
    '--daemonize',
    'no',
  ]

  const launch = (p) => {
    const child = spawn(binary, args(p), { stdio: 'ignore' })
    child.on('error', () => {})
    // The servers never keep a process alive: its 'exit' handler (above) kills them.
    child.unref()
    children.set(p, child)
    return child
  }

  const client = (p) =>
    new Redis({ port: p, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  const ask = async (p, ...cmd) => {
    const c = client(p)
    c.on('error', () => {})
    try {
      await c.connect()
      return await c.call(...cmd)
    } finally {
      c.disconnect()
    }
  }

  const ready = async (ms) => {
    await waitFor(
      'cluster_state:ok on every node',
      async () => {
        for (const p of ports) {
          const info = String(await ask(p, 'CLUSTER', 'INFO'))
          if (
            !/cluster_state:ok/.test(info) ||
            !info.includes(`cluster_slots_ok:${SLOTS}`) ||
            !info.includes(`cluster_known_nodes:${masters}`)
          ) {
            return false
          }
        }
        return true
      },
      ms,
    )
  }

  const stop = async () => {
    // Referenced again while they die: an unreferenced child's exit would not keep the process waiting for it.
    for (const child of children.values()) child.ref()
    for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await Promise.all(
      [...children.values()].map((c) =>
        c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null,
      ),
    )
    children.clear()
    rmSync(root, { recursive: true, force: true })
    process.off('exit', onExit)
  }

  try {
    for (const p of ports) launch(p)
    for (const p of ports) await waitFor(`redis-server on port ${p}`, async () => (await ask(p, 'PING')) === 'PONG', 10_000)
    const per = Math.floor(SLOTS / masters)
    for (let i = 0; i < masters; i++) {
      const from = i * per
      const to = i === masters - 1 ? SLOTS - 1 : from + per - 1
      await ask(ports[i], 'CLUSTER', 'ADDSLOTSRANGE', String(from), String(to))
      await ask(ports[i], 'CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1))
    }
    for (const p of ports.slice(1)) await ask(ports[0], 'CLUSTER', 'MEET', '127.0.0.1', String(p))
    await ready(20_000)
  } catch (err) {
    await stop()
    throw err
  }
  log(`redis cluster: ${masters} masters on 127.0.0.1:${ports.join(',')} (data in ${root})`)

  return {
    ports,
    dir: root,
    /** The value for REDIS_CLUSTER_NODES. */
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    /** Kills master `i` (SIGKILL: no shutdown save, as a crash). */
    async kill(i) {
      const p = ports[i]
      const child = children.get(p)
      if (!child || child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.ref()
      child.kill('SIGKILL')
      await exited
    },
    /** Starts master `i` again from its data directory and waits until the cluster is whole again. */
    async restart(i) {
      const p = ports[i]
      launch(p)
      await waitFor(`redis-server on port ${p}`, async () => (await ask(p, 'PING')) === 'PONG', 10_000)
      await ready(30_000)
    },
    ready,
    stop,
  }
}

// Run by hand: start, print the seeds, stop on Ctrl-C.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2)
  const opt = (name) => {
    const i = argv.indexOf(name)
    return i === -1 ? undefined : argv[i + 1]
  }
  const cluster = await startRedisCluster({
    masters: Number(opt('--masters') ?? 3),
    port: opt('--port') ? Number(opt('--port')) : undefined,
    appendonly: argv.includes('--appendonly'),
    log: (m) => console.error(m),
  })
  console.log(`REDIS_CLUSTER_NODES=${cluster.nodes}`)
  const end = () => cluster.stop().finally(() => process.exit(0))
  process.on('SIGINT', end)
  process.on('SIGTERM', end)
  setInterval(() => {}, 1 << 30)
}
