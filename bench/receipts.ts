// `npm run bench -- receipts`: receipts per second (POST /api/v1/receipts) beside a bare uWebSockets.js POST that
// parses the same JSON and verifies one HMAC proof (bench/bare-uws.ts /receipt), alternating rounds, medians.
// Seeding is SQL (COPY of devices, sends inserted as rows) and the proofs are computed with src/message/proof.ts,
// so every request is a valid receipt. Mixes: `unique` (every receipt new: the durable path), `duplicate` (every
// receipt already counted), `mixed` (half and half). Durable receipts per second = new receipt rows / seconds,
// counted in Postgres after each round (every 200 of the unique mix must be a row; checked).
// Settings changed (docs/spec/contract.md): PM_LIMIT_IP_PER_MIN=0 (the per-IP limit would refuse the load generator).
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { proof } from '../src/message/proof'
import { startBare } from './lib/bare'
import { record } from './lib/figures'
import { countRows, DATABASE_URL, type Pombo, startPombo } from './lib/pombo'
import { median } from './lib/report'
import { ensureWrk, postLinesScript, type WrkResult, wrk } from './lib/wrk'
import { copyRows } from './lib/copy-rows'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 256)
const SENDS = Number(process.env.BENCH_RECEIPT_SENDS ?? 2)
const DEVICES = Number(process.env.BENCH_RECEIPT_DEVICES ?? 1_000_000)
/** Receipts prepared per round file: more than a round can use, so the unique mix never repeats itself. */
const PER_ROUND = Number(process.env.BENCH_RECEIPTS_PER_ROUND ?? 250_000)

interface Seeded {
  appId: string
  sends: string[]
  devices: string[]
}

async function seed(pombo: Pombo, appId: string): Promise<Seeded> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  const s = pombo.schema
  const devices = Array.from({ length: DEVICES }, () => randomUUID())
  const now = new Date().toISOString()
  await copyRows(
    c,
    `COPY ${s}.devices (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, last_active, created_at, updated_at, invalid_identifier) FROM STDIN`,
    devices.length,
    (i) => `${appId}\t${devices[i]}\tbench-${i}\t1\tf\tfcm\t\\N\t${now}\t${now}\t${now}\tf\n`,
  )
  const sends = Array.from({ length: SENDS }, () => randomUUID())
  for (const id of sends) {
    await c.query(
      `INSERT INTO ${s}.sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                               ttl_s, queued_at, expansion_done, successful, completed_at)
       VALUES ($1, $2, 0, 'players', '{}', '{}', '{"en":"x"}', $3, true, 0, 60, now(), true, $3, now())`,
      [appId, id, DEVICES],
    )
  }
  await c.query(`ANALYZE ${s}.devices`)
  await c.end()
  return { appId, sends, devices }
}

/** wrk posting the lines of `file` to `url` (one body per request, in order) for `seconds`. */
function postFile(url: string, file: string, seconds: number): Promise<WrkResult> {
  return wrk({ url, durationS: seconds, connections: CONNECTIONS, lua: postLinesScript(file, new URL(url).pathname) })
}

/** One receipt body per line, for the given (send, device) pair numbers: pair j is send j / DEVICES, device j % DEVICES. */
function receiptFile(seeded: Seeded, key: Buffer, pairs: number[], tag: string): string {
  const lines = pairs.map((j) => {
    const send = seeded.sends[Math.floor(j / DEVICES) % SENDS] as string
    const device = seeded.devices[j % DEVICES] as string
    return JSON.stringify({ app_id: seeded.appId, notification_id: send, player_id: device, rcpt: proof(key, send, device) })
  })
  const file = join(tmpdir(), `pombo-receipts-${process.pid}-${tag}.txt`)
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

const range = (start: number, n: number): number[] => Array.from({ length: n }, (_, k) => start + k)

function line(name: string, r: WrkResult): string {
  return `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms${r.errors || r.non2xx ? `  errors ${r.errors} non-2xx ${r.non2xx}` : ''}`
}

export async function receipts(): Promise<void> {
  ensureWrk()
  // The pro plan: a free-plan app's receipts write no delivery.received (src/apps/plan.ts), so BENCH_RECEIPTS_MODO
  // would measure no event.
  const pombo = await startPombo(9400, {
    PM_DEFAULT_PLAN: 'pro',
    ...JSON.parse(process.env.BENCH_POMBO_ENV ?? '{}'),
    PM_LIMIT_IP_PER_MIN: '0',
  })
  let bare: Awaited<ReturnType<typeof startBare>> | null = null
  try {
    const app = await pombo.createApp({ nome: 'receipts' })
    // BENCH_RECEIPTS_MODO=webhook|grpc: the app reads by that channel, so every new receipt also writes its event.
    const modo = process.env.BENCH_RECEIPTS_MODO
    if (modo === 'grpc' || modo === 'webhook') {
      const body = modo === 'grpc' ? { app_id: app.id, modo } : { app_id: app.id, modo, url: 'https://hooks.invalid/pombo' }
      const r = await fetch(`${pombo.url}/api/v1/confirmacoes`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      if (r.status !== 200) throw new Error(`PUT confirmacoes: ${r.status} ${await r.text()}`)
      console.log(`receipts: the app reads by ${modo} (every new receipt writes its event)`)
    }
    bare = await startBare(9410, { BARE_RECEIPT_KEY: app.receipt_key })
    const key = Buffer.from(app.receipt_key, 'hex')
    const t0 = performance.now()
    const seeded = await seed(pombo, app.id)
    console.log(
      `receipts: settings changed: PM_DEFAULT_PLAN=pro, PM_LIMIT_IP_PER_MIN=0; seeded ${DEVICES.toLocaleString('en')} devices and ${SENDS} sends in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    )
    if (SENDS * DEVICES < PER_ROUND * (2 * ROUNDS + 1)) throw new Error('not enough (send, device) pairs for the rounds')
    let next = 0
    /** PER_ROUND pairs never used before. */
    const fresh = (): number[] => {
      const r = range(next, PER_ROUND)
      next += PER_ROUND
      return r
    }
    const warm = receiptFile(seeded, key, fresh(), 'warm')
    await postFile(`${pombo.url}/api/v1/receipts`, warm, 2)
    await postFile(`${bare.url}/receipt`, warm, 1)

    const base: WrkResult[] = []
    const uniq: WrkResult[] = []
    const durable: number[] = []
    /** What each unique round counted: its first `rows` pairs (the file is posted in order). */
    const counted_: Array<{ start: number; rows: number }> = []
    for (let i = 0; i < ROUNDS; i++) {
      const pairs = fresh()
      const file = receiptFile(seeded, key, pairs, `u${i}`)
      base.push(await postFile(`${bare.url}/receipt`, file, DURATION_S))
      const before = await countRows(pombo.schema, 'receipts')
      const h = await postFile(`${pombo.url}/api/v1/receipts`, file, DURATION_S)
      const rows = (await countRows(pombo.schema, 'receipts')) - before
      const answered = Math.round(h.rps * DURATION_S) - h.non2xx
      if (rows < answered * 0.98 && answered <= PER_ROUND)
        console.log(`receipts: WARNING ${answered} answered 200 but only ${rows} rows written`)
      if (answered > PER_ROUND)
        console.log(`receipts: WARNING the round outran its ${PER_ROUND} prepared receipts; raise BENCH_RECEIPTS_PER_ROUND`)
      uniq.push(h)
      durable.push(rows / DURATION_S)
      counted_.push({ start: pairs[0] as number, rows })
    }
    // Duplicate mix: exactly the receipts a unique round counted, posted again (wrapping around).
    const dup: WrkResult[] = []
    for (const [i, c] of counted_.entries()) {
      const file = receiptFile(seeded, key, range(c.start, c.rows), `d${i}`)
      dup.push(await postFile(`${pombo.url}/api/v1/receipts`, file, DURATION_S))
    }
    // Mixed: new pairs alternating with pairs a unique round counted.
    const mixed: WrkResult[] = []
    const mixedDurable: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      const c = counted_[i] as { start: number; rows: number }
      const pairs = fresh().map((j, k) => (k % 2 === 1 ? c.start + ((k >> 1) % Math.max(1, c.rows)) : j))
      const file = receiptFile(seeded, key, pairs, `m${i}`)
      const before = await countRows(pombo.schema, 'receipts')
      mixed.push(await postFile(`${pombo.url}/api/v1/receipts`, file, DURATION_S))
      mixedDurable.push(((await countRows(pombo.schema, 'receipts')) - before) / DURATION_S)
    }
    const b = median(base)
    const u = median(uniq)
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number
    console.log(
      `receipts: wrk -t1 -c${CONNECTIONS} -d${DURATION_S}s, ${ROUNDS} rounds each, medians; ${SENDS} sends x ${DEVICES.toLocaleString('en')} devices`,
    )
    console.log(line('bare uWS POST + JSON + 1 HMAC', b))
    console.log(line('receipts, unique (all new)', u))
    console.log(line('receipts, duplicate (all counted)', median(dup)))
    console.log(line('receipts, mixed (half new)', median(mixed)))
    const bareName = 'bare uWS POST + JSON + one HMAC'
    record({ name: 'receipts, all new', pombo: u.rps, unit: 'req/s', baseline: bareName, base: b.rps })
    record({ name: 'receipts, all duplicate', pombo: median(dup).rps, unit: 'req/s', baseline: bareName, base: b.rps })
    record({ name: 'receipts, half new', pombo: median(mixed).rps, unit: 'req/s', baseline: bareName, base: b.rps })
    console.log(
      `receipts: ratio unique/bare ${(u.rps / b.rps).toFixed(3)}; durable receipts/s (new rows in Postgres / seconds): unique ${sorted(durable).toFixed(0)}, ` +
        `mixed ${sorted(mixedDurable).toFixed(0)} (target >= 10,000)`,
    )
  } finally {
    await bare?.stop()
    await pombo.stop()
  }
}
