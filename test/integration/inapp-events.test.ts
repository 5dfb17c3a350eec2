// POST /api/v1/inapp/eventos (the spec, In-app device routes): positional verdicts inside a 200, the all-invalid 403,
// the whole-request failures, the `em` window, and each occurrence counted once whatever the retries and races.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { type InappWorld, inappWorld, nowIso } from '../helpers/inapp'
import { FakeClock, startService } from '../helpers/service'

async function served(w: InappWorld, body: Record<string, unknown> = {}): Promise<{ id: string; dev: string; prova: string }> {
  const id = await w.campaign(body)
  const dev = await w.device()
  const p = await w.pending(dev)
  const m = p.json.messages.find((x: { campanha_id: string }) => x.campanha_id === id)
  return { id, dev, prova: m.prova }
}

const ev = (id: string, prova: string, evento: string, n = 1, em = nowIso()) => ({
  campanha_id: id,
  prova,
  evento,
  ocorrencia_n: n,
  em,
})

t.test('verdicts: aceito, duplicado, acima_do_cap, prova_invalida, positional inside a 200; funnel counters', async (t) => {
  const w = await inappWorld(t)
  const { id, dev, prova } = await served(w, { regras: { cap_total: 2 } })
  const r = await w.events(dev, [
    ev(id, prova, 'impressao', 1),
    ev(id, prova, 'impressao', 1),
    ev(id, prova, 'impressao', 3),
    ev(id, `${prova.slice(0, -1)}${prova.endsWith('A') ? 'B' : 'A'}`, 'clique', 1),
    ev(id, prova, 'clique', 1),
    ev(id, prova, 'fechou', 2),
    ev(randomUUID(), prova, 'impressao', 1),
  ])
  t.equal(r.status, 200)
  t.same(r.json, {
    ok: true,
    resultados: ['aceito', 'duplicado', 'acima_do_cap', 'prova_invalida', 'aceito', 'aceito', 'prova_invalida'],
  })
  const again = await w.events(dev, [ev(id, prova, 'impressao', 1), ev(id, prova, 'impressao', 2)])
  t.same(again.json.resultados, ['duplicado', 'aceito'], 'a retry is a duplicate; another occurrence counts')
  await w.s.svc.deps.inapp.served.stop()
  const f = await w.get(`/${id}/funil`)
  t.same(f.json, {
    campanha_id: id,
    nome: 'Campanha sem nome',
    estado: 'ativa',
    servidos: 1,
    impressoes: 2,
    cliques: 1,
    fechados: 1,
    alcance_estimado: 1,
  })
  const unlimited = await served(w, { regras: { cap_total: 0 } })
  t.same(
    (await w.events(unlimited.dev, [ev(unlimited.id, unlimited.prova, 'impressao', 500)])).json.resultados,
    ['aceito'],
    'cap_total 0: unlimited',
  )
})

t.test("403 when every proof is invalid: another device's proof, a made-up proof, a deleted campaign", async (t) => {
  const w = await inappWorld(t)
  const { id, dev, prova } = await served(w)
  const other = await w.device()
  const r = await w.events(other, [ev(id, prova, 'impressao')])
  t.equal(r.status, 403)
  t.equal(r.json.errors[0], 'Prova in-app inválida em todos os itens.')
  t.equal((await w.events(dev, [ev(id, 'x', 'impressao'), ev(id, 'tp3i00.AAAAAAAAAAAAAAAAAAAAAAAA', 'clique')])).status, 403)
  await w.call('DELETE', `/api/v1/in_app_messages/${id}?app_id=${w.app.id}&confirmar=true`)
  t.equal((await w.events(dev, [ev(id, prova, 'impressao')])).status, 403, 'a deleted campaign proves nothing')
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_events'))[0]?.n, 0)
})

t.test('a malformed item fails the whole request: 400 naming it; the em window is 422; nothing written', async (t) => {
  const w = await inappWorld(t)
  const { id, dev, prova } = await served(w)
  const good = ev(id, prova, 'impressao')
  const post = (body: unknown) => w.s.call('POST', '/api/v1/inapp/eventos', { body })
  const base = { app_id: w.app.id, player_id: dev }
  const cases: Array<[string, unknown, number, string]> = [
    ['no items', { ...base, eventos: [] }, 400, 'eventos'],
    ['51 items', { ...base, eventos: Array.from({ length: 51 }, () => good) }, 400, 'eventos'],
    ['eventos not a list', { ...base, eventos: good }, 400, 'eventos'],
    ['app_id malformed', { ...base, app_id: 'x', eventos: [good] }, 400, 'app_id'],
    ['player_id missing', { app_id: w.app.id, eventos: [good] }, 400, 'player_id'],
    ['unknown body field', { ...base, eventos: [good], extra: 1 }, 400, 'extra'],
    ['campanha_id malformed', { ...base, eventos: [good, { ...good, campanha_id: 'nope' }] }, 400, 'eventos[1].campanha_id'],
    ['unknown event', { ...base, eventos: [good, { ...good, evento: 'abriu' }] }, 400, 'eventos[1].evento'],
    ['ocorrencia_n 0', { ...base, eventos: [{ ...good, ocorrencia_n: 0 }] }, 400, 'eventos[0].ocorrencia_n'],
    ['ocorrencia_n 501', { ...base, eventos: [{ ...good, ocorrencia_n: 501 }] }, 400, 'eventos[0].ocorrencia_n'],
    ['ocorrencia_n text', { ...base, eventos: [{ ...good, ocorrencia_n: '1' }] }, 400, 'eventos[0].ocorrencia_n'],
    ['em not RFC 3339', { ...base, eventos: [{ ...good, em: '2026-11-26 10:00:00' }] }, 400, 'eventos[0].em'],
    ['prova empty', { ...base, eventos: [{ ...good, prova: '' }] }, 400, 'eventos[0].prova'],
    ['prova over 64', { ...base, eventos: [{ ...good, prova: 'a'.repeat(65) }] }, 400, 'eventos[0].prova'],
    ['prova with a lone surrogate', { ...base, eventos: [{ ...good, prova: `${prova}\ud800` }] }, 400, 'eventos[0].prova'],
    ['unknown item field', { ...base, eventos: [{ ...good, x: 1 }] }, 400, 'eventos[0].x'],
    [
      'em 8 days ago',
      { ...base, eventos: [good, { ...good, ocorrencia_n: 2, em: nowIso(-8 * 86_400_000) }] },
      422,
      'eventos[1].em',
    ],
    ['em 6 minutes ahead', { ...base, eventos: [{ ...good, em: nowIso(6 * 60_000) }] }, 422, 'eventos[0].em'],
  ]
  for (const [name, body, status, campo] of cases) {
    const r = await post(body)
    t.equal(r.status, status, name)
    t.equal(r.json?.explain?.campo, campo, `${name}: names ${campo}`)
  }
  t.equal(
    (await post({ ...base, eventos: [{ ...good, em: nowIso(4 * 60_000) }] })).json.resultados[0],
    'aceito',
    '4 minutes ahead is inside',
  )
  const raw = await w.s.call('POST', '/api/v1/inapp/eventos', {
    raw: '{"eventos":[',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(raw.status, 400)
  const big = await w.s.call('POST', '/api/v1/inapp/eventos', {
    raw: JSON.stringify({ ...base, eventos: [good], pad: 'x'.repeat(17_000) }),
  })
  t.equal(big.status, 413)
  const unknownApp = await post({ ...base, app_id: randomUUID(), eventos: [good] })
  t.equal(unknownApp.status, 400)
  t.equal(unknownApp.json.errors[0], 'app_id desconhecido.')
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_events'))[0]?.n, 1, 'only the one good request wrote')
})

t.test('concurrent duplicates count once: same batch, many requests, two instances', async (t) => {
  const w = await inappWorld(t)
  const b = await startService(t, { shareWith: w.s, limits: { ipPerMin: 0 } })
  const { id, dev, prova } = await served(w, { regras: { cap_total: 0 } })
  const item = (n: number, e = 'impressao') => ev(id, prova, e, n)
  const onB = (eventos: unknown[]) =>
    b.call('POST', '/api/v1/inapp/eventos', { body: { app_id: w.app.id, player_id: dev, eventos } })
  const reqs = []
  for (let i = 0; i < 20; i++) {
    const batch = [item(1), item(1), item(2), item(3, 'clique'), item((i % 5) + 10, 'fechou')]
    reqs.push(i % 2 ? onB(batch) : w.events(dev, batch))
  }
  const rs = await Promise.all(reqs)
  t.ok(rs.every((r) => r.status === 200))
  const all = rs.flatMap((r) => r.json.resultados as string[])
  t.equal(all.filter((v) => v === 'aceito').length, 3 + 5, 'each distinct occurrence accepted exactly once')
  t.equal(all.filter((v) => v === 'duplicado').length, 100 - 8)
  const [c] = await w.s.sql('SELECT impressoes::int, cliques::int, fechados::int FROM inapp_campaigns WHERE id = $1', [id])
  t.same(c, { impressoes: 2, cliques: 1, fechados: 5 })
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_events'))[0]?.n, 8)
})

t.test('proofs expire: a package older than 7 days + 24 h proves nothing', async (t) => {
  const clock = new FakeClock()
  const w = await inappWorld(t, { clock })
  const { id, dev, prova } = await served(w)
  clock.advance(7 * 86_400_000)
  t.same(
    (await w.events(dev, [ev(id, prova, 'impressao', 1, new Date(clock.ms).toISOString())])).json.resultados,
    ['aceito'],
    'within 8 days',
  )
  clock.advance(86_400_000 + 6 * 3600_000)
  const late = await w.events(dev, [ev(id, prova, 'clique', 1, new Date(clock.ms).toISOString())])
  t.equal(late.status, 403)
})

t.test('events of a paused app: 403; events still count while the channel is off', async (t) => {
  const w = await inappWorld(t)
  const { id, dev, prova } = await served(w)
  await w.config({ inapp_ativo: false })
  t.same((await w.events(dev, [ev(id, prova, 'impressao')])).json.resultados, ['aceito'])
  await w.s.sql('UPDATE apps SET paused = true WHERE id = $1', [w.app.id])
  await w.s.svc.deps.dir.invalidate(w.app.id)
  t.equal((await w.events(dev, [ev(id, prova, 'clique')])).status, 403)
})
