// POST /api/v1/receipts end to end (the spec, Receipt, Receipts, Errors Receipts): a send really delivered to the fake
// FCM, and each device presenting the pm_rcpt it got. Counting, answers, the one 403 wording, the read shape, the
// webhook events, Engaged Users.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { proof } from '../../src/message/proof'
import { deliveredSend } from '../helpers/receipts'
import { basic, startService } from '../helpers/service'

t.test('a delivered proof counts once: ok, then duplicado; ten identical receipts count once', async (t) => {
  const w = await deliveredSend(t, { devices: 2 })
  const [a, b] = w.players as [string, string]
  const first = await w.post(w.body(a))
  t.equal(first.status, 200)
  t.same(first.json, { ok: true })
  t.equal(first.headers.get('content-type'), 'application/json; charset=utf-8')
  t.ok(first.headers.get('x-pm-request-id'))
  t.same((await w.post(w.body(a, { evento: 'recebido' }))).json, { ok: true, duplicado: true })
  const ten = await Promise.all(Array.from({ length: 10 }, () => w.post(w.body(b))))
  t.ok(ten.every((r) => r.status === 200))
  t.equal(ten.filter((r) => r.json.duplicado === undefined).length, 1, 'exactly one of ten is counted now')
  t.same(await w.counters(), { recebidos: 2, converted: 0 })
  const [dev] = await w.s.sql('SELECT last_active, last_receipt_at FROM devices WHERE id = $1', [a])
  t.ok(dev?.last_receipt_at, 'a delivery receipt sets last_receipt_at')
  t.ok(Date.now() - new Date(dev?.last_active).getTime() < 60_000, 'and last_active')
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM receipts'))[0]?.n, 2)
})

t.test('field validation: 400 for every malformed receipt, nothing counted', async (t) => {
  const w = await deliveredSend(t, { devices: 1 })
  const [a] = w.players as [string]
  const good = w.body(a)
  const raw = await w.s.call('POST', '/api/v1/receipts', { raw: '{"app_id":', headers: { 'content-type': 'application/json' } })
  t.equal(raw.status, 400)
  t.equal(raw.json.errors[0], 'JSON inválido.')
  t.equal((await w.post([good])).status, 400, 'an array is not an object')
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['app_id missing', { ...good, app_id: undefined }, 'app_id'],
    ['notification_id missing', { ...good, notification_id: undefined }, 'notification_id'],
    ['player_id missing', { ...good, player_id: undefined }, 'player_id'],
    ['rcpt missing', { ...good, rcpt: undefined }, 'rcpt'],
    ['app_id malformed', { ...good, app_id: 'not-a-uuid' }, 'app_id'],
    ['notification_id malformed', { ...good, notification_id: `${w.sendId}x` }, 'notification_id'],
    ['player_id malformed', { ...good, player_id: 42 }, 'player_id'],
    ['rcpt empty', { ...good, rcpt: '' }, 'rcpt'],
    ['rcpt over 64', { ...good, rcpt: 'a'.repeat(65) }, 'rcpt'],
    ['rcpt not text', { ...good, rcpt: 12345 }, 'rcpt'],
    ['evento other', { ...good, evento: 'abriu' }, 'evento'],
    ['evento not text', { ...good, evento: 1 }, 'evento'],
  ]
  for (const [name, body, campo] of cases) {
    const r = await w.post(body)
    t.equal(r.status, 400, name)
    t.equal(r.json.explain.campo, campo, `${name}: names ${campo}`)
  }
  const unknown = await w.post({ ...good, app_id: randomUUID() })
  t.equal(unknown.status, 400)
  t.equal(unknown.json.errors[0], 'app_id desconhecido.')
  const sixtyFour = await w.post({ ...good, rcpt: 'a'.repeat(64) })
  t.equal(sixtyFour.status, 403, '64 characters is a well-formed (but wrong) proof')
  t.same(await w.counters(), { recebidos: 0, converted: 0 })
  t.same((await w.post(good)).json, { ok: true }, 'the good one still counts')
})

t.test('one 403 wording: forged, another device, another send, unknown send, past the window; paused app', async (t) => {
  const w = await deliveredSend(t, { devices: 2 })
  const [a, b] = w.players as [string, string]
  const second = await w.sendTo([a])
  const key = Buffer.from(w.app.receipt_key, 'hex')
  const statements = () => w.s.svc.deps.receipts.writer.stats.statements
  const before = statements()
  const forged = await w.post(w.body(a, { rcpt: `${w.rcpt(a).slice(0, 31)}${w.rcpt(a).endsWith('A') ? 'B' : 'A'}` }))
  const aForB = await w.post({ ...w.body(a), player_id: b })
  const otherSend = await w.post({ ...w.body(a), notification_id: second })
  t.equal(statements(), before, 'a proof that does not verify never reaches the database: no send is looked up')
  const ghost = randomUUID()
  const unknownSend = await w.post({ app_id: w.app.id, notification_id: ghost, player_id: a, rcpt: proof(key, ghost, a) })
  const other = await w.s.createApp()
  const otherApp = await w.post({ ...w.body(a), app_id: other.id })
  for (const [name, r] of Object.entries({ forged, aForB, otherSend, unknownSend, otherApp })) {
    t.equal(r.status, 403, name)
    t.same(r.json.errors, forged.json.errors, `${name}: same text`)
    t.equal(r.json.explain.causa, forged.json.explain.causa, `${name}: same causa`)
    t.same(Object.keys(r.json.explain).sort(), ['causa', 'como_corrigir', 'request_id'], `${name}: nothing more`)
  }
  t.equal(forged.json.errors[0], 'Prova de recebimento inválida.')
  // 90-day window (counted from when the send was due): an older send answers the same 403.
  await w.s.sql("UPDATE sends SET queued_at = now() - interval '91 days' WHERE id = $1", [second])
  const old = await w.post(w.body(a, {}, second))
  t.equal(old.status, 403)
  t.same(old.json.errors, forged.json.errors)
  await w.s.sql("UPDATE sends SET queued_at = now() - interval '89 days' WHERE id = $1", [second])
  t.same((await w.post(w.body(a, {}, second))).json, { ok: true }, 'inside the window it counts')
  t.same(await w.counters(), { recebidos: 0, converted: 0 }, 'nothing counted on the first send')

  await w.s.svc.deps.apps.setPaused(w.app.id, true)
  const paused = await w.post(w.body(a))
  t.equal(paused.status, 403)
  t.equal(paused.json.errors[0], 'App pausado.')
  t.same(await w.counters(), { recebidos: 0, converted: 0 })
})

t.test('clique: without a prior recebido it counts as both; after one, converted only; repeated, duplicado', async (t) => {
  const w = await deliveredSend(t, { devices: 2 })
  const [a, b] = w.players as [string, string]
  t.same((await w.post(w.body(a, { evento: 'clique' }))).json, { ok: true })
  t.same(await w.counters(), { recebidos: 1, converted: 1 }, 'a click alone is an arrival and a click')
  t.same(
    (await w.post(w.body(a, { evento: 'recebido' }))).json,
    { ok: true, duplicado: true },
    'the late recebido was already counted',
  )
  t.same((await w.post(w.body(a, { evento: 'clique' }))).json, { ok: true, duplicado: true })
  t.same((await w.post(w.body(b))).json, { ok: true })
  t.same((await w.post(w.body(b, { evento: 'clique' }))).json, { ok: true }, 'the click after a recebido is new')
  t.same(await w.counters(), { recebidos: 2, converted: 2 })
  t.same((await w.post(w.body(b, { evento: 'clique' }))).json, { ok: true, duplicado: true })
  t.same(await w.counters(), { recebidos: 2, converted: 2 })
})

t.test('the read shape and window statistics show the counters; free plan gates recebidos', async (t) => {
  const w = await deliveredSend(t, { devices: 3 })
  const [a, b] = w.players as [string, string]
  await w.post(w.body(a))
  await w.post(w.body(b, { evento: 'clique' }))
  const read = () => w.s.call('GET', `/api/v1/notifications/${w.sendId}?app_id=${w.app.id}`, { headers: basic(w.app.api_key) })
  const free = (await read()).json
  t.equal(free.recebidos, null)
  t.equal(free.recebidos_gate.plano_atual, 'free')
  t.equal(free.converted, 1)
  t.equal(free.pm_metricas.cobertura_recibo_pct, null)
  await w.s.svc.deps.apps.setPlan(w.app.id, 'pro')
  const pro = (await read()).json
  t.equal(pro.successful, 3)
  t.equal(pro.recebidos, 2)
  t.equal(pro.recebidos_gate, undefined)
  t.equal(pro.converted, 1)
  t.equal(pro.pm_metricas.cobertura_recibo_pct, 66.7)
  const desde = new Date(Date.now() - 3600_000).toISOString()
  const ate = new Date(Date.now() + 3600_000).toISOString()
  const stats = await w.s.call('GET', `/api/v1/notifications/stats?app_id=${w.app.id}&desde=${desde}&ate=${ate}`, {
    headers: basic(w.app.api_key),
  })
  t.equal(stats.status, 200)
  t.equal(stats.json.totais.enviados, 3)
  t.equal(stats.json.totais.entregues, 2)
  t.equal(stats.json.totais.cliques, 1)
})

t.test('webhook events: only in webhook mode, in the receipt transaction, with the exact body', async (t) => {
  const w = await deliveredSend(t, { devices: 3, env: { PM_DEFAULT_PLAN: 'pro' } }) // delivery.received: pro plan
  const [a, b, c] = w.players as [string, string, string]
  const events = () =>
    w.s.sql("SELECT seq, app_id, evento, body, created_at FROM events WHERE evento LIKE 'delivery.%' ORDER BY seq")
  await w.post(w.body(a))
  t.same(await events(), [], 'consulta mode writes no event')
  await w.s.sql("UPDATE apps SET confirm_mode = 'webhook' WHERE id = $1", [w.app.id])
  t.same((await w.post(w.body(b))).json, { ok: true })
  t.same((await w.post(w.body(c, { evento: 'clique' }))).json, { ok: true })
  await w.post(w.body(b))
  await w.post(w.body(c, { evento: 'clique' }))
  const ev = await events()
  t.same(
    ev.map((e) => e.evento),
    ['delivery.received', 'delivery.received', 'delivery.clicked'],
    'duplicates write nothing; received before clicked',
  )
  const base = { app_id: w.app.id, notification_id: w.sendId, canal: 'webhook' }
  t.same(ev[0]?.body, { ...base, evento: 'delivery.received', player_id: b, quando: ev[0]?.body.quando })
  t.same(ev[2]?.body, { ...base, evento: 'delivery.clicked', player_id: c, quando: ev[2]?.body.quando })
  for (const e of ev) {
    t.same(Object.keys(e.body).sort(), ['app_id', 'canal', 'evento', 'notification_id', 'player_id', 'quando'])
    t.match(e.body.quando, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/, 'ISO 8601 with an offset')
    t.equal(e.app_id, w.app.id)
  }
  const [rc] = await w.s.sql('SELECT at FROM receipts WHERE device_id = $1 AND kind = 0', [b])
  t.equal(new Date(ev[0]?.created_at).getTime(), new Date(rc?.at).getTime(), 'written with the receipt')
})

t.test('Engaged Users: a delivery receipt in the last 7 days; a click alone does not count', async (t) => {
  const w = await deliveredSend(t, { devices: 4 })
  const [recent, clickOnly, old] = w.players as [string, string, string, string]
  await w.post(w.body(recent))
  await w.post(w.body(clickOnly, { evento: 'clique' }))
  await w.post(w.body(old))
  await w.s.sql("UPDATE devices SET last_receipt_at = now() - interval '8 days' WHERE id = $1", [old])
  const [co] = await w.s.sql('SELECT last_receipt_at, last_active FROM devices WHERE id = $1', [clickOnly])
  t.equal(co?.last_receipt_at, null, 'a click never sets last_receipt_at, even when it counted as an arrival')
  t.ok(co?.last_active)
  const before = w.d.fcm.delivered.length
  const id = await w.d.send(w.app, { included_segments: ['Engaged Users'] })
  await w.d.closed(id)
  const got = w.d.fcm.delivered.slice(before).filter((r) => r.body.message.data.pm_msg_id === id)
  t.equal(got.length, 1, 'only the device with a recent delivery receipt')
  t.equal(got[0]?.body.message.data.pm_rcpt, w.rcpt(recent, id))
})

t.test('413 over 16 KB; 429 per IP with Retry-After: 60', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 3 } })
  const app = await s.createApp()
  const big = JSON.stringify({
    app_id: app.id,
    notification_id: randomUUID(),
    player_id: randomUUID(),
    rcpt: 'x',
    pad: 'p'.repeat(16 * 1024),
  })
  const r413 = await s.call('POST', '/api/v1/receipts', { raw: big, headers: { 'content-type': 'application/json' } })
  t.equal(r413.status, 413)
  t.equal(r413.json.explain.limite, 16384)
  const body = { app_id: app.id, notification_id: randomUUID(), player_id: randomUUID(), rcpt: 'x' }
  t.equal((await s.call('POST', '/api/v1/receipts', { body })).status, 403)
  t.equal((await s.call('POST', '/api/v1/receipts', { body })).status, 403)
  const limited = await s.call('POST', '/api/v1/receipts', { body })
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('retry-after'), '60')
  t.equal(limited.json.explain.limite, 3)
})
