// `npm run bench -- inapp`: the in-app device routes beside bare uWebSockets.js, same run, alternating rounds.
// - warm `GET /api/v1/inapp/pending` answered 304 (every device polls with the ETag it holds) vs bare `GET /`;
// - warm `pending` answered 200 (a 3-campaign package with its proofs) vs bare `GET /`;
// - proven events through the group-committed writer: `POST /api/v1/inapp/eventos` with 50 new occurrences a request
//   vs bare `POST /json` with the same bodies; durable events/s are the rows counted in Postgres over the run.
// Settings changed: PM_LIMIT_IP_PER_MIN=0 (the per-IP limit would refuse the load generator after 120 requests).
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBare } from './lib/bare'
import { record } from './lib/figures'
import { countRows, startPombo } from './lib/pombo'
import { median, row } from './lib/report'
import { ensureWrk, postLinesScript, type WrkResult, wrk } from './lib/wrk'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5)
const DEVICES = 200
const CAMPAIGNS = 3
const BATCH = 50

interface Held {
  player: string
  etag: string
  proofs: Record<string, string>
}

async function call(url: string, method: string, body: unknown, key?: string): Promise<{ status: number; json: unknown }> {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await r.text()
  if (r.status >= 400) throw new Error(`${method} ${url}: ${r.status} ${text}`)
  return { status: r.status, json: text ? JSON.parse(text) : null }
}

function lines(file: string, xs: string[]): string {
  writeFileSync(file, `${xs.join('\n')}\n`)
  return file
}

/** GET the listed paths in turn, each with its If-None-Match (empty: none). */
function pollScript(file: string): string {
  return `
local paths, tags = {}, {}
for line in io.lines("${file}") do
  local p, t = line:match("^(%S+) ?(.*)$")
  paths[#paths + 1] = p
  tags[#tags + 1] = t
end
local n = 0
request = function()
  n = n + 1
  if n > #paths then n = 1 end
  if tags[n] ~= "" then return wrk.format("GET", paths[n], { ["If-None-Match"] = tags[n] }, nil) end
  return wrk.format("GET", paths[n], nil, nil)
end
`
}

export async function inapp(): Promise<void> {
  ensureWrk()
  const pombo = await startPombo(9600, { PM_LIMIT_IP_PER_MIN: '0' })
  const bare = await startBare(9610)
  try {
    const app = await pombo.createApp()
    const base = `${pombo.url}/api/v1`
    await call(`${base}/in_app_messages/config`, 'PUT', { app_id: app.id, inapp_ativo: true }, app.api_key)
    const campaigns: string[] = []
    for (let i = 0; i < CAMPAIGNS; i++) {
      const c = (await call(
        `${base}/in_app_messages`,
        'POST',
        {
          app_id: app.id,
          nome: `c${i}`,
          conteudo: { pt: { titulo: `Oferta ${i}`, corpo: 'Só hoje', botao: { texto: 'Ver', acao: { tipo: 'dismiss' } } } },
          regras: { cap_total: 0, prioridade: i },
        },
        app.api_key,
      )) as { json: { id: string } }
      await call(`${base}/in_app_messages/${c.json.id}/publicar?app_id=${app.id}`, 'POST', undefined, app.api_key)
      campaigns.push(c.json.id)
    }
    const held: Held[] = []
    for (let i = 0; i < DEVICES; i++) {
      const reg = (await call(`${base}/players`, 'POST', {
        app_id: app.id,
        device_type: 1,
        identifier: `bench-inapp-${i}`,
        sdk_versao: '0.6.0',
      })) as { json: { id: string } }
      const p = (await call(`${base}/inapp/pending?app_id=${app.id}&player_id=${reg.json.id}&schema=0.6`, 'GET', undefined)) as {
        json: { etag: string; messages: Array<{ campanha_id: string; prova: string }> }
      }
      if (p.json.messages.length !== CAMPAIGNS) throw new Error(`package of ${p.json.messages.length} campaigns`)
      held.push({
        player: reg.json.id,
        etag: p.json.etag,
        proofs: Object.fromEntries(p.json.messages.map((m) => [m.campanha_id, m.prova])),
      })
    }
    const path = (h: Held) => `/api/v1/inapp/pending?app_id=${app.id}&player_id=${h.player}&schema=0.6`
    const file304 = lines(
      join(tmpdir(), `pombo-inapp-304-${process.pid}.txt`),
      held.map((h) => `${path(h)} ${h.etag}`),
    )
    const file200 = lines(
      join(tmpdir(), `pombo-inapp-200-${process.pid}.txt`),
      held.map((h) => path(h)),
    )
    // The baseline gets the same requests through the same wrk script (the script's cost on the shared cores is
    // alike): bare uWS routes on the path, ignores the query and If-None-Match, and answers GET / with a small JSON.
    const bareFile = lines(
      join(tmpdir(), `pombo-inapp-bare-${process.pid}.txt`),
      held.map((h) => `${path(h).replace('/api/v1/inapp/pending', '/')} ${h.etag}`),
    )

    // Every (device, campaign, event, occurrence) once, each body one device's 50 items, devices interleaved;
    // rounds draw disjoint ranges, so every event is new.
    const kinds = ['impressao', 'clique', 'fechou']
    const em = new Date().toISOString()
    const perDevice = held.map((h) => {
      const out: string[] = []
      let items: unknown[] = []
      for (let n = 1; n <= 300; n++) {
        for (const c of campaigns) {
          for (const e of kinds) {
            items.push({ campanha_id: c, prova: h.proofs[c], evento: e, ocorrencia_n: n, em })
            if (items.length === BATCH) {
              out.push(JSON.stringify({ app_id: app.id, player_id: h.player, eventos: items }))
              items = []
            }
          }
        }
      }
      return out
    })
    const bodies: string[] = []
    for (let k = 0; k < (perDevice[0]?.length ?? 0); k++) for (const list of perDevice) bodies.push(list[k] as string)
    console.log(
      `inapp: wrk -t1 -c64 -d${DURATION_S}s, ${ROUNDS} alternating rounds, medians; ${DEVICES} devices, ${CAMPAIGNS} campaigns`,
    )
    const alt = async (b: () => Promise<WrkResult>, h: () => Promise<WrkResult>): Promise<[WrkResult, WrkResult]> => {
      const bs: WrkResult[] = []
      const hs: WrkResult[] = []
      for (let i = 0; i < ROUNDS; i++) {
        bs.push(await b())
        hs.push(await h())
      }
      return [median(bs), median(hs)]
    }
    const [b304, h304] = await alt(
      () => wrk({ url: bare.url, durationS: DURATION_S, lua: pollScript(bareFile) }),
      () => wrk({ url: pombo.url, durationS: DURATION_S, lua: pollScript(file304) }),
    )
    console.log(row('pending warm, 304', b304, h304, false))
    record({
      name: 'in-app pending, warm, 304',
      pombo: h304.rps,
      unit: 'req/s',
      baseline: 'bare uWS GET / through the same wrk script',
      base: b304.rps,
    })
    const [b200, h200] = await alt(
      () => wrk({ url: bare.url, durationS: DURATION_S, lua: pollScript(bareFile) }),
      () => wrk({ url: pombo.url, durationS: DURATION_S, lua: pollScript(file200) }),
    )
    console.log(row('pending warm, 200 (3 proofs)', b200, h200, false))
    record({
      name: `in-app pending, warm, 200 (${CAMPAIGNS} campaigns)`,
      pombo: h200.rps,
      unit: 'req/s',
      baseline: 'bare uWS GET / through the same wrk script',
      base: b200.rps,
    })

    const per = Math.floor(bodies.length / ROUNDS)
    const bareEv: WrkResult[] = []
    const rates: number[] = []
    const reqs: WrkResult[] = []
    for (let i = 0; i < ROUNDS; i++) {
      const f = lines(join(tmpdir(), `pombo-inapp-ev-${process.pid}-${i}.txt`), bodies.slice(i * per, (i + 1) * per))
      bareEv.push(await wrk({ url: `${bare.url}/json`, durationS: DURATION_S, lua: postLinesScript(f, '/json') }))
      const before = await countRows(pombo.schema, 'inapp_events')
      const t0 = Date.now()
      const r = await wrk({ url: pombo.url, durationS: DURATION_S, lua: postLinesScript(f, '/api/v1/inapp/eventos') })
      await new Promise((res) => setTimeout(res, 200))
      const durable = (await countRows(pombo.schema, 'inapp_events')) - before
      rates.push(durable / ((Date.now() - t0 - 200) / 1000))
      reqs.push(r)
    }
    const be = median(bareEv)
    const he = median(reqs)
    const rate = [...rates].sort((a, b) => a - b)[Math.floor(rates.length / 2)] as number
    console.log(row(`eventos, ${BATCH} new events a request`, be, he, false))
    record({
      name: `in-app proven events, ${BATCH} a request`,
      pombo: he.rps,
      unit: 'req/s',
      baseline: 'bare uWS POST of the same bodies',
      base: be.rps,
    })
    record({ name: 'in-app proven events, durable', pombo: rate, unit: 'events/s' })
    console.log(
      `proven events durable: ${rate.toFixed(0)}/s (median of ${ROUNDS}; ${(he.rps * BATCH).toFixed(0)}/s answered; target ≥ 10,000/s)`,
    )
  } finally {
    await bare.stop()
    await pombo.stop()
  }
}
