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
// BENCH_SLICES_DEVICES sets the audience (default 100,000, a few minutes; the README's 2,000,000-device table, with
// BENCH_FCM_DELAY_MS=100 BENCH_SLICE_DEVICES=20000, took 27 minutes here), BENCH_FCM_DELAY_MS the fake's delay
// (default 200), BENCH_SLICES_PROCS the process counts (default 1,2,4).
import { mkdtempSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { DEFAULT_DELIVERY } from '../src/core/config'
import { fcmMessage } from '../src/providers/fcm-body'
import { testCa, trustEnv } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import { accessTokenFor, appWithFcm, loadavg, procStatus, rawRate, seed, VAULT_KEY } from './deliver'
import { followSend, sendToEveryone } from './lib/follow-send'
import { startFakeFcmProcess } from './lib/fake-fcm-process'
import { record } from './lib/figures'
import { DATABASE_URL, type Pombo, startPombo } from './lib/pombo'

const DEVICES = Number(process.env.BENCH_SLICES_DEVICES ?? 100_000)
const DELAY_MS = Number(process.env.BENCH_FCM_DELAY_MS ?? 200)
const SLICE_DEVICES = Number(process.env.BENCH_SLICE_DEVICES ?? Math.ceil(DEVICES / 32))
const PROCS = (process.env.BENCH_SLICES_PROCS ?? '1,2,4').split(',').map(Number)
const RAW_SECONDS = Number(process.env.BENCH_DURATION_S ?? 8)
const SEND_BODY = {
  contents: { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' },
  headings: { en: 'Loja' },
  data: { order: 42 },
}

interface Run {
  procs: number
  steady: number
  overall: number
  wall: number
  ok: boolean
  slicesBy: number
  /** The largest VmRSS of any worker process during the send (sampled every 200 ms). */
  peakRss: number
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
    const app = await appWithFcm(api, fake)
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
      t0 = Date.now()
      const sendId = await sendToEveryone(api.url, app, SEND_BODY)
      let peakRss = 0
      const f = await followSend({
        db,
        sendId,
        devices: DEVICES,
        fake,
        base,
        t0,
        timeoutMs: Math.max(300_000, DEVICES * 10),
        onSample: () => {
          for (const w of workers) peakRss = Math.max(peakRss, procStatus(w.pid)?.rssMb ?? 0)
        },
      })
      const row = f.row
      const owners = await db.query<{ n: number }>('SELECT count(DISTINCT owner)::int AS n FROM send_slices WHERE send_id = $1', [
        sendId,
      ])
      await Promise.all(workers.splice(0).map((w) => w.stop()))
      runs.push({
        procs,
        steady: f.steady,
        overall: f.overall,
        wall: f.wall,
        ok: row?.successful === DEVICES && row?.remaining === 0,
        slicesBy: owners.rows[0]?.n ?? 0,
        peakRss,
      })
      const x = runs.at(-1) as Run
      console.log(
        `${procs} worker process(es): steady ${x.steady.toFixed(0)}/s (10%→90%), ${x.overall.toFixed(0)}/s first→last, accepted→closed ${x.wall.toFixed(1)} s,` +
          ` slices delivered by ${x.slicesBy} process(es), successful ${row?.successful} of ${DEVICES}${x.ok ? '' : ' (NOT all delivered)'}, largest worker VmRSS ${peakRss.toFixed(0)} MB | load ${loadavg()}`,
      )
    }
    const one = runs[0]?.steady ?? 1
    console.log(
      `\n| worker processes | deliveries/s (steady) | first→last | accepted→closed | vs 1 process | largest worker RSS |\n|---|---|---|---|---|---|\n` +
        runs
          .map(
            (x) =>
              `| ${x.procs} | ${x.steady.toFixed(0)} | ${x.overall.toFixed(0)} | ${x.wall.toFixed(1)} s | ${(x.steady / one).toFixed(2)}× | ${x.peakRss.toFixed(0)} MB |`,
          )
          .join('\n'),
    )
    const shape = `${DEVICES.toLocaleString('en')}-device segment, fake answering after ${DELAY_MS} ms`
    const processes = (n: number) => `${n} worker process${n === 1 ? '' : 'es'}`
    const first = runs[0]
    for (const x of runs) {
      // The first count (1 by default) beside the raw client with one worker's window; the others beside the first.
      const base =
        x === first
          ? { baseline: `raw node:http2 client, ${inflight} in flight`, base: raw, baseUnit: 'requests/s' }
          : { baseline: processes(first?.procs ?? 1), base: one }
      record({ name: `${shape}, ${processes(x.procs)}`, pombo: x.steady, unit: 'deliveries/s', ...base })
    }
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
