// `npm run bench -- slices`: one big segment send delivered by 1, 2 and 4 worker processes (`pombo serve --roles
// worker`, sharing one deployment) to a fake FCM (its own process) that answers every message after a fixed delay,
// so the provider's round trip, not this machine's two cores, is what more processes overcome: one process keeps at
// most PM_INFLIGHT_PER_APP requests of an app in flight, so alone it delivers at most that many per delay.
// The send is cut into slices (PM_SLICE_DEVICES) that every worker with room leases; the app's pace is shared.
// Figures per process count: deliveries per second (the fake's accepted count over time, steady part 10%→90%), the
// first→last rate and the send's accepted→closed time; beside, in the same run, a raw node:http2 client keeping
// the same number of requests in flight as one worker (its ceiling against this fake), and the ideal per-process
// figure (in flight / delay).
// Settings changed: the app's rate_por_min = 10,000,000; PM_DEFAULT_PLAN=pro; PM_LIMIT_IP_PER_MIN=0;
// PM_SLICE_DEVICES (BENCH_SLICE_DEVICES, default audience / 32, so 4 workers have slices to share to the end).
// BENCH_SLICES_DEVICES sets the audience (default 100,000: at one process and a 200 ms round trip 2,000,000 would
// take half an hour here), BENCH_FCM_DELAY_MS the fake's delay (default 200), BENCH_SLICES_PROCS the process counts
// (default 1,2,4).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { DEFAULT_DELIVERY } from '../src/config'
import { fcmMessage } from '../src/delivery/providers/fcm-body'
import { testCa, trustEnv } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import { accessTokenFor, cli, loadavg, rawRate, seed } from './deliver'
import { startFakeFcmProcess } from './lib/fake-fcm-process'
import { DATABASE_URL, type Pombo, REDIS_URL, startPombo } from './lib/pombo'

const DEVICES = Number(process.env.BENCH_SLICES_DEVICES ?? 100_000)
const DELAY_MS = Number(process.env.BENCH_FCM_DELAY_MS ?? 200)
const SLICE_DEVICES = Number(process.env.BENCH_SLICE_DEVICES ?? Math.ceil(DEVICES / 32))
const PROCS = (process.env.BENCH_SLICES_PROCS ?? '1,2,4').split(',').map(Number)
const RAW_SECONDS = Number(process.env.BENCH_DURATION_S ?? 8)
const VAULT_KEY = 'cd'.repeat(32)
const SEND_BODY = { contents: { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' }, headings: { en: 'Loja' }, data: { order: 42 } }

interface Run {
  procs: number
  steady: number
  overall: number
  wall: number
  ok: boolean
  slicesBy: number
}

export async function slices(): Promise<void> {
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa()
  const fake = await startFakeFcmProcess({ maxConcurrentStreams: 1000, delayMs: DELAY_MS })
  const api = await startPombo(9440, { PM_DEFAULT_PLAN: 'pro', PM_LIMIT_IP_PER_MIN: '0', PM_VAULT_KEY: VAULT_KEY })
  const shared = { schema: api.schema, prefix: api.prefix }
  const workerEnv = { PM_FCM_BASE_URL: fake.url, PM_VAULT_KEY: VAULT_KEY, PM_SLICE_DEVICES: String(SLICE_DEVICES), ...trustEnv() }
  const workers: Pombo[] = []
  const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${api.schema}` })
  await db.connect()
  try {
    const app = await api.createApp({ rate_por_min: 10_000_000 })
    const saFile = join(process.env.PM_TEST_TLS_DIR, `sa-${app.id}.json`)
    writeFileSync(saFile, JSON.stringify(fake.serviceAccount))
    await cli(['credentials', 'fcm', app.id, saFile], { DATABASE_URL, REDIS_URL, PM_DB_SCHEMA: shared.schema, PM_REDIS_PREFIX: shared.prefix, PM_VAULT_KEY: VAULT_KEY })
    let t0 = Date.now()
    await seed(api.schema, app.id, DEVICES)
    const inflight = Number(process.env.PM_INFLIGHT_PER_APP ?? DEFAULT_DELIVERY.inflightPerApp)
    console.log(
      `slices: ${DEVICES} devices seeded with COPY in ${((Date.now() - t0) / 1000).toFixed(1)} s | fake FCM answers after ${DELAY_MS} ms |` +
        ` PM_SLICE_DEVICES=${SLICE_DEVICES} (${Math.ceil(DEVICES / SLICE_DEVICES)} slices), PM_INFLIGHT_PER_APP=${inflight},` +
        ` app rate_por_min=10000000, PM_DEFAULT_PLAN=pro, PM_LIMIT_IP_PER_MIN=0 | load ${loadavg()} on ${cpus().length} cores`,
    )

    const push = { ...pushFor(SEND_BODY), sendId: randomUUID(), proof: 'x'.repeat(32) }
    const template = JSON.stringify(fcmMessage({ deviceId: randomUUID(), token: '@TOKEN@', deviceType: 1 }, push, Date.now()))
    const path = `/v1/projects/${fake.serviceAccount.project_id}/messages:send`
    const accessToken = await accessTokenFor(fake.serviceAccount as never, ca)
    const raw = await rawRate(fake.url, ca, path, accessToken, template, RAW_SECONDS)

    const runs: Run[] = []
    for (const procs of PROCS) {
      for (let i = 0; i < procs; i++) workers.push(await startPombo(0, workerEnv, 'worker', [], { shared }))
      const base = (await fake.stats()).delivered
      const samples: Array<{ at: number; n: number }> = []
      t0 = Date.now()
      const r = await fetch(`${api.url}/api/v1/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ app_id: app.id, included_segments: ['Subscribed Users'], ...SEND_BODY }),
      })
      const sent = (await r.json()) as { id?: string }
      if (r.status !== 200 || !sent.id) throw new Error(`send: ${r.status} ${JSON.stringify(sent)}`)
      let row: Record<string, unknown> | undefined
      let lastPoll = 0
      const deadline = Date.now() + Math.max(300_000, DEVICES * 10)
      for (;;) {
        const n = (await fake.stats()).delivered - base
        samples.push({ at: Date.now(), n })
        if (Date.now() - lastPoll > 500 || n >= DEVICES) {
          lastPoll = Date.now()
          row = (await db.query('SELECT * FROM sends WHERE id = $1', [sent.id])).rows[0]
          if (row?.completed_at) break
        }
        if (Date.now() > deadline) throw new Error(`send did not close: ${n} delivered, ${JSON.stringify(row)}`)
        await new Promise((res) => setTimeout(res, 200))
      }
      const wall = (Date.now() - t0) / 1000
      const owners = await db.query<{ n: number }>('SELECT count(DISTINCT owner)::int AS n FROM send_slices WHERE send_id = $1', [sent.id])
      await Promise.all(workers.splice(0).map((w) => w.stop()))
      const at = (frac: number) => samples.find((s) => s.n >= DEVICES * frac) ?? (samples.at(-1) as { at: number; n: number })
      const lo = at(0.1)
      const hi = at(0.9)
      const first = samples.find((s) => s.n > 0) ?? lo
      const last = samples.at(-1) as { at: number; n: number }
      runs.push({
        procs,
        steady: (hi.n - lo.n) / Math.max(0.001, (hi.at - lo.at) / 1000),
        overall: last.n / Math.max(0.001, (last.at - first.at) / 1000),
        wall,
        ok: row?.successful === DEVICES && row?.remaining === 0,
        slicesBy: owners.rows[0]?.n ?? 0,
      })
      const x = runs.at(-1) as Run
      console.log(
        `${procs} worker process(es): steady ${x.steady.toFixed(0)}/s (10%→90%), ${x.overall.toFixed(0)}/s first→last, accepted→closed ${wall.toFixed(1)} s,` +
          ` slices delivered by ${x.slicesBy} process(es), successful ${row?.successful} of ${DEVICES}${x.ok ? '' : ' (NOT all delivered)'} | load ${loadavg()}`,
      )
    }
    const one = runs[0]?.steady ?? 1
    console.log(
      `\n| worker processes | deliveries/s (steady) | first→last | accepted→closed | vs 1 process |\n|---|---|---|---|---|\n` +
        runs.map((x) => `| ${x.procs} | ${x.steady.toFixed(0)} | ${x.overall.toFixed(0)} | ${x.wall.toFixed(1)} s | ${(x.steady / one).toFixed(2)}× |`).join('\n'),
    )
    console.log(
      `same run: raw node:http2 client with 256 in flight ${raw.toFixed(0)}/s against this fake; ideal one process ${((inflight * 1000) / DELAY_MS).toFixed(0)}/s (${inflight} in flight / ${DELAY_MS} ms)`,
    )
  } finally {
    await db.end()
    await Promise.all(workers.map((w) => w.stop()))
    await api.stop()
    await fake.stop()
  }
}
