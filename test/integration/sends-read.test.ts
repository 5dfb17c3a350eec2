// Reads of sends (the spec, Notification read shape, Window statistics, Limits reads) and the free-plan gate.
import t from 'tap'
import { measureMau } from '../../src/sends/mau'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

async function device(s: TestService, app: App, identifier: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier, ...extra } })
  return r.json.id
}

function send(s: TestService, app: App, body: Record<string, unknown>) {
  return s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Olá', pt: 'Oi' }, ...body },
    headers: basic(app.api_key),
  })
}

const get = (s: TestService, app: App, path: string) => s.call('GET', path, { headers: basic(app.api_key) })

t.test('every stored text reads back exactly: quotes, backslashes, braces, commas, control characters, NULL', async (t) => {
  // The send write builds its array parameters itself (src/db/arrays.ts): a text that would confuse an array
  // literal or a JSON quoting must reach Postgres and come back byte for byte, and the message must carry it.
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-texts')
  const hostile = 'NULL "q" \\ \\" {a,b} ,\n\ttab \u0007 é 🐦'
  const body = {
    include_player_ids: [a],
    name: hostile,
    contents: { en: hostile, pt: '' },
    headings: { en: hostile },
    data: { k: hostile, '{,}': '"' },
  }
  const sent = await send(s, app, body)
  t.equal(sent.status, 200)
  const n = (await get(s, app, `/api/v1/notifications/${sent.json.id}?app_id=${app.id}`)).json
  t.equal(n.name, hostile)
  t.same(n.contents, body.contents)
  t.same(n.headings, body.headings)
  t.same(n.include_player_ids, [a])
  const [row] = await s.sql<{ message: { contents: unknown; data: unknown } }>('SELECT message FROM sends WHERE id = $1', [
    sent.json.id,
  ])
  t.same(row?.message.contents, body.contents, 'the stored message carries the texts as sent')
  t.same(row?.message.data, { k: hostile, '{,}': '"' })
})

t.test('GET one: the full read shape; free plan withholds recebidos behind a gate', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const sent = await send(s, app, { include_player_ids: [a], headings: { en: 'Título' }, name: 'boas-vindas' })
  const r = await get(s, app, `/api/v1/notifications/${sent.json.id}?app_id=${app.id}`)
  t.equal(r.status, 200)
  const n = r.json
  t.same(Object.keys(n).sort(), [
    'completed_at',
    'contents',
    'converted',
    'errored',
    'external_id',
    'failed',
    'headings',
    'id',
    'include_external_user_ids',
    'include_player_ids',
    'included_segments',
    'name',
    'platform_delivery_stats',
    'pm_metricas',
    'pm_problema',
    'queued_at',
    'recebidos',
    'recebidos_gate',
    'remaining',
    'send_after',
    'successful',
  ])
  t.equal(n.id, sent.json.id)
  t.same([n.successful, n.failed, n.errored, n.remaining, n.converted], [0, 0, 0, 1, 0])
  t.equal(n.recebidos, null)
  t.same(Object.keys(n.recebidos_gate).sort(), ['habilita_em', 'plano_atual', 'por_que'])
  t.equal(n.recebidos_gate.plano_atual, 'free')
  t.ok(Number.isInteger(n.queued_at) && Math.abs(n.queued_at - Date.now() / 1000) < 10, 'epoch seconds')
  t.equal(n.send_after, null)
  t.equal(n.completed_at, null)
  t.equal(n.name, 'boas-vindas')
  t.equal(n.external_id, null, 'none was sent')
  t.same(n.headings, { en: 'Título' })
  t.same(n.contents, { en: 'Olá', pt: 'Oi' })
  t.same(n.included_segments, [], 'always an array')
  t.same(n.include_player_ids, [a])
  t.equal(n.include_external_user_ids, null)
  t.same(n.platform_delivery_stats, { android: { successful: 0, failed: 0 }, ios: { successful: 0, failed: 0 } })
  t.same(Object.keys(n.pm_metricas).sort(), ['cobertura_recibo_pct', 'duracao_ms', 'ttfd_ms', 'via'])
  t.equal(n.pm_metricas.ttfd_ms, null)
  t.equal(n.pm_problema, null)

  await s.svc.deps.apps.setPlan(app.id, 'pro')
  await s.sql("UPDATE sends SET successful = 3, recebidos = 2, remaining = 0, completed_at = queued_at + interval '1500 ms'")
  // A plan change reaches this instance's app cache at once; the read cache is per plan, so this read is fresh.
  const pro = (await get(s, app, `/api/v1/notifications/${sent.json.id}?app_id=${app.id}`)).json
  t.equal(pro.recebidos, 2)
  t.equal(pro.recebidos_gate, undefined)
  t.equal(pro.pm_metricas.cobertura_recibo_pct, 66.7, 'recebidos / successful, one decimal')
  t.equal(pro.pm_metricas.duracao_ms, 1500)
  t.ok(Number.isInteger(pro.completed_at))
})

t.test("GET one: 404 for an unknown send and for another app's send (never 401 for a resource)", async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const a = await device(s, other, 'tok-a')
  const theirs = (await send(s, other, { include_player_ids: [a] })).json.id
  t.equal((await get(s, app, `/api/v1/notifications/${theirs}?app_id=${app.id}`)).status, 404)
  t.equal((await get(s, app, `/api/v1/notifications/00000000-0000-4000-8000-000000000000?app_id=${app.id}`)).status, 404)
  t.equal((await get(s, app, `/api/v1/notifications/${theirs}?app_id=${other.id}`)).status, 401, 'foreign app_id')
  t.equal((await get(s, app, `/api/v1/notifications/${theirs}`)).status, 400, 'app_id missing from the query')
})

t.test('GET list: newest first, limit default and maximum 50, larger silently reduced', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const ids: string[] = []
  for (let i = 0; i < 53; i++) {
    clock.advance(10)
    ids.push((await send(s, app, { include_player_ids: [a], name: `n${i}` })).json.id)
  }
  const all = await get(s, app, `/api/v1/notifications?app_id=${app.id}`)
  t.equal(all.status, 200)
  t.ok(Array.isArray(all.json))
  t.equal(all.json.length, 50)
  t.equal(all.json[0].id, ids[52], 'newest first')
  t.equal(all.json[49].id, ids[3])
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}&limit=500`)).json.length, 50)
  const three = await get(s, app, `/api/v1/notifications?app_id=${app.id}&limit=3`)
  t.same(
    three.json.map((x: { name: string }) => x.name),
    ['n52', 'n51', 'n50'],
  )
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}&limit=0`)).status, 400)
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}&limit=abc`)).status, 400)
})

t.test('webhook mode: the two send-read routes answer 403, stats keep answering', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const id = (await send(s, app, { include_player_ids: [a] })).json.id
  await s.sql("UPDATE apps SET confirm_mode = 'webhook'")
  await s.svc.deps.dir.invalidate(app.id)
  const one = await get(s, app, `/api/v1/notifications/${id}?app_id=${app.id}`)
  t.equal(one.status, 403)
  t.equal(one.json.explain.modo, 'webhook')
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}`)).status, 403)
  const desde = new Date(Date.now() - 3600_000).toISOString()
  const ate = new Date(Date.now() + 3600_000).toISOString()
  t.equal((await get(s, app, `/api/v1/notifications/stats?app_id=${app.id}&desde=${desde}&ate=${ate}`)).status, 200)
})

t.test('stats: half-open window, totals, days in UTC-03', async (t) => {
  const s = await startService(t, { env: { PM_DEFAULT_PLAN: 'pro' } }) // `entregues` is withheld on the free plan
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  for (let i = 0; i < 3; i++) await send(s, app, { include_player_ids: [a] })
  // Place the sends at known instants: 02:30 UTC is still the previous day in UTC-03.
  const ids = (await s.sql('SELECT id FROM sends ORDER BY queued_at')).map((r) => r.id)
  await s.sql(
    "UPDATE sends SET queued_at = '2026-03-10T02:30:00Z', successful = 5, failed = 1, errored = 1, recebidos = 4, converted = 2 WHERE id = $1",
    [ids[0]],
  )
  await s.sql("UPDATE sends SET queued_at = '2026-03-10T12:00:00Z', successful = 1 WHERE id = $1", [ids[1]])
  await s.sql("UPDATE sends SET queued_at = '2026-03-11T00:00:00Z' WHERE id = $1", [ids[2]])
  const q = (desde: string, ate: string) =>
    get(s, app, `/api/v1/notifications/stats?app_id=${app.id}&desde=${encodeURIComponent(desde)}&ate=${encodeURIComponent(ate)}`)
  const r = await q('2026-03-10T00:00:00Z', '2026-03-11T00:00:00Z')
  t.equal(r.status, 200)
  t.equal(r.json.desde, '2026-03-10T00:00:00Z')
  t.equal(r.json.ate, '2026-03-11T00:00:00Z')
  t.same(r.json.totais, { disparos: 2, enviados: 6, falhas: 2, entregues: 4, cliques: 2 }, 'the send at `ate` is outside')
  t.same(r.json.por_dia, [
    { dia: '2026-03-09', enviados: 5, entregues: 4, cliques: 2 },
    { dia: '2026-03-10', enviados: 1, entregues: 0, cliques: 0 },
  ])
  t.equal((await q('2026-03-10T00:00:00-03:00', '2026-03-11T00:00:00-03:00')).json.totais.disparos, 2)
  for (const [desde, ate] of [
    ['', '2026-03-11T00:00:00Z'],
    ['2026-03-10', '2026-03-11T00:00:00Z'],
    ['2026-03-10T00:00:00', '2026-03-11T00:00:00Z'],
    ['2026-03-11T00:00:00Z', '2026-03-10T00:00:00Z'],
    ['2026-03-10T00:00:00Z', '2026-03-10T00:00:00Z'],
  ]) {
    const bad = await q(desde as string, ate as string)
    t.equal(bad.status, 400, `${desde} → ${ate}`)
  }
})

t.test('reads are capped per second per app; a repeat read of one send within a second is not counted', async (t) => {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 + 10)
  const s = await startService(t, { clock, limits: { readsPerSec: 2 } })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const id = (await send(s, app, { include_player_ids: [a] })).json.id
  const path = `/api/v1/notifications/${id}?app_id=${app.id}`
  const statuses = []
  for (let i = 0; i < 5; i++) statuses.push((await get(s, app, path)).status)
  t.same(statuses, [200, 200, 200, 200, 200], 'the same send within a second: one counted read')
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}`)).status, 200)
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}`)).status, 429)
  clock.advance(1000)
  t.equal((await get(s, app, `/api/v1/notifications?app_id=${app.id}`)).status, 200)
})

t.test('PM_READ_CACHE_MAX bounds the repeat-read cache: past it, a repeat read is counted again', async (t) => {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 + 10)
  const s = await startService(t, { clock, limits: { readsPerSec: 2 }, env: { PM_READ_CACHE_MAX: '1' } })
  const app = await s.createApp()
  const a = await device(s, app, 'tok-a')
  const one = (await send(s, app, { include_player_ids: [a] })).json.id
  const two = (await send(s, app, { include_player_ids: [a] })).json.id
  const read = async (id: string) => (await get(s, app, `/api/v1/notifications/${id}?app_id=${app.id}`)).status
  t.same([await read(one), await read(two), await read(one)], [200, 200, 429], 'the first read left the one-entry cache')
})

t.test('free-plan MAU gate: refuses the whole send above the allowance, with the measurement', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock, limits: { freeMau: 2 } })
  const app = await s.createApp()
  const ids = [await device(s, app, 'a'), await device(s, app, 'b'), await device(s, app, 'c')]
  await device(s, app, 'test:sandbox-not-counted')
  // Only devices shown to be real count (mau-proof.test.ts): marked as a provider's first acceptance would mark them.
  await s.sql('UPDATE devices SET push_accepted_at = last_active WHERE app_id = $1', [app.id])
  t.equal((await send(s, app, { include_player_ids: ids })).status, 200, 'no measurement yet: allowed')
  await measureMau(s.svc.deps.db, new Date(clock.ms))
  s.svc.deps.sends.mau.forget()
  clock.advance(5_000)
  const r = await send(s, app, { include_player_ids: ids })
  t.equal(r.status, 422)
  t.equal(r.json.explain.mau_gratis, 2)
  t.equal(r.json.explain.mau, 3)
  t.equal(r.json.explain.medido_ha_s, 5)
  t.match(r.json.explain.mes_medido, /^\d{4}-\d\d$/)
  t.type(r.json.explain.preco_plano_pro, 'string')
  const before = (await s.sql('SELECT count(*)::int AS n FROM sends'))[0]?.n
  t.equal(before, 1, 'the refused send wrote nothing')
  const dry = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'x' }, include_player_ids: ids },
    headers: { ...basic(app.api_key), 'X-Dry-Run': 'true' },
  })
  t.equal(dry.status, 422, 'a dry run is refused the same way')

  clock.advance(s.cfg.limits.mauMaxAgeMs + 1)
  s.svc.deps.sends.mau.forget()
  t.equal((await send(s, app, { include_player_ids: ids })).status, 200, 'a too-old measurement allows the send')

  clock.advance(-(s.cfg.limits.mauMaxAgeMs + 1))
  await s.svc.deps.apps.setPlan(app.id, 'pro')
  s.svc.deps.sends.mau.forget()
  t.equal((await send(s, app, { include_player_ids: ids })).status, 200, 'the pro plan has no such allowance')
})
