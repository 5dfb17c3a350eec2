// `npm run bench -- deliver`: a 200,000-device segment send (`Subscribed Users`) delivered by one worker process
// (`pombo serve --roles worker`) to the fake FCM (its own process, counters only), beside a raw node:http2 client
// posting bodies of the same size to the same fake in the same run: BENCH_ROUNDS (3) sends, each by a fresh worker,
// alternating with raw runs; each send's ratio is against the raw runs on either side, and their median is the
// figure. Figures: deliveries per second (the fake's accepted count over time, steady
// part 10%→90%), the send's own duration, the worker's peak RSS (VmRSS sampled every 200 ms, and the kernel's
// VmHWM) and CPU, and the machine's load average (other work on a shared machine skews every figure).
// Settings changed: the app's rate_por_min = 10,000,000 (its pace must not be the limit); PM_DEFAULT_PLAN=pro (the
// free plan's MAU gate would refuse a 200,000-device send); PM_LIMIT_IP_PER_MIN=0; the worker keeps the engine's
// defaults unless PM_INFLIGHT_PER_APP / PM_DELIVERY_PAGE / PM_PG_POOL are set (then printed; 1024 / 2000 measured no
// better than 256 / 500 here, at more CPU per delivery and ~30 MB more); the fake advertises 1,000 concurrent streams
// per connection (bench/providers.ts does the same). BENCH_DELIVER_DEVICES changes the audience,
// BENCH_DURATION_S the raw client's runs, BENCH_WORKER_NODE_ARGS adds node flags to the worker (--cpu-prof).
import { execFile } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import http2 from 'node:http2'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import jwt from 'jsonwebtoken'
import pg from 'pg'
import { fcmMessage } from '../src/providers/fcm-body'
import { testCa, trustEnv } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import { WORKER_SEMI_SPACE_FLAG } from '../src/group/supervisor'
import { copyRows } from './lib/copy-rows'
import { record } from './lib/figures'
import { medianOf } from './lib/report'
import { type Followed, followSend, sendToEveryone } from './lib/follow-send'
import { startFakeFcmProcess } from './lib/fake-fcm-process'
import { DATABASE_URL, REDIS_URL, ROOT, startPombo } from './lib/pombo'

const DEVICES = Number(process.env.BENCH_DELIVER_DEVICES ?? 200_000)
const RAW_SECONDS = Number(process.env.BENCH_DURATION_S ?? 8)
const RAW_IN_FLIGHT = 256
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** The vault key of every benchmark's Pombo processes. */
export const VAULT_KEY = 'cd'.repeat(32)
const SEND_BODY = {
  contents: { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' },
  headings: { en: 'Loja' },
  data: { order: 42, tag: 'x' },
}

/** An FCM registration token's shape and length (~163 characters), unique per device. */
const TOKEN_TAIL = randomBytes(105).toString('base64url')
export const token = (i: number) => `${i.toString(36).padStart(11, '0')}:APA91b${TOKEN_TAIL}`

export async function seed(
  schema: string,
  appId: string,
  n: number,
  id: (i: number) => string = () => randomUUID(),
): Promise<void> {
  const c = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` })
  await c.connect()
  try {
    const now = new Date().toISOString()
    // An established audience: every device already had a push accepted (push_accepted_at), so the run measures the
    // steady state, not the once-per-device mark of a first accepted push (src/delivery/outcomes.ts).
    await copyRows(
      c,
      'COPY devices (app_id, id, identifier, device_type, sandbox, transporte, language, notification_types, invalid_identifier, last_active, created_at, updated_at, push_accepted_at) FROM STDIN',
      n,
      (j) => `${appId}\t${id(j)}\t${token(j)}\t1\tf\tfcm\tpt\t1\tf\t${now}\t${now}\t${now}\t${now}\n`,
    )
    await c.query('VACUUM ANALYZE devices')
  } finally {
    await c.end()
  }
}

export function cli(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(`pombo ${args[0]}: ${stderr || err.message}`)) : resolve(stdout)),
    ),
  )
}

/** An app of `api`'s deployment with an FCM credential for the fake, stored through the real CLI; the app's
 *  rate_por_min is high enough never to pace. */
export async function appWithFcm(
  api: { schema: string; prefix: string; createApp(body: Record<string, unknown>): Promise<{ id: string; api_key: string }> },
  fake: { serviceAccount: unknown },
): Promise<{ id: string; api_key: string }> {
  const app = await api.createApp({ rate_por_min: 10_000_000 })
  const saFile = join(process.env.PM_TEST_TLS_DIR as string, `sa-${app.id}.json`)
  writeFileSync(saFile, JSON.stringify(fake.serviceAccount))
  await cli(['credentials', 'fcm', app.id, saFile], {
    DATABASE_URL,
    REDIS_URL,
    PM_DB_SCHEMA: api.schema,
    PM_REDIS_PREFIX: api.prefix,
    PM_VAULT_KEY: VAULT_KEY,
    // The deployment's provider is the fake, on the host of the account's token_uri (src/providers/endpoints.ts).
    PM_FCM_BASE_URL: new URL((fake.serviceAccount as { token_uri: string }).token_uri).origin,
  })
  return app
}

/** CPU per accepted request of each raw-client run (the bench process does nothing else meanwhile). */
export const rawCpuUs: number[] = []
/** Every core's busy time per accepted request of each raw-client run (the fake and everything else included). */
export const rawMachineUs: number[] = []

/** A raw node:http2 client: one session, RAW_IN_FLIGHT requests in flight, one prebuilt body per request. */
export async function rawRate(
  url: string,
  ca: string,
  path: string,
  accessToken: string,
  template: string,
  seconds: number,
): Promise<number> {
  const session = http2.connect(url, { ca: [ca] })
  session.on('error', () => {})
  let seq = 0
  let ok = 0
  const one = () =>
    new Promise<void>((resolve) => {
      const body = template.replace('@TOKEN@', token(10_000_000 + seq++))
      const s = session.request({
        ':method': 'POST',
        ':path': path,
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
      })
      let status = 0
      s.on('response', (h) => {
        status = Number(h[':status'])
      })
      s.on('data', () => {})
      s.on('error', () => resolve())
      s.on('end', () => {
        if (status === 200) ok++
        resolve()
      })
      s.end(body)
    })
  const run = async (ms: number) => {
    const end = Date.now() + ms
    await Promise.all(
      Array.from({ length: RAW_IN_FLIGHT }, async () => {
        while (Date.now() < end) await one()
      }),
    )
  }
  await run(2_000) // warm-up (the fake JIT-compiles too)
  ok = 0
  const started = Date.now()
  const cpu0 = process.cpuUsage()
  const machine0 = machineBusySeconds()
  await run(seconds * 1000)
  const cpu = process.cpuUsage(cpu0)
  rawMachineUs.push(((machineBusySeconds() - machine0) / Math.max(1, ok)) * 1e6)
  const rate = ok / ((Date.now() - started) / 1000)
  rawCpuUs.push((cpu.user + cpu.system) / Math.max(1, ok))
  await new Promise<void>((resolve) => session.close(() => resolve()))
  return rate
}

export async function accessTokenFor(
  sa: { token_uri: string; client_email: string; private_key: string; private_key_id: string },
  ca: string,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const assertion = jwt.sign(
    {
      iss: sa.client_email,
      scope: 'https://www.googleapis.com/auth/firebase.messaging',
      aud: sa.token_uri,
      iat: now,
      exp: now + 3600,
    },
    sa.private_key,
    { algorithm: 'RS256', keyid: sa.private_key_id },
  )
  const u = new URL(sa.token_uri)
  const session = http2.connect(u.origin, { ca: [ca] })
  try {
    const text = await new Promise<string>((resolve, reject) => {
      const s = session.request({ ':method': 'POST', ':path': u.pathname, 'content-type': 'application/x-www-form-urlencoded' })
      const chunks: Buffer[] = []
      s.on('data', (c: Buffer) => chunks.push(c))
      s.on('end', () => resolve(Buffer.concat(chunks).toString()))
      s.on('error', reject)
      s.end(new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString())
    })
    const t = JSON.parse(text) as { access_token?: string }
    if (!t.access_token) throw new Error(`no access token: ${text}`)
    return t.access_token
  } finally {
    session.close()
  }
}

export function loadavg(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ')[0] as string
}

export function procStatus(pid: number): { rssMb: number; hwmMb: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0)
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 }
  } catch {
    return null
  }
}

/** CPU seconds of every Postgres server process (backends, WAL writer, checkpointer …) on the machine. */
export function postgresCpuSeconds(): number {
  return commandCpuSeconds('postgres')
}

/** CPU seconds of every process on the machine whose command name (/proc/<pid>/stat) is `comm`. */
export function commandCpuSeconds(comm: string): number {
  let total = 0
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      if (!stat.includes(`(${comm})`)) continue
      total += cpuSeconds(Number(d))
    } catch {
      // the process ended meanwhile
    }
  }
  return total
}

/** CPU seconds the whole machine has been busy (every core, every process: /proc/stat less idle, iowait and steal). */
export function machineBusySeconds(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = f
  return (user + nice + system + irq + softirq) / 100
}

/** CPU seconds (user + system) the process has used. */
export function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return 0
  }
}

interface Round {
  delivered: number
  steady: number
  overall: number
  wall: number
  row: Record<string, unknown> | undefined
  cpuUs: number
  fakeUs: number
  pgUs: number
  /** Every core's busy time over the send (the API process, Redis, the bench itself and anything else included). */
  machineUs: number
  peakRss: number
  hwm: number
}

/** One segment send to the whole audience, delivered by the worker `pid`: its rate, cost and memory. */
async function oneSend(
  api: Awaited<ReturnType<typeof startPombo>>,
  app: { id: string; api_key: string },
  pid: number,
  fake: Awaited<ReturnType<typeof startFakeFcmProcess>>,
): Promise<Round> {
  const cpu0 = cpuSeconds(pid)
  const fakeCpu0 = cpuSeconds(fake.pid)
  const pgCpu0 = postgresCpuSeconds()
  const machine0 = machineBusySeconds()
  const base = (await fake.stats()).delivered
  let peakRss = 0
  const t0 = Date.now()
  const sendId = await sendToEveryone(api.url, app, SEND_BODY)
  const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${api.schema}` })
  await db.connect()
  let f: Followed
  try {
    const onSample = () => {
      peakRss = Math.max(peakRss, procStatus(pid)?.rssMb ?? 0)
    }
    f = await followSend({ db, sendId, devices: DEVICES, fake, base, t0, timeoutMs: Math.max(120_000, DEVICES * 2), onSample })
  } finally {
    await db.end()
  }
  const us = (secs: number) => (secs / DEVICES) * 1e6
  return {
    ...f,
    cpuUs: us(cpuSeconds(pid) - cpu0),
    fakeUs: us(cpuSeconds(fake.pid) - fakeCpu0),
    pgUs: us(postgresCpuSeconds() - pgCpu0),
    machineUs: us(machineBusySeconds() - machine0),
    peakRss,
    hwm: procStatus(pid)?.hwmMb ?? 0,
  }
}

export async function deliver(): Promise<void> {
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa() // written before the fake starts, so every process trusts the same CA
  const fake = await startFakeFcmProcess({ maxConcurrentStreams: 1000 })
  const api = await startPombo(9420, { PM_DEFAULT_PLAN: 'pro', PM_LIMIT_IP_PER_MIN: '0', PM_VAULT_KEY: VAULT_KEY })
  const shared = { schema: api.schema, prefix: api.prefix }
  // The worker runs with the engine's defaults unless these are set in the environment (then they are printed).
  const tuned: Record<string, string> = {}
  for (const k of ['PM_INFLIGHT_PER_APP', 'PM_DELIVERY_PAGE', 'PM_PG_POOL', 'PM_OUTCOME_WRITERS', 'PM_OUTCOME_BATCH_MAX'])
    if (process.env[k]) tuned[k] = process.env[k] as string
  const workerEnv = { PM_FCM_BASE_URL: fake.url, PM_VAULT_KEY: VAULT_KEY, ...tuned, ...trustEnv() }
  let worker: Awaited<ReturnType<typeof startPombo>> | null = null
  try {
    const app = await appWithFcm(api, fake)
    const t0 = Date.now()
    await seed(api.schema, app.id, DEVICES)
    const changed = Object.entries(tuned).map(([k, v]) => `${k}=${v}`)
    console.log(
      `deliver: ${DEVICES} devices seeded with COPY in ${((Date.now() - t0) / 1000).toFixed(1)} s | settings changed: app rate_por_min=10000000;` +
        ` API PM_DEFAULT_PLAN=pro, PM_LIMIT_IP_PER_MIN=0; worker ${changed.length ? changed.join(', ') : 'engine defaults (PM_INFLIGHT_PER_APP=256, PM_DELIVERY_PAGE=500)'}; fake FCM 1000 streams per connection, record off`,
    )

    // The raw client posts what the engine posts: the same rendering of the same send, a token of the same length.
    const push = { ...pushFor(SEND_BODY), sendId: randomUUID(), proof: 'x'.repeat(32) }
    const template = JSON.stringify(fcmMessage({ deviceId: randomUUID(), token: '@TOKEN@', deviceType: 1 }, push, Date.now()))
    const path = `/v1/projects/${fake.serviceAccount.project_id}/messages:send`
    const accessToken = await accessTokenFor(fake.serviceAccount as never, ca)
    const load: string[] = [loadavg()]
    // Raw and Pombo rounds alternate (raw, pombo, raw, pombo, … raw): each Pombo round is compared with the mean of
    // the raw runs on either side of it, and the median of those ratios is the figure (this machine is shared).
    const raws = [await rawRate(fake.url, ca, path, accessToken, template, RAW_SECONDS)]
    const rounds: Round[] = []
    // The worker runs as deployed (compose.yaml, the group's workers): with WORKER_SEMI_SPACE_FLAG, unless
    // BENCH_WORKER_NODE_ARGS names flags of its own (e.g. --cpu-prof, or another --max-semi-space-size).
    const nodeArgs = process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [WORKER_SEMI_SPACE_FLAG]
    for (let i = 0; i < ROUNDS; i++) {
      worker = await startPombo(0, workerEnv, 'worker', nodeArgs, { shared })
      rounds.push(await oneSend(api, app, worker.pid, fake))
      await worker.stop()
      worker = null
      load.push(loadavg())
      raws.push(await rawRate(fake.url, ca, path, accessToken, template, RAW_SECONDS))
    }
    const ratios = rounds.map((x, i) => x.steady / (((raws[i] as number) + (raws[i + 1] as number)) / 2))
    console.log(
      `raw node:http2 client (1 session, ${RAW_IN_FLIGHT} in flight, ${Buffer.byteLength(template)}-byte bodies), its runs in order: ${raws.map((x) => `${x.toFixed(0)}/s`).join(', ')}`,
    )
    rounds.forEach((x, i) => {
      const row = x.row
      console.log(
        `round ${i + 1}: pombo worker ${x.delivered} accepted for ${row?.recipients} recipients (successful ${row?.successful}, failed ${row?.failed}, errored ${row?.errored}, remaining ${row?.remaining})` +
          ` | steady ${x.steady.toFixed(0)}/s (10%→90%), ${x.overall.toFixed(0)}/s first→last, accepted→closed ${x.wall.toFixed(1)} s | ${(ratios[i] as number).toFixed(2)} of the raw runs beside it` +
          ` | CPU per delivery: worker ${x.cpuUs.toFixed(0)} µs, fake ${x.fakeUs.toFixed(0)} µs, Postgres ${x.pgUs.toFixed(0)} µs, the machine busy ${x.machineUs.toFixed(0)} µs over its ${cpus().length} cores (at that cost they allow at most ${((cpus().length * 1e6) / x.machineUs).toFixed(0)}/s) | worker peak VmRSS ${x.peakRss.toFixed(0)} MB, VmHWM ${x.hwm.toFixed(0)} MB`,
      )
    })
    console.log(
      `ratio (pombo ÷ the raw client beside it): median ${medianOf(ratios).toFixed(2)} of ${ROUNDS} rounds (range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | target ≥ 0.70` +
        ` | worker memory: largest VmHWM ${Math.max(...rounds.map((x) => x.hwm)).toFixed(0)} MB (target < 300 MB)`,
    )
    const audience = `${DEVICES.toLocaleString('en')}-device segment`
    record({
      name: `fan-out of a ${audience}, one worker`,
      pombo: medianOf(rounds.map((x) => x.steady)),
      unit: 'deliveries/s',
      baseline: 'raw node:http2 client to the same fake',
      base: medianOf(raws),
      baseUnit: 'requests/s',
      ratio: medianOf(ratios),
    })
    record({
      name: `worker peak memory (VmHWM), fan-out of a ${audience}`,
      pombo: Math.max(...rounds.map((x) => x.hwm)),
      unit: 'MB',
    })
    console.log(
      `the raw client's runs cost it ${rawCpuUs.map((u) => `${u.toFixed(0)} µs`).join(' / ')} per request, the machine ${rawMachineUs.map((u) => `${u.toFixed(0)} µs`).join(' / ')} (the fake's share included) | machine load average (1 min) at the start and after each round: ${load.join(' / ')} on ${cpus().length} cores`,
    )
  } finally {
    await worker?.stop()
    await api.stop()
    await fake.stop()
  }
}
