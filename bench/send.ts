// `npm run bench -- send`: POST /api/v1/notifications.
//  1. single-device sends at the spec's 6,000/s per app (offered load, autocannon): achieved rate, p50/p99;
//  2. single-device sends at saturation (wrk) beside a bare uWebSockets.js POST parsing the same JSON;
//  3. 2,000-device list sends at saturation: delivery rows per second beside raw COPY of 2,000-row batches into a
//     table shaped like `deliveries` (same columns, same primary key), measured in the same run.
// Settings changed: PM_LIMIT_IP_PER_MIN=0; PM_LIMIT_SENDS_PER_SEC=1000000 (the quota still runs, so its cost is in
// the figures; at its default the 6,000/s cap itself would answer 429 at saturation).
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { startBare } from './lib/bare'
import { record } from './lib/figures'
import { fixedRate } from './lib/fixed-rate'
import { DATABASE_URL, startPombo } from './lib/pombo'
import { row } from './lib/report'
import { ensureWrk, wrk } from './lib/wrk'

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8)
const DEVICES = 2_000
/** BENCH_SEND_PARTS=list (or single) runs one half. */
const PARTS = new Set((process.env.BENCH_SEND_PARTS ?? 'single,list').split(','))

async function registerDevices(url: string, appId: string, n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, (_, j) =>
        fetch(`${url}/api/v1/players`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ app_id: appId, device_type: 1, identifier: `bench-${i + j}-${randomUUID()}`, language: 'pt' }),
        }).then((r) => r.json() as Promise<{ id: string }>),
      ),
    )
    for (const b of batch) ids.push(b.id)
  }
  return ids
}

/** Raw COPY of `batch`-row transactions into a deliveries-shaped table, 4 clients, for `seconds`: rows per second. */
async function rawCopyRate(schema: string, batch: number, seconds: number): Promise<number> {
  const setup = new pg.Client({ connectionString: DATABASE_URL })
  await setup.connect()
  await setup.query(`CREATE TABLE ${schema}.copy_baseline (LIKE ${schema}.deliveries INCLUDING ALL)`)
  await setup.end()
  const deviceIds = Array.from({ length: batch }, () => randomUUID())
  const appId = randomUUID()
  let rows = 0
  const until = Date.now() + seconds * 1000
  const started = Date.now()
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      const c = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` })
      await c.connect()
      while (Date.now() < until) {
        const sendId = randomUUID()
        await c.query('BEGIN')
        const stream = c.query(copyFrom('COPY copy_baseline (send_id, device_id, app_id, device_type) FROM STDIN'))
        const text = deviceIds.map((d) => `${sendId}\t${d}\t${appId}\t1\n`).join('')
        await new Promise<void>((resolve, reject) => {
          stream.on('finish', resolve)
          stream.on('error', reject)
          stream.end(text)
        })
        await c.query('COMMIT')
        rows += batch
      }
      await c.end()
    }),
  )
  return rows / ((Date.now() - started) / 1000)
}

export async function send(): Promise<void> {
  ensureWrk()
  const pombo = await startPombo(9400, { PM_LIMIT_IP_PER_MIN: '0', PM_LIMIT_SENDS_PER_SEC: '1000000' })
  const bare = await startBare(9410)
  const app = await pombo.createApp()
  const ids = await registerDevices(pombo.url, app.id, DEVICES)
  const auth = { authorization: `Bearer ${app.api_key}` }
  const single = (i: number) =>
    JSON.stringify({
      app_id: app.id,
      contents: { en: 'Seu pedido saiu para entrega', pt: 'Pedido a caminho' },
      include_player_ids: [ids[i % ids.length]],
    })
  try {
    console.log(`send: ${DEVICES} devices registered; runs of ${DURATION_S}s`)
    if (PARTS.has('single')) await singleSends()
    if (PARTS.has('list')) await listSends()
  } finally {
    await bare.stop()
    await pombo.stop()
  }

  async function singleSends(): Promise<void> {
    // The same offered load against the bare server shows the load generator's own latency floor on this machine.
    const bare6k = await fixedRate({ url: `${bare.url}/json`, body: single, rate: 6_000, durationS: DURATION_S })
    const at6k = await fixedRate({
      url: `${pombo.url}/api/v1/notifications`,
      headers: auth,
      body: single,
      rate: 6_000,
      durationS: DURATION_S,
    })
    console.log(
      `single-device sends at 6,000/s offered | bare uWS: achieved ${bare6k.rps.toFixed(0)}/s, p50 ${bare6k.p50Ms} ms, p99 ${bare6k.p99Ms} ms` +
        ` | pombo: achieved ${at6k.rps.toFixed(0)}/s, p50 ${at6k.p50Ms} ms, p99 ${at6k.p99Ms} ms, non-2xx ${at6k.non2xx}, errors ${at6k.errors}` +
        ' | target: 6,000/s with p99 < 50 ms',
    )

    record({
      name: 'single-device sends at 6,000/s offered, p99',
      pombo: at6k.p99Ms,
      unit: 'ms',
      baseline: 'bare uWS at 6,000/s',
      base: bare6k.p99Ms,
    })

    const luaIds = ids.map((x) => `"${x}"`).join(',')
    const singleLua = `
      local ids = {${luaIds}}
      local n = 0
      wrk.method = "POST"
      wrk.headers["Content-Type"] = "application/json"
      wrk.headers["Authorization"] = "Bearer ${app.api_key}"
      request = function()
        n = n + 1
        local body = '{"app_id":"${app.id}","contents":{"en":"Seu pedido saiu para entrega","pt":"Pedido a caminho"},"include_player_ids":["' .. ids[(n % #ids) + 1] .. '"]}'
        return wrk.format(nil, nil, nil, body)
      end`
    const bareLua = singleLua.replace('wrk.headers["Authorization"]', '-- ')
    const base = await wrk({ url: `${bare.url}/json`, durationS: DURATION_S, lua: bareLua })
    const head = await wrk({ url: `${pombo.url}/api/v1/notifications`, durationS: DURATION_S, lua: singleLua })
    // The baseline only parses the JSON; a send also validates, resolves its audience and commits to Postgres.
    console.log(row('single-device sends at saturation', base, head, false))
    record({
      name: 'single-device sends at saturation',
      pombo: head.rps,
      unit: 'sends/s',
      baseline: 'bare uWS POST + JSON.parse',
      base: base.rps,
      baseUnit: 'req/s',
    })
  }

  async function listSends(): Promise<void> {
    const listBody = JSON.stringify({ app_id: app.id, contents: { en: 'Promoção', pt: 'Promoção' }, include_player_ids: ids })
    const listLua = `
      wrk.method = "POST"
      wrk.headers["Content-Type"] = "application/json"
      wrk.headers["Authorization"] = "Bearer ${app.api_key}"
      wrk.body = '${listBody}'`
    const list = await wrk({
      url: `${pombo.url}/api/v1/notifications`,
      durationS: DURATION_S,
      connections: Number(process.env.BENCH_LIST_CONNS ?? 8),
      lua: listLua,
    })
    const copy = await rawCopyRate(pombo.schema, DEVICES, DURATION_S)
    const listRows = list.rps * DEVICES
    record({
      name: '2,000-device list sends, delivery rows',
      pombo: listRows,
      unit: 'rows/s',
      baseline: 'raw COPY of 2,000-row batches',
      base: copy,
    })
    console.log(
      `2,000-device list sends | ${list.rps.toFixed(1)} sends/s = ${listRows.toFixed(0)} delivery rows/s (p50 ${list.p50Ms.toFixed(1)} ms, p99 ${list.p99Ms.toFixed(1)} ms)` +
        ` | raw COPY of 2,000-row batches ${copy.toFixed(0)} rows/s | ratio ${(listRows / copy).toFixed(3)} (target ≥ 0.5)` +
        (list.non2xx || list.errors ? ` | non-2xx ${list.non2xx} errors ${list.errors}` : ''),
    )
  }
}
