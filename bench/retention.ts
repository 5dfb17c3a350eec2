// `npm run bench -- retention [--rows N]`: the retention job (src/service/retention.ts) over big tables, and the API
// beside it (issue 32.1). The schema of one Pombo (API role, no worker: the job runs only when the scenario says) is
// filled by SQL (generate_series) with about N rows (default 20,000,000; `--rows 2000000` or BENCH_RETENTION_ROWS
// for a quick try), shaped like a deployment that has run past every lifetime:
//   30% receipts over the last 30 days (nothing to remove), 30% receipt_archive over days 30-100 (10 of its 70 days
//   past the 90-day window: dropped whole), 20% inapp_events over 120 days (the weeks past 90 days dropped whole),
//   10% deliveries of 1% sends completed over the last 180 days (half past 90 days: deleted in batches with their
//   sends), 5% inapp_served over 180 days (half deleted in batches), 5% devices (2% dead for 60 days: deleted).
// Then, at a fixed offered rate of registrations (autocannon, BENCH_RATE/s, distinct tokens, the route the job also
// deletes from): a baseline round without the job, a round while one retention pass runs (as long as the pass), and
// a second baseline; latency p50/p99 of the job's round against the baselines' mean. Also a same-run comparison of
// the two ways out: ten archive days removed by batched DELETE (what the job does to tables without partitions)
// against ten other days of the same size dropped as partitions.
// Settings changed: PM_LIMIT_IP_PER_MIN=0, PM_LIMIT_REGISTRATIONS_PER_HOUR=1000000000 (one client registers much).
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import pg from 'pg'
import pino from 'pino'
import { loadConfig } from '../src/core/config'
import { DAY_MS } from '../src/core/time'
import { ensureRangePartitions } from '../src/db/partitions'
import { ARCHIVE_TABLE, RECEIPTS_TABLE } from '../src/receipts/archive'
import { INAPP_EVENTS_TABLE, Retention } from '../src/service/retention'
import { record } from './lib/figures'
import { DATABASE_URL, startPombo } from './lib/pombo'

function rowsWanted(): number {
  const i = process.argv.indexOf('--rows')
  const raw = i >= 0 ? process.argv[i + 1] : process.env.BENCH_RETENTION_ROWS
  const n = Number(raw ?? 20_000_000)
  if (!Number.isInteger(n) || n < 10_000) throw new Error(`--rows: expected an integer of at least 10000, got ${raw}`)
  return n
}

const RATE = Number(process.env.BENCH_RATE ?? 300)
const BASE_S = Number(process.env.BENCH_DURATION_S ?? 15)

interface Latency {
  rps: number
  p50: number
  p99: number
  errors: number
}

/** Registrations at a fixed offered rate until `until` resolves (or `seconds` pass). */
async function load(url: string, appId: string, o: { seconds?: number; until?: Promise<unknown> }): Promise<Latency> {
  const run = randomBytes(4).toString('hex')
  let n = 0
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const inst = autocannon(
      {
        url,
        connections: 16,
        duration: o.seconds ?? 3_600,
        overallRate: RATE,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/players',
            headers: { 'content-type': 'application/json' },
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ app_id: appId, device_type: 1, identifier: `ret-${run}-${n++}-${'x'.repeat(40)}` }),
            }),
          },
        ],
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    )
    // The job's round lasts as long as the pass.
    o.until?.finally(() => inst.stop())
  })
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors }
}

async function fill(db: pg.Pool, appId: string, n: number): Promise<void> {
  const log = pino({ level: 'warn' })
  const now = Date.now()
  const t0 = Date.now()
  await ensureRangePartitions(db, RECEIPTS_TABLE, now - 31 * DAY_MS, now + DAY_MS, log)
  await ensureRangePartitions(db, ARCHIVE_TABLE, now - 101 * DAY_MS, now - 29 * DAY_MS, log)
  await ensureRangePartitions(db, INAPP_EVENTS_TABLE, now - 126 * DAY_MS, now + 14 * DAY_MS, log)
  const q = async (what: string, sql: string, params: unknown[]): Promise<void> => {
    const t = Date.now()
    await db.query(sql, params)
    console.log(`  ${what}: ${((Date.now() - t) / 1000).toFixed(1)} s`)
  }
  const day = (d: string): string => `(now() AT TIME ZONE 'UTC')::date - ${d}`
  await q(
    `receipts ${Math.round(n * 0.3)}`,
    `INSERT INTO receipts (app_id, day, send_id, device_id, kind, at)
     SELECT $1, ${day('(i % 30)::int')}, gen_random_uuid(), gen_random_uuid(), 0, now() FROM generate_series(1, $2::int) i`,
    [appId, Math.round(n * 0.3)],
  )
  await q(
    `receipt_archive ${Math.round(n * 0.3)}`,
    `INSERT INTO receipt_archive (app_id, day, send_id, device_id, kind)
     SELECT $1, ${day('(30 + i % 70)::int')}, gen_random_uuid(), gen_random_uuid(), 0 FROM generate_series(1, $2::int) i`,
    [appId, Math.round(n * 0.3)],
  )
  await q(
    `inapp_events ${Math.round(n * 0.2)}`,
    `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
     SELECT $1, gen_random_uuid(), gen_random_uuid(), 1, 1, now() - (i % 120) * interval '1 day' - interval '1 hour', now()
       FROM generate_series(1, $2::int) i`,
    [appId, Math.round(n * 0.2)],
  )
  const sends = Math.max(100, Math.round(n * 0.01))
  await q(
    `sends ${sends}`,
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, completed_at, expansion_done)
     SELECT $1, gen_random_uuid(), 0, 'players', '{}', jsonb_build_object('contents', jsonb_build_object('pt', 'Mensagem ' || i)),
            jsonb_build_object('pt', 'Mensagem ' || i), 10, true, 0, 60,
            now() - (i % 180) * interval '1 day' - interval '1 hour', now() - (i % 180) * interval '1 day', true
       FROM generate_series(1, $2::int) i`,
    [appId, sends],
  )
  await q(
    `deliveries ${sends * 10}`,
    `INSERT INTO deliveries (send_id, device_id, app_id, device_type, status)
     SELECT s.id, gen_random_uuid(), s.app_id, 1, 1 FROM sends s CROSS JOIN generate_series(1, 10) WHERE s.app_id = $1`,
    [appId],
  )
  await q(
    `inapp_served ${Math.round(n * 0.05)}`,
    `INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at)
     SELECT $1, gen_random_uuid(), gen_random_uuid(), now() - (i % 180) * interval '1 day' FROM generate_series(1, $2::int) i`,
    [appId, Math.round(n * 0.05)],
  )
  await q(
    `devices ${Math.round(n * 0.05)}`,
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, invalid_identifier, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'seed-' || i, 1, false, 'fcm', i % 50 = 0, now(), now() - interval '60 days',
            CASE WHEN i % 50 = 0 THEN now() - interval '60 days' ELSE now() END
       FROM generate_series(1, $2::int) i`,
    [appId, Math.round(n * 0.05)],
  )
  for (const t of ['receipts', 'receipt_archive', 'inapp_events', 'sends', 'deliveries', 'inapp_served', 'devices'])
    await db.query(`VACUUM ANALYZE ${t}`)
  console.log(`filled in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
}

const fmt = (l: Latency): string =>
  `${l.rps.toFixed(0).padStart(6)} req/s  p50 ${String(l.p50).padStart(4)} ms  p99 ${String(l.p99).padStart(4)} ms  errors ${l.errors}`

export async function retentionBench(): Promise<void> {
  const n = rowsWanted()
  const api = await startPombo(9460, { PM_LIMIT_IP_PER_MIN: '0', PM_LIMIT_REGISTRATIONS_PER_HOUR: '1000000000' }, 'api')
  const db = new pg.Pool({ connectionString: DATABASE_URL, options: `-c search_path=${api.schema}`, max: 4 })
  try {
    const app = await api.createApp({ nome: 'Retenção' })
    console.log(`retention: filling ~${n.toLocaleString('en')} rows (schema ${api.schema})`)
    await fill(db, app.id, n)
    const cfg = loadConfig({ PM_DB_SCHEMA: api.schema })
    const retention = new Retention({ db, cfg, clock: Date.now, log: pino({ level: 'warn' }) })

    // Warm the route, then baseline / job / baseline.
    await load(api.url, app.id, { seconds: 3 })
    const before = await load(api.url, app.id, { seconds: BASE_S })
    console.log(`baseline        ${fmt(before)}`)
    const pass = retention.runOnce()
    const during = await load(api.url, app.id, { until: pass })
    const report = await pass
    console.log(`during the job  ${fmt(during)}`)
    const after = await load(api.url, app.id, { seconds: BASE_S })
    console.log(`baseline again  ${fmt(after)}`)
    const rows = Object.values(report.rows).reduce((a, b) => a + b, 0)
    console.log(
      `pass: ${(report.ms / 1000).toFixed(1)} s, rows deleted ${JSON.stringify(report.rows)}, partitions ${JSON.stringify(report.partitions)}`,
    )

    const baseP50 = (before.p50 + after.p50) / 2
    const baseP99 = (before.p99 + after.p99) / 2
    const scale = n >= 1_000_000 ? `${Math.round(n / 1_000_000)}M` : `${Math.round(n / 1_000)}k`
    const dropped = Object.values(report.partitions).reduce((a, b) => a + b, 0)
    record({
      name: `retention pass over ~${scale} rows (${rows} deleted in batches, ${dropped} partitions dropped)`,
      pombo: report.ms / 1000,
      unit: 's',
    })
    record({
      name: `registration p99 while the pass runs (${RATE}/s offered)`,
      pombo: during.p99,
      unit: 'ms',
      baseline: 'same rate, no job (mean of the rounds before and after)',
      base: baseP99,
    })
    record({
      name: `registration p50 while the pass runs (${RATE}/s offered)`,
      pombo: during.p50,
      unit: 'ms',
      baseline: 'same rate, no job (mean of the rounds before and after)',
      base: baseP50,
    })

    // The two ways out, same size: ten archive days inside the window deleted by rows in batches (what the job does
    // to tables without partitions; the dead tuples it leaves are vacuum's work on top), ten others dropped whole.
    const days = (from: number) =>
      Array.from({ length: 10 }, (_, i) => new Date(Date.now() - (from + i) * DAY_MS).toISOString().slice(0, 10))
    const part = (d: string) => `receipt_archive_p${d.replaceAll('-', '')}`
    const byRows = days(35)
    const byDrop = days(50)
    const size = Number(
      (await db.query('SELECT count(*)::int AS n FROM receipt_archive WHERE day = ANY($1::date[])', [byRows])).rows[0].n,
    )
    let t = performance.now()
    for (const d of byRows) {
      for (;;) {
        const r = await db.query(`DELETE FROM ${part(d)} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${part(d)} LIMIT 10000))`)
        if ((r.rowCount ?? 0) < 10_000) break
      }
    }
    const deleteMs = performance.now() - t
    t = performance.now()
    for (const d of byDrop) await db.query(`DROP TABLE ${part(d)}`)
    const dropMs = performance.now() - t
    console.log(
      `ten archive days, ${size} rows: batched DELETE ${deleteMs.toFixed(0)} ms, DROP of their partitions ${dropMs.toFixed(1)} ms`,
    )
    record({
      name: `ten archive days (${size} rows) removed by dropping their partitions`,
      pombo: dropMs,
      unit: 'ms',
      baseline: 'the same rows by batched DELETE',
      base: deleteMs,
    })
  } finally {
    await db.end()
    await api.stop()
  }
}
