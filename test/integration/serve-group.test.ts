// `pombo serve` as a process group (src/group/): the API and the dashboard in the serving process, the delivery
// worker in a child process of it. Through the real program: a send is delivered by the worker process; the
// operations port shows the group's metrics merged; a worker killed is started again and delivers; SIGTERM stops
// the whole group; a worker whose parent is SIGKILLed exits by itself; PM_SERVE_WORKERS=0 keeps one process.
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import { startFakeProviders } from '../fakes'
import { pomboArgv } from '../helpers/entry'
import { serveChild, type ServeChild } from '../helpers/serve-child'
import { DATABASE_URL, PLATFORM_KEY, REDIS_URL, VAULT_KEY } from '../helpers/service'
import { until } from '../helpers/until'

const ALL = 'api,worker,dashboard'

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** How long a wait for another process may last: CI's coverage-instrumented children on a loaded machine took
 *  over 20 s to start a worker and deliver. The waits end as soon as what they wait for is seen. */
const WAIT_MS = 90_000

/** Starts a group against the fake providers; an app with an FCM credential and one registered Android device. */
async function group(tt: Test, env: Record<string, string> = {}) {
  const fakes = await startFakeProviders(tt)
  const p = await serveChild(tt, { roles: ALL, env: { ...fakes.env, PM_LOG_LEVEL: 'info', PM_DEFAULT_PLAN: 'pro', ...env } })
  const api = (path: string, init: RequestInit = {}, key = PLATFORM_KEY) =>
    fetch(`http://127.0.0.1:${p.port}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
    })
  const app = (await (await api('/api/v1/apps', { method: 'POST', body: JSON.stringify({ nome: 'grupo' }) })).json()) as {
    id: string
    api_key: string
  }
  const sa = join(tmpdir(), `sa-group-${app.id}.json`)
  writeFileSync(sa, JSON.stringify(fakes.fcm.serviceAccount('pombo-group')))
  await new Promise<void>((resolve, reject) =>
    execFile(
      process.execPath,
      pomboArgv(['credentials', 'fcm', app.id, sa]),
      {
        env: {
          ...process.env,
          DATABASE_URL,
          REDIS_URL,
          PM_DB_SCHEMA: p.schema,
          PM_REDIS_PREFIX: p.prefix,
          PM_VAULT_KEY: VAULT_KEY,
          // The deployment's provider: the account's token_uri is accepted on its host (src/providers/endpoints.ts).
          PM_FCM_BASE_URL: fakes.fcm.url,
        },
      },
      (err, _out, stderr) => (err ? reject(new Error(stderr)) : resolve()),
    ),
  )
  const reg = await api(
    '/api/v1/players',
    { method: 'POST', body: JSON.stringify({ app_id: app.id, device_type: 1, identifier: `tok-${app.id}` }) },
    app.api_key,
  )
  const device = ((await reg.json()) as { id: string }).id
  /** Sends to the device; resolves with the send once it is closed. */
  const sendAndWait = async (n: number) => {
    const r = await api(
      '/api/v1/notifications',
      { method: 'POST', body: JSON.stringify({ app_id: app.id, contents: { en: `n${n}` }, include_player_ids: [device] }) },
      app.api_key,
    )
    const id = ((await r.json()) as { id: string }).id
    return until(
      `send ${n} closed`,
      async () => {
        const s = (await (await api(`/api/v1/notifications/${id}?app_id=${app.id}`, {}, app.api_key)).json()) as {
          completed_at: number | null
          successful: number
          remaining: number
        }
        return s.completed_at ? s : null
      },
      WAIT_MS,
    )
  }
  const metrics = async () => (await fetch(`http://127.0.0.1:${p.opsPort}/metrics`)).text()
  return { p, fakes, sendAndWait, metrics }
}

/** The worker process ids the parent logged, in order. */
function workerPids(p: ServeChild): number[] {
  return [...p.logs().matchAll(/"pid":(\d+)[^\n]*delivery worker process started/g)].map((m) => Number(m[1]))
}

t.test('the default serve delivers through a worker process of its group, restarts it, and stops with it', async (t) => {
  // The default lease (10 s): the parent gives the dead worker's leases back, so the restarted one need not wait.
  const g = await group(t)
  const first = await until('a worker process', () => childrenOf(g.p.child.pid as number)[0], WAIT_MS)
  t.not(first, g.p.child.pid, 'the worker is a process of its own')
  t.same(workerPids(g.p), [first], 'the parent logged the worker it started')
  const argv = readFileSync(`/proc/${first}/cmdline`, 'utf8').split('\0').filter(Boolean)
  t.ok(argv.includes('--max-semi-space-size=32'), `the worker runs with the larger young generation (${argv.join(' ')})`)
  t.same(argv.slice(-3), ['serve', '--roles', 'worker'])

  const s1 = await g.sendAndWait(1)
  t.equal(s1.successful, 1, 'the send was delivered')
  t.equal(s1.remaining, 0)
  t.equal(g.fakes.fcm.delivered.length, 1, 'the provider received it once')

  // One scrape of the parent shows the group: the API's series and the worker's, each family once.
  const text = await g.metrics()
  t.match(text, /pombo_deliveries_total\{platform="android",outcome="successful"\} 1\n/, "the worker's delivery counted")
  t.match(text, /pombo_sends_accepted_total\S* 1\n/, "the API's acceptance counted")
  t.match(text, /pombo_group_workers_running 1\n/)
  const helps = text.split('\n').filter((l) => l.startsWith('# HELP '))
  t.equal(new Set(helps).size, helps.length, 'no family is written twice')
  const pools = [...text.matchAll(/^pombo_pg_pool_max\{pool="\w+"\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0)
  t.equal(pools, 32, "the group's pools add up to PM_PG_POOL (the parent's 16, the worker's 16)")

  // A worker that dies is started again, and the next send is delivered by the new one. The parent gives the dead
  // worker's partition leases back at once: seen in Redis before they would have lapsed (their time left is read
  // just before the kill), whatever a loaded machine makes of the restart itself.
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const leaseKeys: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${g.p.prefix}:{p*}:lease`, 'COUNT', 1000)
    leaseKeys.push(...keys)
    cursor = next
  } while (cursor !== '0')
  const heldBy = async (pid: number) =>
    (await redis.mget(leaseKeys)).filter((v) => v !== null && Number(v.split(':').at(-2)) === pid).length
  t.ok(leaseKeys.length > 0 && (await heldBy(first)) === leaseKeys.length, 'the worker holds every partition')
  const left = Math.min(...(await Promise.all(leaseKeys.map((k) => redis.pttl(k)))))
  process.kill(first, 'SIGKILL')
  const killedAt = Date.now()
  await until("the dead worker's leases given back", async () => (await heldBy(first)) === 0, WAIT_MS)
  const gone = Date.now() - killedAt
  t.ok(gone < left, `its leases were given back ${gone} ms after the kill, before they would have lapsed (${left} ms left)`)
  const second = await until('a new worker process', () => childrenOf(g.p.child.pid as number).find((x) => x !== first), WAIT_MS)
  t.match(g.p.logs(), /delivery worker process exited; starting it again/)
  const s2 = await g.sendAndWait(2)
  t.equal(s2.successful, 1, 'delivered by the restarted worker')
  t.match(await g.metrics(), /pombo_group_worker_restarts_total 1\n/)

  // SIGTERM stops the group: the parent exits 0 after its worker.
  g.p.child.kill('SIGTERM')
  t.equal(await g.p.exited, 0, 'the parent exits 0')
  t.notOk(alive(second), 'the worker process is gone')
})

t.test('a worker whose parent is SIGKILLed drains and exits by itself', async (t) => {
  const g = await group(t)
  const worker = await until('a worker process', () => childrenOf(g.p.child.pid as number)[0], WAIT_MS)
  await until('the worker started', () => g.p.logs().includes('"roles":["worker"]'), WAIT_MS)
  g.p.child.kill('SIGKILL')
  await until('the orphaned worker exits', () => !alive(worker), WAIT_MS)
  t.notOk(alive(worker), 'no worker outlives its group')
})

t.test('PM_SERVE_WORKERS=0 runs every role in the serving process', async (t) => {
  const g = await group(t, { PM_SERVE_WORKERS: '0' })
  const s = await g.sendAndWait(1)
  t.equal(s.successful, 1, 'delivered by the serving process itself')
  t.same(childrenOf(g.p.child.pid as number), [], 'no worker process')
  t.notMatch(await g.metrics(), /pombo_group_workers_running/)
})
