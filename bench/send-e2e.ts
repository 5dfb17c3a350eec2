// `npm run bench -- send-e2e`: single-device sends end to end through the default `pombo serve` (the API and the
// dashboard in the serving process, the delivery worker in a process of its group: src/group/), delivered to the fake
// FCM (its own process, counters only), and in the same run through `pombo serve` with every role in one process
// (PM_SERVE_WORKERS=0), BENCH_ROUNDS (2) times each in the order G S S G. wrk posts for BENCH_DURATION_S with 64
// connections, every body distinct (a counter in `data`), one of 1,000 seeded devices per send. Figures:
//  - accepted/s: sends stored during the load over its duration (wrk's 2xx answers, checked against the table);
//  - delivered end to end/s: sends stored / (first request → the last send's completed_at), every send checked
//    closed with remaining 0 and successful 1, and the fake's accepted count equal to the sends;
//  - beside a raw node:http2 client to the same fake in the same run (before and after each), and where the machine's
//    CPU went per send: the serving process, the worker processes, Postgres, Redis, the fake FCM (per message), and
//    every core's busy time (wrk and anything else running included);
//  - beside the same load against `pombo serve --roles api` alone in the same run (what the worker costs the API).
// Settings changed: PM_DEFAULT_PLAN=pro, PM_LIMIT_IP_PER_MIN=0, PM_LIMIT_SENDS_PER_SEC=1000000 (the quota still
// runs); the app's rate_por_min = 10,000,000; the fake advertises 1,000 streams per connection. BENCH_NODE_ARGS adds
// node flags to the Pombo process (--cpu-prof).
import { randomUUID } from 'node:crypto'
import { mkdtempSync, openSync, readFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { fcmMessage } from '../src/providers/fcm-body'
import { testCa, trustEnv } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import {
  accessTokenFor,
  appWithFcm,
  commandCpuSeconds,
  cpuSeconds,
  loadavg,
  machineBusySeconds,
  postgresCpuSeconds,
  procStatus,
  rawRate,
  seed,
  VAULT_KEY,
} from './deliver'
import { startFakeFcmProcess } from './lib/fake-fcm-process'
import { record } from './lib/figures'
import { DATABASE_URL, startPombo } from './lib/pombo'
import { medianOf } from './lib/report'
import { ensureWrk, wrk } from './lib/wrk'

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8)
const DEVICES = 1_000
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const CONTENTS = { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' }

interface E2e {
  accepted: number
  during: number
  stored: number
  e2e: number
  e2eS: number
  drainS: number
  backlogAtEnd: number
  allClosedOk: boolean
  delivered: number
  wrk: { rps: number; p50Ms: number; p99Ms: number; non2xx: number; errors: number }
  cpuUs: number
  /** The serving process alone (the API and dashboard; with PM_SERVE_WORKERS=0 every role). */
  servingUs: number
  /** The group's worker processes together (none with PM_SERVE_WORKERS=0). */
  workersUs: number
  pgUs: number
  redisUs: number
  /** The fake FCM per message it accepted. */
  fakeUs: number
  /** Every core's busy time over the run (wrk, the fake, everything else on the machine included). */
  machineUs: number
  hwmMb: number
  rawBefore: number
  rawAfter: number
}

export async function sendE2e(): Promise<void> {
  ensureWrk()
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa()
  if (process.env.BENCH_E2E_API_ONLY === '1') {
    // Only the API alone (no worker): the cost of accepting a send, e.g. to compare two builds.
    const a = await acceptedByApiAlone()
    console.log(
      `\`pombo serve --roles api\` alone: ${a.rate.toFixed(0)}/s accepted, CPU per send: pombo ${a.cpuUs.toFixed(0)} µs, Postgres ${a.pgUs.toFixed(0)} µs`,
    )
    return
  }
  const fake = await startFakeFcmProcess({ maxConcurrentStreams: 1000 })
  try {
    const load = [loadavg()]
    // The default (the API and dashboard in the serving process, the delivery worker in a process of its group) and
    // every role in one process (PM_SERVE_WORKERS=0), in the order G S S G … over BENCH_ROUNDS pairs: each shape
    // runs as often first as second, and the medians compare.
    const shapes: Array<{ name: string; env: Record<string, string>; runs: E2e[] }> = [
      { name: 'default (PM_SERVE_WORKERS=1: the worker in a process of the group)', env: {}, runs: [] },
      { name: 'every role in one process (PM_SERVE_WORKERS=0)', env: { PM_SERVE_WORKERS: '0' }, runs: [] },
    ]
    // BENCH_E2E_GROUP_ONLY=1: only the default shape (e.g. to read Postgres' statement statistics of it alone).
    const groupOnly = process.env.BENCH_E2E_GROUP_ONLY === '1'
    if (groupOnly) shapes.pop()
    for (let r = 0; r < ROUNDS; r++) {
      for (const shape of r % 2 === 0 ? shapes : [...shapes].reverse()) {
        shape.runs.push(await e2eRun(fake, ca, shape.env))
        load.push(loadavg())
      }
    }
    const apiOnly = groupOnly ? null : await acceptedByApiAlone()
    load.push(loadavg())
    console.log(
      `send-e2e: \`pombo serve\` (api, worker, dashboard); wrk 64 connections, ${DURATION_S} s, distinct bodies, 1 of ${DEVICES} devices per send; ${ROUNDS} round(s) of each shape`,
    )
    for (const { name, runs } of shapes) {
      console.log(`\n${name}:`)
      for (const x of runs) {
        console.log(
          `  accepted ${x.accepted.toFixed(0)}/s (${x.during} sends stored during the load, ${x.stored} in all; wrk p50 ${x.wrk.p50Ms.toFixed(1)} ms, p99 ${x.wrk.p99Ms.toFixed(1)} ms, non-2xx ${x.wrk.non2xx}, errors ${x.wrk.errors})` +
            ` | delivered end to end ${x.e2e.toFixed(0)}/s (first request → last send closed in ${x.e2eS.toFixed(1)} s; ${x.backlogAtEnd} open when the load stopped, drained ${x.drainS.toFixed(1)} s later; every send closed with successful 1: ${x.allClosedOk ? 'yes' : 'NO'}; fake FCM accepted ${x.delivered})` +
            ` | raw node:http2 client ${x.rawBefore.toFixed(0)}/s before, ${x.rawAfter.toFixed(0)}/s after: end to end = ${(x.e2e / ((x.rawBefore + x.rawAfter) / 2)).toFixed(2)} of it` +
            ` | CPU per send: pombo ${x.cpuUs.toFixed(0)} µs (serving process ${x.servingUs.toFixed(0)}, worker processes ${x.workersUs.toFixed(0)}), Postgres ${x.pgUs.toFixed(0)} µs, Redis ${x.redisUs.toFixed(0)} µs, the fake FCM ${x.fakeUs.toFixed(0)} µs a message; the machine busy ${x.machineUs.toFixed(0)} µs a send over its ${cpus().length} cores (at that cost they allow at most ${((cpus().length * 1e6) / x.machineUs).toFixed(0)} sends/s) | largest VmHWM ${x.hwmMb.toFixed(0)} MB`,
        )
      }
    }
    if (!apiOnly) {
      console.log(`load average ${load.join(' / ')} on ${cpus().length} cores`)
      return
    }
    const [group, single] = shapes.map((x) => ({
      accepted: medianOf(x.runs.map((r) => r.accepted)),
      e2e: medianOf(x.runs.map((r) => r.e2e)),
    })) as [{ accepted: number; e2e: number }, { accepted: number; e2e: number }]
    const raw = medianOf(shapes.flatMap((x) => x.runs.flatMap((r) => [r.rawBefore, r.rawAfter])))
    console.log(
      `\nmedians: the group accepted ${group.accepted.toFixed(0)}/s (target ≥ 6,000/s) and delivered end to end ${group.e2e.toFixed(0)}/s (target ≥ 5,000/s); one process ${single.accepted.toFixed(0)}/s and ${single.e2e.toFixed(0)}/s` +
        ` | the group ÷ one process: accepted ${(group.accepted / single.accepted).toFixed(2)}, delivered ${(group.e2e / single.e2e).toFixed(2)} | the raw client's median ${raw.toFixed(0)}/s: the group's deliveries ${(group.e2e / raw).toFixed(2)} of it`,
    )
    record({
      name: 'single-device sends delivered end to end, the group',
      pombo: group.e2e,
      unit: 'sends/s',
      baseline: 'raw node:http2 client to the same fake',
      base: raw,
      baseUnit: 'requests/s',
    })
    record({
      name: 'single-device sends accepted, the group',
      pombo: group.accepted,
      unit: 'sends/s',
      baseline: 'the same load on --roles api alone',
      base: apiOnly.rate,
    })
    record({
      name: 'delivered end to end, the group against one process',
      pombo: group.e2e,
      unit: 'sends/s',
      baseline: 'every role in one process',
      base: single.e2e,
    })
    console.log(
      `the same load against \`pombo serve --roles api\` alone (no worker, nothing delivered): ${apiOnly.rate.toFixed(0)}/s accepted, CPU per send: pombo ${apiOnly.cpuUs.toFixed(0)} µs, Postgres ${apiOnly.pgUs.toFixed(0)} µs | the group accepted ${(group.accepted / apiOnly.rate).toFixed(2)} of that while delivering`,
    )
    console.log(`load average ${load.join(' / ')} on ${cpus().length} cores`)
  } finally {
    await fake.stop()
  }
}

async function e2eRun(
  fake: Awaited<ReturnType<typeof startFakeFcmProcess>>,
  ca: string,
  env: Record<string, string>,
): Promise<E2e> {
  const pombo = await startPombo(
    9430,
    {
      PM_DEFAULT_PLAN: 'pro',
      PM_LIMIT_IP_PER_MIN: '0',
      PM_LIMIT_SENDS_PER_SEC: '1000000',
      PM_VAULT_KEY: VAULT_KEY,
      PM_FCM_BASE_URL: fake.url,
      ...trustEnv(),
      ...env,
    },
    'api,worker,dashboard',
    process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [], // e.g. --cpu-prof --cpu-prof-dir=/tmp/prof
    // BENCH_E2E_LOG=<file>: the service's warnings and errors (its log) appended there, for a post-mortem.
    process.env.BENCH_E2E_LOG ? { stdout: openSync(process.env.BENCH_E2E_LOG, 'a') } : {},
  )
  try {
    const app = await appWithFcm(pombo, fake)
    const ids = Array.from({ length: DEVICES }, () => randomUUID())
    await seed(pombo.schema, app.id, DEVICES, (i) => ids[i] as string)

    // The raw client posts what the engine posts for one of these sends.
    const push = { ...pushFor({ contents: CONTENTS, data: { n: 1 } }), sendId: randomUUID(), proof: 'x'.repeat(32) }
    const template = JSON.stringify(fcmMessage({ deviceId: randomUUID(), token: '@TOKEN@', deviceType: 1 }, push, Date.now()))
    const path = `/v1/projects/${fake.serviceAccount.project_id}/messages:send`
    const accessToken = await accessTokenFor(fake.serviceAccount as never, ca)
    const rawBefore = await rawRate(fake.url, ca, path, accessToken, template, DURATION_S)

    const lua = sendsLua(app, ids)
    // A short warm-up (JIT, pools, the FCM session and token), then the tables are emptied of it.
    await wrk({ url: `${pombo.url}/api/v1/notifications`, durationS: 2, lua })
    const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${pombo.schema}` })
    await db.connect()
    // wrk stops with a request in flight on each connection: the server still stores and delivers those. Counting
    // starts once the table is still and every send is closed.
    for (let n = -1; ; ) {
      await waitClosed(db, 120_000)
      await new Promise((r) => setTimeout(r, 500))
      const now = Number((await db.query('SELECT count(*)::int AS n FROM sends')).rows[0].n)
      if (now === n) break
      n = now
    }
    const fake0 = (await fake.stats()).delivered
    const before = Number((await db.query('SELECT count(*)::int AS n FROM sends')).rows[0].n)

    const pids = groupPids(pombo.pid)
    const workers0 = pids.slice(1).reduce((a, p) => a + cpuSeconds(p), 0)
    const serving0 = cpuSeconds(pombo.pid)
    const pg0 = postgresCpuSeconds()
    const redis0 = commandCpuSeconds('redis-server')
    const fakeCpu0 = cpuSeconds(fake.pid)
    const machine0 = machineBusySeconds()
    const t0 = Date.now()
    const w = await wrk({ url: `${pombo.url}/api/v1/notifications`, durationS: DURATION_S, lua })
    const loadEnd = Date.now()
    const backlogAtEnd = Number((await db.query('SELECT count(*)::int AS n FROM sends WHERE completed_at IS NULL')).rows[0].n)
    await waitClosed(db, 600_000)
    const serving = cpuSeconds(pombo.pid) - serving0
    const workers = pids.slice(1).reduce((a, p) => a + cpuSeconds(p), 0) - workers0
    const pgCpu = postgresCpuSeconds() - pg0
    const redisCpu = commandCpuSeconds('redis-server') - redis0
    const fakeCpu = cpuSeconds(fake.pid) - fakeCpu0
    const machine = machineBusySeconds() - machine0
    const r = (
      await db.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE successful = 1 AND remaining = 0)::int AS ok,
                count(*) FILTER (WHERE queued_at <= $2)::int AS during, max(completed_at) AS last
           FROM sends WHERE queued_at >= $1`,
        [new Date(t0 - 50), new Date(loadEnd)],
      )
    ).rows[0] as { n: number; ok: number; during: number; last: Date }
    const stored = Number((await db.query('SELECT count(*)::int AS n FROM sends')).rows[0].n) - before
    const delivered = (await fake.stats()).delivered - fake0
    const hwmMb = Math.max(...pids.map((p) => procStatus(p)?.hwmMb ?? 0))
    await db.end()
    const rawAfter = await rawRate(fake.url, ca, path, accessToken, template, DURATION_S)
    const e2eS = (r.last.getTime() - t0) / 1000
    return {
      accepted: r.during / ((loadEnd - t0) / 1000),
      during: r.during,
      stored,
      e2e: stored / e2eS,
      e2eS,
      drainS: (r.last.getTime() - loadEnd) / 1000,
      backlogAtEnd,
      allClosedOk: r.ok === stored && r.n === stored,
      delivered,
      wrk: w,
      cpuUs: ((serving + workers) / stored) * 1e6,
      servingUs: (serving / stored) * 1e6,
      workersUs: (workers / stored) * 1e6,
      pgUs: (pgCpu / stored) * 1e6,
      redisUs: (redisCpu / stored) * 1e6,
      fakeUs: (fakeCpu / Math.max(1, delivered)) * 1e6,
      machineUs: (machine / stored) * 1e6,
      hwmMb,
      rawBefore,
      rawAfter,
    }
  } finally {
    await pombo.stop()
  }
}

/** The process and its children (the group's worker processes), from /proc. */
function groupPids(pid: number): number[] {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
    return [pid, ...kids]
  } catch {
    return [pid]
  }
}

function sendsLua(app: { id: string; api_key: string }, ids: string[]): string {
  return `
      local ids = {${ids.map((x) => `"${x}"`).join(',')}}
      local n = 0
      wrk.method = "POST"
      wrk.headers["Content-Type"] = "application/json"
      wrk.headers["Authorization"] = "Bearer ${app.api_key}"
      request = function()
        n = n + 1
        local body = '{"app_id":"${app.id}","contents":${JSON.stringify(CONTENTS)},"data":{"n":' .. n .. '},"include_player_ids":["' .. ids[(n % #ids) + 1] .. '"]}'
        return wrk.format(nil, nil, nil, body)
      end`
}

/** The same load against an API-only process (its own namespace): sends accepted per second, nothing delivered. */
async function acceptedByApiAlone(): Promise<{ rate: number; cpuUs: number; pgUs: number }> {
  const api = await startPombo(
    9440,
    { PM_DEFAULT_PLAN: 'pro', PM_LIMIT_IP_PER_MIN: '0', PM_LIMIT_SENDS_PER_SEC: '1000000', PM_VAULT_KEY: VAULT_KEY },
    'api',
    process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
  )
  try {
    const app = await api.createApp({ rate_por_min: 10_000_000 })
    const ids = Array.from({ length: DEVICES }, () => randomUUID())
    await seed(api.schema, app.id, DEVICES, (i) => ids[i] as string)
    const lua = sendsLua(app, ids)
    await wrk({ url: `${api.url}/api/v1/notifications`, durationS: 2, lua })
    const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${api.schema}` })
    await db.connect()
    const cpu0 = cpuSeconds(api.pid)
    const pg0 = postgresCpuSeconds()
    const t0 = Date.now()
    await wrk({ url: `${api.url}/api/v1/notifications`, durationS: DURATION_S, lua })
    const end = Date.now()
    const cpu = cpuSeconds(api.pid) - cpu0
    const pgCpu = postgresCpuSeconds() - pg0
    const n = Number(
      (
        await db.query('SELECT count(*)::int AS n FROM sends WHERE queued_at >= $1 AND queued_at <= $2', [
          new Date(t0),
          new Date(end),
        ])
      ).rows[0].n,
    )
    await db.end()
    return { rate: n / ((end - t0) / 1000), cpuUs: (cpu / n) * 1e6, pgUs: (pgCpu / n) * 1e6 }
  } finally {
    await api.stop()
  }
}

/** Until no send is open (the backlog drained). */
async function waitClosed(db: pg.Client, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const open = Number((await db.query('SELECT count(*)::int AS n FROM sends WHERE completed_at IS NULL')).rows[0].n)
    if (open === 0) return
    if (Date.now() > until) throw new Error(`${open} sends still open after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
