// `npm run bench -- http`: the framework's cost against bare uWebSockets.js, same machine, same run.
// Pairs: GET / (no I/O) and an authenticated device read (one Postgres read by key) against a bare route doing the
// same read. Runs alternate baseline/pombo three times each and report medians. A third pair prices the metrics:
// Pombo with its operations port off (PM_OPS_PORT=0: the routes measure nothing) against the default, on the same
// two routes. Settings changed: PM_LIMIT_IP_PER_MIN=0 (the per-IP limit would otherwise refuse the load generator
// after 120 requests).
import { startBare } from './lib/bare'
import { record } from './lib/figures'
import { startPombo } from './lib/pombo'
import { median, row } from './lib/report'
import { ensureWrk, type WrkResult, wrk } from './lib/wrk'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5)

async function alternate(base: () => Promise<WrkResult>, head: () => Promise<WrkResult>): Promise<[WrkResult, WrkResult]> {
  const b: WrkResult[] = []
  const h: WrkResult[] = []
  for (let i = 0; i < ROUNDS; i++) {
    b.push(await base())
    h.push(await head())
  }
  return [median(b), median(h)]
}

export async function http(): Promise<void> {
  ensureWrk()
  const pombo = await startPombo(9200, { PM_LIMIT_IP_PER_MIN: '0' })
  // Same schema and Redis prefix as `pombo`: the app and device created below exist for both.
  const unmeasured = await startPombo(9220, { PM_LIMIT_IP_PER_MIN: '0', PM_OPS_PORT: '0' }, 'api', [], {
    shared: { schema: pombo.schema, prefix: pombo.prefix },
  })
  try {
    const app = await pombo.createApp()
    const reg = await fetch(`${pombo.url}/api/v1/players`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ app_id: app.id, device_type: 1, identifier: 'bench-token-1', language: 'pt' }),
    })
    const player = (await reg.json()) as { id?: string }
    const bare = await startBare(9210, {
      DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      BARE_PG_SCHEMA: pombo.schema,
      BARE_PG_SQL: 'SELECT * FROM devices WHERE app_id = $1 AND id = $2',
      BARE_PG_PARAMS: JSON.stringify([app.id, player.id]),
    })
    try {
      console.log(`http: wrk -t1 -c64 -d${DURATION_S}s, ${ROUNDS} alternating rounds, medians`)
      const [b1, h1] = await alternate(
        () => wrk({ url: `${bare.url}/`, durationS: DURATION_S }),
        () => wrk({ url: `${pombo.url}/`, durationS: DURATION_S }),
      )
      console.log(row('GET /', b1, h1))
      record({ name: 'GET /', pombo: h1.rps, unit: 'req/s', baseline: 'bare uWS GET /', base: b1.rps })
      if (reg.status === 200 && player.id) {
        const auth = `wrk.headers["Authorization"] = "Bearer ${app.api_key}"`
        const [b2, h2] = await alternate(
          () => wrk({ url: `${bare.url}/pg-read`, durationS: DURATION_S }),
          () => wrk({ url: `${pombo.url}/api/v1/players/${player.id}?app_id=${app.id}`, durationS: DURATION_S, lua: auth }),
        )
        console.log(row('GET /api/v1/players/{id} (app key)', b2, h2))
        record({
          name: 'GET /api/v1/players/{id} with an app key',
          pombo: h2.rps,
          unit: 'req/s',
          baseline: 'bare uWS, the same Postgres read',
          base: b2.rps,
        })
        const [m1, n1] = await alternate(
          () => wrk({ url: `${unmeasured.url}/`, durationS: DURATION_S }),
          () => wrk({ url: `${pombo.url}/`, durationS: DURATION_S }),
        )
        console.log(row('GET /: metrics off → on', m1, n1))
        record({
          name: 'GET /, metrics and access log on',
          pombo: n1.rps,
          unit: 'req/s',
          baseline: 'the same Pombo with them off',
          base: m1.rps,
        })
        const [m2, n2] = await alternate(
          () => wrk({ url: `${unmeasured.url}/api/v1/players/${player.id}?app_id=${app.id}`, durationS: DURATION_S, lua: auth }),
          () => wrk({ url: `${pombo.url}/api/v1/players/${player.id}?app_id=${app.id}`, durationS: DURATION_S, lua: auth }),
        )
        console.log(row('GET /api/v1/players/{id}: metrics off → on', m2, n2))
        record({
          name: 'GET /api/v1/players/{id}, metrics and access log on',
          pombo: n2.rps,
          unit: 'req/s',
          baseline: 'the same Pombo with them off',
          base: m2.rps,
        })
      } else {
        console.log(`authenticated read skipped: device registration answered ${reg.status}`)
      }
    } finally {
      await bare.stop()
    }
  } finally {
    await unmeasured.stop()
    await pombo.stop()
  }
}
