// `npm run bench -- register`: device registration (POST /api/v1/players) and the 1,000,000-device export.
// 1. Saturation: wrk, unique tokens per request, against Pombo and against a bare uWebSockets.js POST that parses the
//    same JSON (bench/bare-uws.ts /json), alternating rounds, medians. After the runs the table is counted: every 200
//    must be a durable row ("durable registrations per second" = rows written / seconds).
// 2. Fixed offered load of 5,000/s: autocannon with overallRate (latencies corrected for coordinated omission).
// 3. Export: 1,000,000 devices seeded with COPY, then csv_export timed until the file is served, the server's RSS
//    sampled every 100 ms from /proc.
// Settings changed (docs/spec/contract.md): PM_LIMIT_IP_PER_MIN=0 (the per-IP limit would refuse the load generator) and
// PM_LIMIT_REGISTRATIONS_PER_HOUR=100000000 (the per-app hour would refuse after 50,000). Both are still counted
// (the hourly count goes to Redis on every registration).
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { startBare } from './lib/bare'
import { record } from './lib/figures'
import { DATABASE_URL, type Pombo, startPombo } from './lib/pombo'
import { median } from './lib/report'
import { ensureWrk, type WrkResult, wrk } from './lib/wrk'
import { copyRows } from './lib/copy-rows'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8)
// 256 connections: enough requests in flight for batches to fill (128 measured ~20k/s, 256 ~25k/s, 512 no better).
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 256)
const FIXED_RATE = Number(process.env.BENCH_RATE ?? 5_000)
const EXPORT_ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 1_000_000)

/** A body like an SDK's (~290 bytes): the same bytes go to the baseline. */
function bodyFor(appId: string, identifier: string): string {
  return JSON.stringify({
    app_id: appId,
    device_type: 1,
    identifier,
    app_version: '1.4.2',
    device_model: 'Pixel 8',
    language: 'pt',
    timezone: -10800,
    sdk_versao: '0.6.1',
    device_os: 'Android 14',
    sessoes: 3,
  })
}

/** wrk script: POST with a token unique to the run, the thread and the request. */
function wrkScript(appId: string, path: string): string {
  const tpl = bodyFor(appId, '__TOKEN__').replace(/"/g, '\\"').replace('__TOKEN__', '%s')
  const run = randomBytes(4).toString('hex')
  return `
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
local tid = 0
function setup(thread) thread:set("tid", math.random(1, 1e9)) end
function init(args) tid = tid end
request = function()
  n = n + 1
  local body = string.format("${tpl}", "${run}-" .. tostring(tid) .. "-" .. tostring(n))
  return wrk.format(nil, "${path}", nil, body)
end
`
}

async function fixedRate(
  url: string,
  appId: string,
  path: string,
): Promise<{ rps: number; p50: number; p99: number; non2xx: number }> {
  const run = randomBytes(4).toString('hex')
  let n = 0
  const r = await autocannon({
    url,
    connections: 64,
    duration: DURATION_S,
    overallRate: FIXED_RATE,
    requests: [
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodyFor(appId, `fixed-${run}-${n++}`) }),
      },
    ],
  })
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors }
}

async function devices(pombo: Pombo, appId: string): Promise<number> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  const r = await c.query(`SELECT count(*)::int AS n FROM ${pombo.schema}.devices WHERE app_id = $1`, [appId])
  await c.end()
  return r.rows[0].n
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : Number.NaN
}

async function seed(schema: string, appId: string, n: number): Promise<number> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  const t0 = performance.now()
  const now = new Date().toISOString()
  await copyRows(
    c,
    `COPY ${schema}.devices (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, last_active, created_at, updated_at, invalid_identifier) FROM STDIN`,
    n,
    (i) => {
      const uid = i % 4 === 0 ? `user-${i}` : i % 97 === 0 ? '=cmd|calc' : '\\N'
      return `${appId}\t${crypto.randomUUID()}\tseed-${i}\t1\t${i % 50 === 0 ? 't' : 'f'}\tfcm\t${uid}\t${now}\t${now}\t${now}\t${i % 10 === 0 ? 't' : 'f'}\n`
    },
  )
  await c.query(`ANALYZE ${schema}.devices`)
  await c.end()
  return (performance.now() - t0) / 1000
}

async function exportBench(pombo: Pombo): Promise<void> {
  const app = await pombo.createApp({ nome: 'export' })
  const seedS = await seed(pombo.schema, app.id, EXPORT_ROWS)
  console.log(`export: seeded ${EXPORT_ROWS.toLocaleString('en')} devices with COPY in ${seedS.toFixed(1)} s`)
  const samples: number[] = [rssMb(pombo.pid)]
  const timer = setInterval(() => samples.push(rssMb(pombo.pid)), 100)
  const t0 = performance.now()
  const res = await fetch(`${pombo.url}/api/v1/players/csv_export?app_id=${app.id}`, {
    method: 'POST',
    headers: { authorization: `Basic ${app.api_key}` },
  })
  const answer = (await res.json()) as { csv_file_url: string; pm_pronto_em_s_estimado: number }
  const answeredMs = performance.now() - t0
  const path = new URL(answer.csv_file_url).pathname
  let status = 404
  while (status === 404) {
    await new Promise((r) => setTimeout(r, 50))
    const head = await fetch(pombo.url + path)
    status = head.status
    await head.body?.cancel()
  }
  const readyS = (performance.now() - t0) / 1000
  record({ name: `export of ${EXPORT_ROWS.toLocaleString('en')} devices, file ready`, pombo: readyS, unit: 's' })
  const t1 = performance.now()
  const file = await fetch(pombo.url + path)
  const bytes = (await file.arrayBuffer()).byteLength
  const downloadS = (performance.now() - t1) / 1000
  clearInterval(timer)
  samples.push(rssMb(pombo.pid))
  const before = samples[0] as number
  const peak = Math.max(...samples)
  console.log(
    `export: answered in ${answeredMs.toFixed(0)} ms (estimate ${answer.pm_pronto_em_s_estimado} s), file ready in ${readyS.toFixed(1)} s ` +
      `(target < 20 s), ${(bytes / 1e6).toFixed(1)} MB gzip downloaded in ${downloadS.toFixed(2)} s (status ${file.status})`,
  )
  console.log(
    `export: server RSS before ${before.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, after ${(samples.at(-1) as number).toFixed(0)} MB ` +
      `(${samples.length} samples every 100 ms)`,
  )
}

function line(name: string, r: WrkResult): string {
  return `${name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms${r.errors || r.non2xx ? `  errors ${r.errors} non-2xx ${r.non2xx}` : ''}`
}

export async function register(): Promise<void> {
  ensureWrk()
  const exportDir = join(tmpdir(), `pombo-bench-exports-${randomBytes(4).toString('hex')}`)
  const pombo = await startPombo(9300, {
    ...JSON.parse(process.env.BENCH_POMBO_ENV ?? '{}'),
    PM_LIMIT_IP_PER_MIN: '0',
    PM_LIMIT_REGISTRATIONS_PER_HOUR: '100000000',
    PM_EXPORT_DIR: exportDir,
  })
  const bare = await startBare(9310)
  try {
    const app = await pombo.createApp()
    console.log(`register: settings changed: PM_LIMIT_IP_PER_MIN=0 PM_LIMIT_REGISTRATIONS_PER_HOUR=100000000`)
    // Warm-up: JIT, pool connections, caches.
    await wrk({
      url: `${pombo.url}/api/v1/players`,
      durationS: 2,
      connections: CONNECTIONS,
      lua: wrkScript(app.id, '/api/v1/players'),
    })
    await wrk({ url: `${bare.url}/json`, durationS: 1, connections: CONNECTIONS, lua: wrkScript(app.id, '/json') })

    const saturation = process.env.BENCH_SKIP_SATURATION !== '1'
    const base: WrkResult[] = []
    const head: WrkResult[] = []
    let rows0 = await devices(pombo, app.id)
    let okTotal = 0
    let seconds = 0
    for (let i = 0; i < (saturation ? ROUNDS : 0); i++) {
      base.push(
        await wrk({ url: `${bare.url}/json`, durationS: DURATION_S, connections: CONNECTIONS, lua: wrkScript(app.id, '/json') }),
      )
      const h = await wrk({
        url: `${pombo.url}/api/v1/players`,
        durationS: DURATION_S,
        connections: CONNECTIONS,
        lua: wrkScript(app.id, '/api/v1/players'),
      })
      head.push(h)
      okTotal += Math.round(h.rps * DURATION_S) - h.non2xx
      seconds += DURATION_S
    }
    const rows = (await devices(pombo, app.id)) - rows0
    const b = median(base)
    const h = median(head)
    if (saturation)
      console.log(`register: saturation, wrk -t1 -c${CONNECTIONS} -d${DURATION_S}s, ${ROUNDS} alternating rounds, medians`)
    if (saturation) console.log(line('bare uWS POST + JSON.parse', b))
    if (saturation) console.log(line('POST /api/v1/players', h))
    if (saturation) {
      record({
        name: 'registrations at saturation, durable',
        pombo: rows / seconds,
        unit: 'registrations/s',
        baseline: 'bare uWS POST + JSON.parse',
        base: b.rps,
        baseUnit: 'req/s',
      })
    }
    if (saturation)
      console.log(
        `register: ratio pombo/bare ${(h.rps / b.rps).toFixed(3)}; durable: ${rows.toLocaleString('en')} new rows for ~${okTotal.toLocaleString('en')} answers 200 => ${(rows / seconds).toFixed(0)} durable registrations/s (target >= 10,000)`,
      )

    rows0 = await devices(pombo, app.id)
    const fb = await fixedRate(bare.url, app.id, '/json')
    const fh = await fixedRate(pombo.url, app.id, '/api/v1/players')
    const fixedRows = (await devices(pombo, app.id)) - rows0
    console.log(
      `register: fixed offered load ${FIXED_RATE}/s for ${DURATION_S}s (autocannon, 64 connections, coordinated omission corrected)`,
    )
    console.log(
      `${'bare uWS POST + JSON.parse'.padEnd(30)} ${fb.rps.toFixed(0).padStart(7)} req/s  p50 ${fb.p50} ms  p99 ${fb.p99} ms`,
    )
    const offered = FIXED_RATE.toLocaleString('en')
    record({
      name: `registrations at ${offered}/s offered, p99`,
      pombo: fh.p99,
      unit: 'ms',
      baseline: `bare uWS at ${offered}/s`,
      base: fb.p99,
    })
    console.log(
      `${'POST /api/v1/players'.padEnd(30)} ${fh.rps.toFixed(0).padStart(7)} req/s  p50 ${fh.p50} ms  p99 ${fh.p99} ms (target p99 < 25 ms)${fh.non2xx ? `  non-2xx/errors ${fh.non2xx}` : ''}; ${fixedRows.toLocaleString('en')} rows written`,
    )

    if (EXPORT_ROWS > 0) await exportBench(pombo)
  } finally {
    await bare.stop()
    await pombo.stop()
  }
}
