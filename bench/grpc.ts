// `npm run bench -- grpc`: events per second the confirmation stream delivers to ONE consumer, beside, in the same
// run, (a) the webhook dispatcher's rate to ONE destination (the same events, the other channel: a local HTTPS
// receiver that verifies every signature and the order) and (b) a bare @grpc/grpc-js server (bench/bare-grpc.ts,
// a child process too) streaming the same message from memory to the same client (the transport's ceiling here).
//
// Pombo runs compiled as a child (`pombo serve --roles api,worker`). Each round writes BENCH_GRPC_EVENTS events
// (default 10,000) for the grpc app in one statement through the service's own event writer
// (src/confirmations/events.ts), with a consumer already open and caught up: the clock runs from the commit to the
// last event received (live tail: wake-up, pages of 200, gRPC back-pressure). Then the same number for the webhook
// app, clocked from the commit to the last accepted POST. After the rounds, a new consumer replays everything from
// seq 0 (backlog rate). Settings changed: PM_GRPC_PORT (a free port), PM_WEBHOOK_ALLOW_PRIVATE=1,
// PM_WEBHOOK_POLL_MS=50, PM_LIMIT_IP_PER_MIN=0. BENCH_ROUNDS (default 3).
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import pg from 'pg'
import { eventCtes } from '../src/confirmations/events'
import { confirmationStream, type StreamEvent } from '../src/confirmations/proto'
import { trustEnv } from '../test/fakes/tls'
import { childEntry, DATABASE_URL, ROOT, startPombo } from './lib/pombo'
import { Receiver } from './webhooks'
import { medianOf } from './lib/report'
import { record } from './lib/figures'

const N = Number(process.env.BENCH_GRPC_EVENTS ?? 10_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

/** One consumer: counts events, checks seq grows by one, resolves when `expect(n)` more arrived. */
class Consumer {
  received = 0
  last = 0
  outOfOrder = 0
  #target = 0
  #done: (() => void) | null = null
  readonly #call: grpc.ClientReadableStream<StreamEvent>
  readonly #client: grpc.Client

  constructor(port: number, apiKey: string, appId: string, desde: number) {
    const Ctor = confirmationStream()
    this.#client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure())
    const md = new grpc.Metadata()
    md.set('authorization', `Basic ${apiKey}`)
    this.last = desde
    this.#call = (
      this.#client as unknown as { Assinar(r: unknown, m: grpc.Metadata): grpc.ClientReadableStream<StreamEvent> }
    ).Assinar({ app_id: appId, desde_seq: String(desde) }, md)
    this.#call.on('data', (e: StreamEvent) => {
      const seq = Number(e.seq)
      if (seq !== this.last + 1) this.outOfOrder++
      this.last = seq
      this.received++
      if (this.received === this.#target) this.#done?.()
    })
    this.#call.on('error', () => {})
  }

  expect(n: number): Promise<void> {
    this.#target = this.received + n
    return new Promise((r) => {
      this.#done = r
    })
  }

  close(): void {
    this.#call.cancel()
    this.#client.close()
  }
}

/** The ceiling: bench/bare-grpc.ts in a child process, streaming `n` copies of `sample` to one Consumer. */
async function startBareGrpc(sample: StreamEvent): Promise<{ run(n: number): Promise<number>; stop(): void }> {
  const entry = childEntry(join(ROOT, 'bench', 'bare-grpc.ts'))
  const child = spawn(process.execPath, [...entry.execArgv, entry.file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_SAMPLE: JSON.stringify(sample) },
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())))
    child.once('exit', (c) => reject(new Error(`bare-grpc exited ${c}`)))
  })
  return {
    async run(n) {
      const c = new Consumer(port, 'pm_live_aaaaaaaa_x', '00000000-0000-0000-0000-000000000000', n)
      c.last = 0
      const done = c.expect(n)
      const t0 = performance.now()
      await done
      const rate = n / ((performance.now() - t0) / 1000)
      c.close()
      return rate
    },
    stop() {
      child.kill('SIGTERM')
    },
  }
}

export async function grpcBench(): Promise<void> {
  const rx = new Receiver()
  await rx.listen()
  const grpcPort = 19_000 + Math.floor(Math.random() * 1000)
  const pombo = await startPombo(
    18_000 + Math.floor(Math.random() * 500) * 2,
    {
      ...trustEnv(),
      PM_GRPC_PORT: String(grpcPort),
      PM_WEBHOOK_ALLOW_PRIVATE: '1',
      PM_WEBHOOK_POLL_MS: '50',
      PM_LIMIT_IP_PER_MIN: '0',
    },
    'api,worker',
  )
  const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${pombo.schema}` })
  await db.connect()
  const put = async (key: string, body: Record<string, unknown>) => {
    const r = await fetch(`${pombo.url}/api/v1/confirmacoes`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const j = (await r.json()) as { segredo: string }
    if (r.status !== 200) throw new Error(`PUT: ${r.status} ${JSON.stringify(j)}`)
    return j
  }
  /** N events for `app` in one statement, through the service's event writer (numbering, channel, NOTIFY). */
  const write = async (app: string) => {
    await db.query(
      `WITH src AS (
         SELECT $1::uuid AS app_id, 'delivery.received' AS evento, g,
                jsonb_build_object('evento', 'delivery.received', 'app_id', $1::uuid, 'notification_id', gen_random_uuid(),
                                   'player_id', gen_random_uuid(), 'quando', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')) AS body
           FROM generate_series(1, $2::int) g
       ), ${eventCtes({ source: 'src', order: 's.g', at: 'now()' })}
       SELECT count(*) FROM ev`,
      [app, N],
    )
  }
  try {
    const g = await pombo.createApp({ nome: 'grpc' })
    await put(g.api_key, { app_id: g.id, modo: 'grpc' })
    const w = await pombo.createApp({ nome: 'webhook' })
    const j = await put(w.api_key, { app_id: w.id, url: `https://127.0.0.1:${rx.port}/w`, modo: 'webhook' })
    rx.dests.set('/w', { secret: Buffer.from(j.segredo), last: 0 })
    console.log(`grpc: ${fmt(N)} events per round to one consumer vs one webhook destination, ${ROUNDS} rounds`)
    const live = new Consumer(grpcPort, g.api_key, g.id, 0)
    await new Promise((r) => setTimeout(r, 500))
    const streamRates: number[] = []
    const hookRates: number[] = []
    const bareRates: number[] = []
    let bareServer: Awaited<ReturnType<typeof startBareGrpc>> | null = null
    for (let round = 0; round < ROUNDS; round++) {
      const got = live.expect(N)
      await write(g.id)
      const t0 = performance.now()
      await got
      streamRates.push(N / ((performance.now() - t0) / 1000))

      const delivered = rx.expect(N)
      await write(w.id)
      const t1 = performance.now()
      const timedOut = await Promise.race([
        delivered.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), 180_000).unref()),
      ])
      if (timedOut) throw new Error('webhook: not every event arrived within 180 s')
      hookRates.push(N / ((performance.now() - t1) / 1000))

      if (!bareServer) {
        const r = await db.query<{ body: Record<string, unknown> }>('SELECT body FROM events WHERE app_id = $1 LIMIT 1', [g.id])
        const b = r.rows[0]?.body ?? {}
        bareServer = await startBareGrpc({
          seq: '1',
          evento: 'delivery.received',
          app_id: g.id,
          notification_id: String(b.notification_id),
          player_id: String(b.player_id),
          quando: String(b.quando),
          canal: 'grpc',
          corpo_json: JSON.stringify(b),
        })
      }
      bareRates.push(await bareServer.run(N))
      console.log(
        `  round ${round + 1}: stream (live) ${fmt(streamRates[round] as number)} events/s | webhook, one destination ${fmt(hookRates[round] as number)} events/s | bare grpc-js ${fmt(bareRates[round] as number)} msgs/s`,
      )
    }
    live.close()
    bareServer?.stop()
    const replay = new Consumer(grpcPort, g.api_key, g.id, 0)
    const all = replay.expect(N * ROUNDS)
    const t2 = performance.now()
    await all
    const replayRate = (N * ROUNDS) / ((performance.now() - t2) / 1000)
    replay.close()
    const s = medianOf(streamRates)
    const h = medianOf(hookRates)
    const b = medianOf(bareRates)
    console.log(
      `  median: stream ${fmt(s)} events/s | webhook ${fmt(h)} events/s (stream/webhook ${(s / h).toFixed(1)}×) | bare grpc-js ${fmt(b)} msgs/s (stream/bare ${(s / b).toFixed(2)})`,
    )
    console.log(
      `  replay of ${fmt(N * ROUNDS)} from seq 0: ${fmt(replayRate)} events/s (stream/bare ${(replayRate / b).toFixed(2)})`,
    )
    record({
      name: 'confirmation stream, one consumer, live',
      pombo: s,
      unit: 'events/s',
      baseline: 'bare grpc-js server, the same message',
      base: b,
      baseUnit: 'msgs/s',
    })
    record({
      name: 'confirmation stream, replay from seq 0',
      pombo: replayRate,
      unit: 'events/s',
      baseline: 'bare grpc-js server, the same message',
      base: b,
      baseUnit: 'msgs/s',
    })
    record({
      name: 'confirmation stream against webhooks',
      pombo: s,
      unit: 'events/s',
      baseline: 'one webhook destination',
      base: h,
    })
    console.log(
      `  checks: stream out of order ${live.outOfOrder + replay.outOfOrder}; webhook out of order ${rx.outOfOrder}, duplicates ${rx.duplicates}, bad signatures ${rx.badSignatures}`,
    )
  } finally {
    await db.end()
    await pombo.stop()
    rx.close()
  }
}
