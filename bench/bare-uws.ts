// Baseline server for benchmarks: bare uWebSockets.js, no framework. Run as a child: `tsx bench/bare-uws.ts PORT`.
// GET /          → the same JSON as Pombo's root route
// POST /json     → reads the body, JSON.parse, answers a small JSON (the floor of any POST route)
// GET /pg-read   → one Postgres read by primary key through a pg Pool, answered as JSON (floor of a DB-backed read)
// POST /receipt  → reads the body, JSON.parse, one HMAC-SHA256 proof verification (BARE_RECEIPT_KEY, hex) in constant
//                  time, answers {ok: true} or 403 (the floor of the receipt route before any durable write)

import type uWS from 'uWebSockets.js'
import { createHmac, timingSafeEqual } from 'node:crypto'
import pg from 'pg'
import { loadUws } from '../src/http/uws'

// The same build Pombo loads on this runtime, so the baseline measures the framework alone.
const { uws } = loadUws()

const port = Number(process.argv[2] ?? 9100)
const pool = process.env.BARE_PG_SQL
  ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 16, options: `-c search_path=${process.env.BARE_PG_SCHEMA}` })
  : null
const root = JSON.stringify({ servico: 'pombo', versao: '0.1.0', git: 'desconhecido' })
const TYPE = 'application/json; charset=utf-8'
// The same response bytes as Pombo (the spec requires the request id header): the difference is the framework alone.
const ID = '00000000-0000-4000-8000-000000000000'
const RECEIPT_KEY = Buffer.from(process.env.BARE_RECEIPT_KEY ?? '00', 'hex')
const OK = JSON.stringify({ ok: true })

/** The whole body, parsed, unless the client went away first: the least any POST route must do. */
// biome-ignore lint/suspicious/noExplicitAny: a baseline reads whatever JSON the load generator sends
function readJson(res: uWS.HttpResponse, then: (body: any) => void): void {
  let aborted = false
  res.onAborted(() => {
    aborted = true
  })
  const chunks: Buffer[] = []
  res.onData((c, last) => {
    chunks.push(Buffer.from(c.slice(0)))
    if (last && !aborted) then(JSON.parse(Buffer.concat(chunks).toString()))
  })
}

function verified(b: { notification_id: string; player_id: string; rcpt: string }): boolean {
  const mac = createHmac('sha256', RECEIPT_KEY).update(`${b.notification_id}:${b.player_id}`).digest()
  const want = Buffer.from(mac.subarray(0, 24).toString('base64url'))
  const got = Buffer.from(String(b.rcpt))
  return got.length === want.length && timingSafeEqual(got, want)
}

uws
  .App()
  .get('/', (res) => {
    res.cork(() => res.writeHeader('X-Pm-Request-Id', ID).writeHeader('Content-Type', TYPE).end(root))
  })
  .post('/json', (res) => {
    readJson(res, (body) => {
      res.cork(() =>
        res
          .writeHeader('X-Pm-Request-Id', ID)
          .writeHeader('Content-Type', TYPE)
          .end(JSON.stringify({ success: true, id: body.app_id })),
      )
    })
  })
  .post('/receipt', (res) => {
    readJson(res, (body) => {
      const good = verified(body)
      const status = good ? '200 OK' : '403 Forbidden'
      res.cork(() => res.writeStatus(status).writeHeader('X-Pm-Request-Id', ID).writeHeader('Content-Type', TYPE).end(OK))
    })
  })
  .get('/pg-read', (res) => {
    let aborted = false
    res.onAborted(() => {
      aborted = true
    })
    pool?.query(process.env.BARE_PG_SQL as string, JSON.parse(process.env.BARE_PG_PARAMS ?? '[]')).then((r) => {
      if (!aborted)
        res.cork(() =>
          res
            .writeHeader('X-Pm-Request-Id', ID)
            .writeHeader('Content-Type', TYPE)
            .end(JSON.stringify(r.rows[0] ?? null)),
        )
    })
  })
  .listen('127.0.0.1', port, (s) => {
    if (!s) process.exit(1)
  })
