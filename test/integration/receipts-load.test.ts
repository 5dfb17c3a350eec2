// Receipts under concurrency and outage: 1,000 parallel copies of one receipt count once, a mixed burst counts
// exactly, and Postgres unreachable answers 503 with nothing counted.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { proof } from '../../src/message/proof'
import { deliveredSend } from '../helpers/receipts'
import { DATABASE_URL, startService } from '../helpers/service'
import { postgresBehindCut } from '../helpers/tcp-cut'

t.test('1,000 copies of one receipt in parallel count once; one answer says counted', async (t) => {
  const w = await deliveredSend(t, { devices: 1, env: { PM_DEFAULT_PLAN: 'pro' } }) // delivery.received: pro plan
  const [a] = w.players as [string]
  await w.s.sql("UPDATE apps SET confirm_mode = 'webhook' WHERE id = $1", [w.app.id])
  const writer = w.s.svc.deps.receipts.writer
  const before = writer.stats.statements
  const answers = await Promise.all(Array.from({ length: 1000 }, () => w.post(w.body(a))))
  t.ok(
    answers.every((r) => r.status === 200),
    'every copy answered 200',
  )
  t.equal(answers.filter((r) => r.json.duplicado !== true).length, 1, 'exactly one counted now')
  t.same(await w.counters(), { recebidos: 1, converted: 0 })
  const events = async () =>
    (await w.s.sql("SELECT evento FROM events WHERE evento LIKE 'delivery.%' ORDER BY seq")).map((e) => e.evento)
  t.same(await events(), ['delivery.received'], 'one event for 1,000 copies')
  t.ok(
    writer.stats.statements - before < 1000,
    `group-committed: ${writer.stats.statements - before} statements for 1,000 receipts`,
  )
  const clicks = await Promise.all(Array.from({ length: 200 }, () => w.post(w.body(a, { evento: 'clique' }))))
  t.equal(clicks.filter((r) => r.json.duplicado !== true).length, 1)
  t.same(await w.counters(), { recebidos: 1, converted: 1 })
  t.same(await events(), ['delivery.received', 'delivery.clicked'])
})

t.test('a mixed parallel burst over many devices counts exactly', async (t) => {
  const w = await deliveredSend(t, { devices: 20, env: { PM_DEFAULT_PLAN: 'pro' } }) // delivery.received: pro plan
  await w.s.sql("UPDATE apps SET confirm_mode = 'webhook' WHERE id = $1", [w.app.id])
  const bodies: Array<Record<string, unknown>> = []
  w.players.forEach((p, i) => {
    // even devices: recebido (x5) and clique (x5); odd devices: clique only (x5).
    for (let k = 0; k < 5; k++) {
      if (i % 2 === 0) bodies.push(w.body(p))
      bodies.push(w.body(p, { evento: 'clique' }))
    }
  })
  bodies.sort(() => Math.random() - 0.5)
  const answers = await Promise.all(bodies.map((b) => w.post(b)))
  t.ok(answers.every((r) => r.status === 200))
  t.same(await w.counters(), { recebidos: 20, converted: 20 })
  const ev = await w.s.sql<{ evento: string; n: number }>(
    "SELECT evento, count(*)::int AS n FROM events WHERE evento LIKE 'delivery.%' GROUP BY evento ORDER BY evento",
  )
  t.same(ev, [
    { evento: 'delivery.clicked', n: 20 },
    { evento: 'delivery.received', n: 20 },
  ])
  // Per device, received is always before clicked.
  const order = await w.s.sql<{ ok: boolean }>(
    `SELECT bool_and(r.seq < c.seq) AS ok FROM events r JOIN events c ON c.body->>'player_id' = r.body->>'player_id'
      WHERE r.evento = 'delivery.received' AND c.evento = 'delivery.clicked'`,
  )
  t.equal(order[0]?.ok, true, 'received before clicked for every device')
  const engaged = await w.s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE last_receipt_at IS NOT NULL')
  t.equal(engaged[0]?.n, 10, 'only devices that sent a recebido are engaged')
})

t.test('Postgres unreachable: 503 naming postgres, nothing counted; recovery after', async (t) => {
  const { proxy, url } = await postgresBehindCut(t, DATABASE_URL)
  const s = await startService(t, { env: { DATABASE_URL: url }, limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const key = Buffer.from(app.receipt_key, 'hex')
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })
  const player = reg.json.id as string
  // A send row as the API writes it (the route only needs it to exist for the app, inside the window).
  const sends = [randomUUID(), randomUUID()]
  for (const id of sends) {
    await s.sql(
      `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                          ttl_s, queued_at, expansion_done, successful)
       VALUES ($1, $2, 0, 'players', '{}', '{}', '{"en":"x"}', 1, true, 0, 60, now(), true, 1)`,
      [app.id, id],
    )
  }
  const body = (id: string) => ({ app_id: app.id, notification_id: id, player_id: player, rcpt: proof(key, id, player) })
  t.same((await s.call('POST', '/api/v1/receipts', { body: body(sends[0] as string) })).json, { ok: true })
  await proxy.cut()
  const r = await s.call('POST', '/api/v1/receipts', { body: body(sends[1] as string) })
  t.equal(r.status, 503)
  t.equal(r.json.explain.dependencia, 'postgres')
  await proxy.open()
  t.same(
    (await s.call('POST', '/api/v1/receipts', { body: body(sends[1] as string) })).json,
    { ok: true },
    'recovers; counted once',
  )
  const rows = await s.sql<{ recebidos: number }>('SELECT recebidos FROM sends ORDER BY recebidos')
  t.same(
    rows.map((x) => x.recebidos),
    [1, 1],
  )
})
