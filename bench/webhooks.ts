// `npm run bench -- webhooks`: events per second a Pombo worker delivers to a local HTTPS receiver across 50
// destinations (one per app), with per-destination order checked on every request, beside a raw node:https client
// (50 serial loops, one per destination, same bodies and signatures) against the same receiver in the same run.
// The receiver runs in this process and verifies each HMAC over the raw bytes; Pombo runs as a child
// (`pombo serve --roles api,worker`). Events are written in one statement per round (as their writers would, in
// bulk) and the clock runs from its commit to the last delivery. Settings changed: PM_WEBHOOK_ALLOW_PRIVATE=1 (the
// receiver is on 127.0.0.1), PM_WEBHOOK_CONCURRENCY=50 (one connection per destination), PM_WEBHOOK_POLL_MS=50,
// PM_PG_POOL=208 (the process's connection budget: the dispatcher's share is a quarter of it, 52, enough for the 50
// destinations at once; the main pool opens only what it uses), PM_LIMIT_IP_PER_MIN=0. BENCH_WEBHOOK_EVENTS = events per destination per round (default 1,000),
// BENCH_ROUNDS (default 3).
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { Agent, createServer, request } from 'node:https'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { eventCtes } from '../src/confirmations/events'
import { testTls, trustEnv } from '../test/fakes/tls'
import { record } from './lib/figures'
import { DATABASE_URL, startPombo } from './lib/pombo'

const DESTINATIONS = 50
const PER = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

interface Dest {
  secret: Buffer
  last: number
}

export class Receiver {
  readonly dests = new Map<string, Dest>()
  received = 0
  outOfOrder = 0
  duplicates = 0
  badSignatures = 0
  #target = 0
  #done: (() => void) | null = null
  port = 0
  readonly #server = createServer({ key: testTls().key, cert: testTls().cert, keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const d = this.dests.get(req.url ?? '')
      const sig = Buffer.from(String(req.headers['x-pm-assinatura'] ?? ''))
      const want = d ? Buffer.from(`sha256=${createHmac('sha256', d.secret).update(raw).digest('hex')}`) : Buffer.alloc(0)
      if (!d || sig.length !== want.length || !timingSafeEqual(sig, want)) {
        this.badSignatures++
        res.writeHead(401).end()
        return
      }
      const id = Number(req.headers['x-pm-evento-id'])
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      // At-least-once: a redelivery repeats ids already seen (counted apart); a new id below the last one would
      // break the order.
      if (id <= d.last) {
        if (id === d.last) this.duplicates++
        else this.outOfOrder++
        return
      }
      d.last = id
      this.received++
      if (this.received === this.#target) this.#done?.()
    })
  })

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r))
    this.port = (this.#server.address() as AddressInfo).port
  }

  /** Resolves when `n` more requests were accepted. */
  expect(n: number): Promise<void> {
    this.#target = this.received + n
    return new Promise((r) => {
      this.#done = r
    })
  }

  close(): void {
    this.#server.closeAllConnections()
    this.#server.close()
  }
}

/** Ids of the raw client's requests: increasing across rounds, like an event's seq. */
let rawSeq = 0

/** The ceiling on this machine: 50 serial loops posting signed bodies to the same receiver (paths of their own). */
async function raw(rx: Receiver, paths: string[], per: number): Promise<number> {
  const done = rx.expect(paths.length * per)
  const agent = new Agent({ keepAlive: true, maxSockets: 4, ca: testTls().caPem })
  const post = (path: string, secret: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const body = Buffer.from(
        JSON.stringify({
          evento: 'delivery.received',
          app_id: randomUUID(),
          notification_id: randomUUID(),
          player_id: randomUUID(),
          quando: new Date().toISOString(),
          canal: 'webhook',
        }),
      )
      const req = request(
        {
          host: '127.0.0.1',
          port: rx.port,
          path,
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'x-pm-evento-id': String(++rawSeq),
            'x-pm-assinatura': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
          },
        },
        (res) => {
          res.resume()
          res.on('end', resolve)
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  const t0 = performance.now()
  await Promise.all(
    paths.map(async (p) => {
      const d = rx.dests.get(p) as Dest
      for (let i = 0; i < per; i++) await post(p, d.secret)
    }),
  )
  await done
  agent.destroy()
  return (paths.length * per) / ((performance.now() - t0) / 1000)
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

export async function webhooks(): Promise<void> {
  const rx = new Receiver()
  await rx.listen()
  const pombo = await startPombo(
    18_000 + Math.floor(Math.random() * 1000) * 2,
    {
      ...trustEnv(),
      PM_WEBHOOK_ALLOW_PRIVATE: '1',
      PM_WEBHOOK_CONCURRENCY: String(DESTINATIONS),
      PM_WEBHOOK_POLL_MS: '50',
      PM_PG_POOL: '208',
      PM_LIMIT_IP_PER_MIN: '0',
    },
    'api,worker',
  )
  const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${pombo.schema}` })
  await db.connect()
  try {
    const apps: string[] = []
    const paths: string[] = []
    for (let i = 0; i < DESTINATIONS; i++) {
      const app = await pombo.createApp({ nome: `wh-${i}` })
      const path = `/d${i}`
      const r = await fetch(`${pombo.url}/api/v1/confirmacoes`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ app_id: app.id, url: `https://127.0.0.1:${rx.port}${path}`, modo: 'webhook' }),
      })
      const j = (await r.json()) as { segredo: string }
      if (r.status !== 200) throw new Error(`PUT: ${r.status} ${JSON.stringify(j)}`)
      rx.dests.set(path, { secret: Buffer.from(j.segredo), last: 0 })
      apps.push(app.id)
      paths.push(path)
    }
    const total = DESTINATIONS * PER
    console.log(`webhooks: ${DESTINATIONS} destinations × ${fmt(PER)} events per round, ${ROUNDS} rounds`)
    const pomboRates: number[] = []
    const rawRates: number[] = []
    const rawPaths = paths.map((p) => `/raw${p}`)
    for (const p of rawPaths) rx.dests.set(p, { secret: Buffer.from('raw-secret'), last: 0 })
    for (let round = 0; round < ROUNDS; round++) {
      rawRates.push(await raw(rx, rawPaths, Math.max(1, Math.floor(PER / 2))))
      const done = rx.expect(total)
      // Through the service's event writer (numbering per app in commit order, channel from the app's mode).
      await db.query(
        `WITH src AS (
           SELECT a.id AS app_id, 'delivery.received' AS evento, g,
                  jsonb_build_object('evento', 'delivery.received', 'app_id', a.id, 'notification_id', gen_random_uuid(),
                                     'player_id', gen_random_uuid(), 'quando', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')) AS body
             FROM generate_series(1, $2::int) g, unnest($1::uuid[]) a(id)
         ), ${eventCtes({ source: 'src', order: 's.g', at: 'now()' })}
         SELECT count(*) FROM ev`,
        [apps, PER],
      )
      const t0 = performance.now()
      const timedOut = await Promise.race([
        done.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), 120_000).unref()),
      ])
      if (timedOut) {
        console.log(`  round ${round + 1}: not every event arrived within 120 s`)
        break
      }
      const rate = total / ((performance.now() - t0) / 1000)
      pomboRates.push(rate)
      console.log(
        `  round ${round + 1}: pombo ${fmt(rate)} events/s; raw https client ${fmt(rawRates[round] as number)} requests/s`,
      )
    }
    // The cursors are written after each batch, just after its last answer: give the last batches a moment.
    let left = -1
    for (let i = 0; i < 50 && left !== 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100))
      const q = await db.query<{ n: number }>(
        'SELECT count(e.seq)::int AS n FROM webhook_destinations d JOIN events e ON e.app_id = d.app_id AND e.seq > d.last_seq WHERE d.active',
      )
      left = q.rows[0]?.n ?? -1
    }
    record({
      name: `webhook events, ${DESTINATIONS} destinations`,
      pombo: median(pomboRates),
      unit: 'events/s',
      baseline: 'raw https client, a serial loop per destination',
      base: median(rawRates),
      baseUnit: 'requests/s',
    })
    console.log(
      `  median: pombo ${fmt(median(pomboRates))} events/s (target ≥ 5,000) | raw ${fmt(median(rawRates))} requests/s | ratio ${(median(pomboRates) / median(rawRates)).toFixed(2)}`,
    )
    const failures = await db.query<{ result: string; reason: string; n: number }>(
      'SELECT result, left(reason, 80) AS reason, count(*)::int AS n FROM webhook_attempts WHERE result <> $1 GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5',
      ['ok'],
    )
    for (const f of failures.rows) console.log(`  failed attempts: ${f.n} × ${f.result} (${f.reason})`)
    console.log(
      `  checks: out of order ${rx.outOfOrder}, duplicates ${rx.duplicates}, bad signatures ${rx.badSignatures}, left in queues ${left}`,
    )
  } finally {
    await db.end()
    await pombo.stop()
    rx.close()
  }
}
