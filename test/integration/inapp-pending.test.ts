// GET /api/v1/inapp/pending (the spec, In-app device routes): the package, its ETag and 304, the channel switch, the
// audience and capability rules, the 20-campaign cap by priority, the cache invalidated across instances, servidos.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { inappWorld } from '../helpers/inapp'
import { FakeClock, startService } from '../helpers/service'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('the package: shape, rules and proof per item, ETag and 304, cap_global_h', async (t) => {
  const w = await inappWorld(t)
  await w.config({ inapp_cap_horas: 12 })
  const id = await w.campaign({ regras: { cap_total: 3, cooldown_h: 2, fechar_apos_ms: 5000, prioridade: 7 } })
  const dev = await w.device()
  const r = await w.pending(dev)
  t.equal(r.status, 200)
  t.match(r.json, { validade_s: 86400, cap_global_h: 12 })
  t.match(r.json.pacote_id, UUID)
  t.equal(r.json.etag, r.headers.get('etag'))
  t.equal(r.json.messages.length, 1)
  const m = r.json.messages[0]
  t.match(m, {
    campanha_id: id,
    formato: 'modal',
    regras: { cap_total: 3, cooldown_h: 2, fechar_apos_ms: 5000, prioridade: 7 },
    gatilho: { tipo: 'ao_abrir' },
  })
  t.type(m.prova, 'string')
  t.ok(m.prova.length >= 1 && m.prova.length <= 64)
  const again = await w.pending(dev)
  t.equal(again.text, r.text, 'the same package while nothing changed')
  const nm = await w.pending(dev, '0.6', { 'if-none-match': r.json.etag })
  t.equal(nm.status, 304)
  t.equal(nm.text, '')
  t.equal(nm.headers.get('etag'), r.json.etag)
  t.ok(nm.headers.get('x-pm-request-id'))
  t.equal((await w.pending(dev, '0.6', { 'if-none-match': `"x", ${r.json.etag}` })).status, 304, 'a list of tags')
  t.equal((await w.pending(dev, '0.6', { 'if-none-match': '"other"' })).status, 200)
  const other = await w.device()
  const o = await w.pending(other)
  t.not(o.json.messages[0].prova, m.prova, 'proofs are per device')
  t.equal((await w.pending(other, '0.6', { 'if-none-match': r.json.etag })).status, 200, "another device's tag does not match")
})

t.test('channel off: 403; unknown app 400; malformed query 400; paused app 403; unknown player: empty list', async (t) => {
  const w = await inappWorld(t, {}, false)
  await w.campaign()
  const dev = await w.device()
  const off = await w.pending(dev)
  t.equal(off.status, 403)
  t.equal(off.json.errors[0], 'Canal In-App desligado.')
  await w.config({ inapp_ativo: true })
  t.equal((await w.pending(dev)).json.messages.length, 1, 'turning it on serves at once')
  const unknownApp = await w.s.call('GET', `/api/v1/inapp/pending?app_id=${randomUUID()}&player_id=${dev}&schema=0.6`)
  t.equal(unknownApp.status, 400)
  t.equal(unknownApp.json.errors[0], 'app_id desconhecido.')
  for (const [q, campo] of [
    [`app_id=nope&player_id=${dev}`, 'app_id'],
    [`app_id=${w.app.id}`, 'player_id'],
    [`app_id=${w.app.id}&player_id=${dev}&schema=latest`, 'schema'],
  ] as const) {
    const r = await w.s.call('GET', `/api/v1/inapp/pending?${q}`)
    t.equal(r.status, 400, q)
    t.equal(r.json.explain.campo, campo)
  }
  const ghost = await w.pending(randomUUID())
  t.equal(ghost.status, 200, 'never 404, also for an unknown player')
  t.same(ghost.json.messages, [])
  t.equal(ghost.json.validade_s, 86400)
  await w.s.sql('UPDATE apps SET paused = true WHERE id = $1', [w.app.id])
  const told = w.s.svc.deps.dir.invalidate(w.app.id)
  // This instance forgets the app's package as its directory drops the app, not when the Redis message comes back.
  t.equal(w.s.svc.deps.inapp.packages.peek(w.app.id), undefined, 'the package is dropped at once on this instance')
  await told
  t.equal((await w.pending(dev)).status, 403)
})

t.test('only active campaigns, by priority, at most 20; drafts, paused and ended ones are not served', async (t) => {
  const w = await inappWorld(t)
  const ids: string[] = []
  for (let i = 0; i < 22; i++) ids.push(await w.campaign({ nome: `p${i}`, regras: { prioridade: i } }))
  await w.campaign({ nome: 'draft', regras: { prioridade: 1000 } }, false)
  const paused = await w.campaign({ nome: 'paused', regras: { prioridade: 1000 } })
  await w.op(paused, 'pausar')
  const ended = await w.campaign({ nome: 'ended', regras: { prioridade: 1000 } })
  await w.op(ended, 'encerrar')
  const dev = await w.device()
  const r = await w.pending(dev)
  t.equal(r.json.messages.length, 20)
  t.same(
    r.json.messages.map((m: { campanha_id: string }) => m.campanha_id),
    ids.slice(2).reverse(),
    'highest priority first; the two lowest left out',
  )
})

t.test('audiences: player_ids, external_ids, permission segments, desinscritos', async (t) => {
  const w = await inappWorld(t)
  const a = await w.device({ external_user_id: 'u-a', notif_permissoes: 2 }) // asked and denied
  const b = await w.device({ notif_permissoes: 0 }) // never asked
  const c = await w.device({ notif_permissoes: 3 }) // allowed
  const dead = await w.device()
  await w.s.sql('UPDATE devices SET invalid_identifier = true WHERE id = $1', [dead])
  const cp = await w.campaign({ alvo_tipo: 'player_ids', alvo: [c] })
  const ce = await w.campaign({ alvo_tipo: 'external_ids', alvo: ['u-a'] })
  const cb = await w.campaign({ alvo_tipo: 'bloqueados' })
  const cn = await w.campaign({ alvo_tipo: 'nunca_pediu' })
  const cd = await w.campaign({ alvo_tipo: 'desinscritos' })
  const ct = await w.campaign({ alvo_tipo: 'todos' })
  const got = async (dev: string) =>
    ((await w.pending(dev)).json.messages as Array<{ campanha_id: string }>).map((m) => m.campanha_id).sort()
  t.same(await got(a), [ce, cb, ct].sort())
  t.same(await got(b), [cn, ct].sort())
  t.same(await got(c), [cp, ct].sort())
  t.same(await got(dead), [cd, ct].sort(), 'a dead token stays in the base (inapp-audiences.test.ts has every state)')
})

t.test(
  'capability: schema absent serves nothing; 0.5 gets ao_abrir only; future inicia_em only to 0.6; termina_em ends it',
  async (t) => {
    const clock = new FakeClock()
    const w = await inappWorld(t, { clock })
    const soon = new Date(clock.ms + 3600_000).toISOString()
    const open = await w.campaign({ regras: { prioridade: 4 } })
    const ev = await w.campaign({ regras: { prioridade: 3 }, gatilho: { tipo: 'evento', chave: 'k', comparador: 'existe' } })
    const later = await w.campaign({ regras: { prioridade: 2 }, inicia_em: soon })
    const ending = await w.campaign({ regras: { prioridade: 1 }, termina_em: soon })
    const dev = await w.device()
    const ids = async (schema: string | null) =>
      ((await w.pending(dev, schema)).json.messages as Array<{ campanha_id: string }>).map((m) => m.campanha_id)
    t.same(await ids(null), [], 'no version: incapable')
    t.same(await ids('0.4'), [])
    t.same(await ids('0.5'), [open, ending])
    t.same(await ids('0.6.3'), [open, ev, later, ending])
    t.same(await ids('1.0'), [open, ev, later, ending])
    clock.advance(3600_000)
    t.same(await ids('0.5'), [open, later], 'once inicia_em passed, 0.5 gets it; termina_em passed ends the other')
  },
)

t.test('the cache: a warm poll costs no database round trip; changes reach every instance at once', async (t) => {
  const w = await inappWorld(t)
  const first = await w.campaign()
  const dev = await w.device()
  const p1 = await w.pending(dev)
  await w.s.svc.deps.inapp.served.stop()
  const db = w.s.svc.deps.db
  const original = db.query.bind(db)
  let calls = 0
  db.query = ((...args: Parameters<typeof original>) => {
    calls++
    return original(...args)
  }) as typeof db.query
  t.teardown(() => {
    db.query = original
  })
  t.equal((await w.pending(dev)).status, 200)
  t.equal((await w.pending(dev, '0.6', { 'if-none-match': p1.json.etag })).status, 304)
  t.equal(calls, 0, 'warm polls (200 and 304) made no query')
  db.query = original

  const b = await startService(t, { shareWith: w.s, limits: { ipPerMin: 0 } })
  const onB = async (headers: Record<string, string> = {}) =>
    b.call('GET', `/api/v1/inapp/pending?app_id=${w.app.id}&player_id=${dev}&schema=0.6`, { headers })
  t.equal((await onB()).json.messages.length, 1, 'instance B warms its cache')
  t.equal((await onB({ 'if-none-match': p1.json.etag })).status, 304, 'the ETag is the same on every instance')
  const second = await w.campaign({ regras: { prioridade: 200 } })
  let seen: string[] = []
  for (let i = 0; i < 50 && seen.length < 2; i++) {
    seen = (await onB()).json.messages.map((m: { campanha_id: string }) => m.campanha_id)
    if (seen.length < 2) await new Promise((r) => setTimeout(r, 20))
  }
  t.same(seen, [second, first], 'a publication on A reaches B')
  t.equal((await onB({ 'if-none-match': p1.json.etag })).status, 200, 'and changes the ETag')
  await w.config({ inapp_ativo: false })
  let status = 200
  for (let i = 0; i < 50 && status === 200; i++) {
    status = (await onB()).status
    if (status === 200) await new Promise((r) => setTimeout(r, 20))
  }
  t.equal(status, 403, 'switching the channel off on A: B answers 403')
})

t.test('servidos: once per (campaign, device) whatever the polls and instances; never for an unknown player', async (t) => {
  const w = await inappWorld(t)
  const id = await w.campaign()
  const b = await startService(t, { shareWith: w.s, limits: { ipPerMin: 0 } })
  const d1 = await w.device()
  const d2 = await w.device()
  const polls = []
  for (let i = 0; i < 10; i++) {
    polls.push(w.pending(d1), w.pending(d2))
    polls.push(b.call('GET', `/api/v1/inapp/pending?app_id=${w.app.id}&player_id=${d1}&schema=0.6`))
  }
  polls.push(w.pending(randomUUID()))
  await Promise.all(polls)
  await w.s.svc.deps.inapp.served.stop()
  await b.svc.deps.inapp.served.stop()
  const funil = await w.get(`/${id}/funil`)
  t.equal(funil.json.servidos, 2)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_served'))[0]?.n, 2)
})

t.test('device routes share the per-IP limit: 429 with Retry-After: 60', async (t) => {
  const w = await inappWorld(t, { limits: { ipPerMin: 3 } })
  const dev = randomUUID()
  t.equal((await w.pending(dev)).status, 200)
  t.equal((await w.events(dev, [])).status, 400)
  t.equal((await w.pending(dev)).status, 200)
  const over = await w.pending(dev)
  t.equal(over.status, 429)
  t.equal(over.headers.get('retry-after'), '60')
  t.equal((await w.events(dev, [])).status, 429)
})

t.test('the query is read like any other: percent-encoding accepted, a malformed escape is 400', async (t) => {
  const w = await inappWorld(t)
  await w.campaign()
  const dev = await w.device()
  const enc = encodeURIComponent(dev.toUpperCase()).replace('-', '%2D')
  const r = await w.s.call('GET', `/api/v1/inapp/pending?app_id=${w.app.id}&player_id=${enc}&schema=0%2E6&schema=x`)
  t.equal(r.status, 200, 'first schema wins, escapes decoded, ids in any case')
  t.equal(r.json.messages.length, 1)
  const bad = await w.s.call('GET', `/api/v1/inapp/pending?app_id=${w.app.id}&player_id=%zz${dev.slice(3)}`)
  t.equal(bad.status, 400)
  t.equal(bad.json.explain.campo, 'player_id')
})

t.test('device facts are cached a minute: a login shows in the package within 60 s; an unknown id within 10 s', async (t) => {
  const clock = new FakeClock()
  const w = await inappWorld(t, { clock })
  const id = await w.campaign({ alvo_tipo: 'external_ids', alvo: ['maria'] })
  const dev = await w.device()
  t.same((await w.pending(dev)).json.messages, [])
  const put = await w.s.call('PUT', `/api/v1/players/${dev}`, { body: { app_id: w.app.id, external_user_id: 'maria' } })
  t.equal(put.status, 200)
  t.same((await w.pending(dev)).json.messages, [], 'still the cached facts')
  clock.advance(60_001)
  t.same(
    (await w.pending(dev)).json.messages.map((m: { campanha_id: string }) => m.campanha_id),
    [id],
    'after the cache minute',
  )
  const late = randomUUID()
  t.same((await w.pending(late)).json.messages, [])
  await w.s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, last_active, created_at, updated_at)
     VALUES ($1, $2, 'tok-late', 1, false, 'fcm', 'maria', now(), now(), now())`,
    [w.app.id, late],
  )
  clock.advance(10_001)
  t.equal((await w.pending(late)).json.messages.length, 1, 'an id unknown at first is looked up again after 10 s')
})
