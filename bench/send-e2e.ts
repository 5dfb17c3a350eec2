// `npm run bench -- send-e2e`: single-device sends end to end through the default `pombo serve` (every role in one
// process), delivered to the fake FCM (its own process, counters only). wrk posts for BENCH_DURATION_S with 64
// connections, every body distinct (a counter in `data`), one of 1,000 seeded devices per send. Figures:
//  - accepted/s: sends stored during the load over its duration (wrk's 2xx answers, checked against the table);
//  - delivered end to end/s: sends stored / (first request → the last send's completed_at), every send checked
//    closed with remaining 0 and successful 1, and the fake's accepted count equal to the sends;
//  - beside a raw node:http2 client to the same fake in the same run (before and after), and CPU per send of the
//    Pombo process and of Postgres;
//  - beside the same load against `pombo serve --roles api` alone in the same run (what the worker costs the API).
// Settings changed: PM_DEFAULT_PLAN=pro, PM_LIMIT_IP_PER_MIN=0, PM_LIMIT_SENDS_PER_SEC=1000000 (the quota still
// runs); the app's rate_por_min = 10,000,000; the fake advertises 1,000 streams per connection. BENCH_NODE_ARGS adds
// node flags to the Pombo process (--cpu-prof).
import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { fcmMessage } from '../src/delivery/providers/fcm-body'
import { testCa, trustEnv } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import { accessTokenFor, cli, cpuSeconds, loadavg, postgresCpuSeconds, procStatus, rawRate, seed } from './deliver'
import { startFakeFcmProcess } from './lib/fake-fcm-process'
import { DATABASE_URL, REDIS_URL, startPombo } from './lib/pombo'
import { ensureWrk, wrk } from './lib/wrk'

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8)
const DEVICES = 1_000
const VAULT_KEY = 'cd'.repeat(32)
const CONTENTS = { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' }

export async function sendE2e(): Promise<void> {
  ensureWrk()
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa()
  const fake = await startFakeFcmProcess({ maxConcurrentStreams: 1000 })
  const pombo = await startPombo(
    9430,
    {
      PM_DEFAULT_PLAN: 'pro',
      PM_LIMIT_IP_PER_MIN: '0',
      PM_LIMIT_SENDS_PER_SEC: '1000000',
      PM_VAULT_KEY: VAULT_KEY,
      PM_FCM_BASE_URL: fake.url,
      ...trustEnv(),
    },
    'api,worker,dashboard',
    process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [], // e.g. --cpu-prof --cpu-prof-dir=/tmp/prof
  )
  try {
    const app = await pombo.createApp({ rate_por_min: 10_000_000 })
    const saFile = join(process.env.PM_TEST_TLS_DIR, `sa-${app.id}.json`)
    writeFileSync(saFile, JSON.stringify(fake.serviceAccount))
    await cli(['credentials', 'fcm', app.id, saFile], { DATABASE_URL, REDIS_URL, PM_DB_SCHEMA: pombo.schema, PM_REDIS_PREFIX: pombo.prefix, PM_VAULT_KEY: VAULT_KEY })
    const ids = Array.from({ length: DEVICES }, () => randomUUID())
    await seed(pombo.schema, app.id, DEVICES, (i) => ids[i] as string)

    // The raw client posts what the engine posts for one of these sends.
    const push = { ...pushFor({ contents: CONTENTS, data: { n: 1 } }), sendId: randomUUID(), proof: 'x'.repeat(32) }
    const template = JSON.stringify(fcmMessage({ deviceId: randomUUID(), token: '@TOKEN@', deviceType: 1 }, push, Date.now()))
    const path = `/v1/projects/${fake.serviceAccount.project_id}/messages:send`
    const accessToken = await accessTokenFor(fake.serviceAccount as never, ca)
    const load = [loadavg()]
    const rawBefore = await rawRate(fake.url, ca, path, accessToken, template, DURATION_S)

    const lua = sendsLua(app, ids)
    // A short warm-up (JIT, pools, the FCM session and token), then the tables are emptied of it.
    await wrk({ url: `${pombo.url}/api/v1/notifications`, durationS: 2, lua })
    const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${pombo.schema}` })
    await db.connect()
    await waitClosed(db, 120_000)
    const fake0 = (await fake.stats()).delivered
    const before = Number((await db.query('SELECT count(*)::int AS n FROM sends')).rows[0].n)

    const cpu0 = cpuSeconds(pombo.pid)
    const pg0 = postgresCpuSeconds()
    const t0 = Date.now()
    const w = await wrk({ url: `${pombo.url}/api/v1/notifications`, durationS: DURATION_S, lua })
    const loadEnd = Date.now()
    const backlogAtEnd = Number((await db.query('SELECT count(*)::int AS n FROM sends WHERE completed_at IS NULL')).rows[0].n)
    await waitClosed(db, 600_000)
    const cpu = cpuSeconds(pombo.pid) - cpu0
    const pgCpu = postgresCpuSeconds() - pg0
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
    const rss = procStatus(pombo.pid)
    await db.end()
    load.push(loadavg())
    const rawAfter = await rawRate(fake.url, ca, path, accessToken, template, DURATION_S)
    load.push(loadavg())
    const apiOnly = await acceptedByApiAlone()

    const accepted = r.during / ((loadEnd - t0) / 1000)
    const e2eS = (r.last.getTime() - t0) / 1000
    const e2e = stored / e2eS
    const raw = (rawBefore + rawAfter) / 2
    console.log(`send-e2e: default \`pombo serve\` (api, worker, dashboard in one process); wrk 64 connections, ${DURATION_S} s, distinct bodies, 1 of ${DEVICES} devices per send`)
    console.log(
      `accepted ${accepted.toFixed(0)}/s (${r.during} sends stored during the load, ${stored} in all; wrk ${w.rps.toFixed(0)} req/s, p50 ${w.p50Ms.toFixed(1)} ms, p99 ${w.p99Ms.toFixed(1)} ms, non-2xx ${w.non2xx}, errors ${w.errors})` +
        ` | target ≥ 6,000/s`,
    )
    console.log(
      `delivered end to end ${e2e.toFixed(0)}/s (first request → last send closed in ${e2eS.toFixed(1)} s; ${backlogAtEnd} sends still open when the load stopped,` +
        ` drained ${((r.last.getTime() - loadEnd) / 1000).toFixed(1)} s later) | every send closed with successful 1: ${r.ok === stored && r.n === stored ? 'yes' : `NO (${r.ok} of ${stored}, ${r.n} rows)`};` +
        ` fake FCM accepted ${delivered} | target ≥ 5,000/s`,
    )
    console.log(
      `the same load against \`pombo serve --roles api\` alone (no worker, nothing delivered): ${apiOnly.rate.toFixed(0)}/s accepted, CPU per send: pombo ${apiOnly.cpuUs.toFixed(0)} µs, Postgres ${apiOnly.pgUs.toFixed(0)} µs | with the worker in the process: ${(accepted / apiOnly.rate).toFixed(2)} of that`,
    )
    console.log(
      `raw node:http2 client to the same fake: ${rawBefore.toFixed(0)}/s before, ${rawAfter.toFixed(0)}/s after | end-to-end deliveries = ${(e2e / raw).toFixed(2)} of the raw client's mean`,
    )
    console.log(
      `CPU per send (load + drain): pombo ${((cpu / stored) * 1e6).toFixed(0)} µs, Postgres ${((pgCpu / stored) * 1e6).toFixed(0)} µs | pombo VmHWM ${rss?.hwmMb.toFixed(0)} MB | load average ${load.join(' / ')} on ${cpus().length} cores`,
    )
  } finally {
    await pombo.stop()
    await fake.stop()
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
  const api = await startPombo(9440, { PM_DEFAULT_PLAN: 'pro', PM_LIMIT_IP_PER_MIN: '0', PM_LIMIT_SENDS_PER_SEC: '1000000', PM_VAULT_KEY: VAULT_KEY }, 'api')
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
    const n = Number((await db.query('SELECT count(*)::int AS n FROM sends WHERE queued_at >= $1 AND queued_at <= $2', [new Date(t0), new Date(end)])).rows[0].n)
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
