// In-app management (the spec, In-app management, States In-app campaign): the config switch, the state machine, PATCH,
// list and read, duplicate, delete, and the app-key rules.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { CARD, inappWorld } from '../helpers/inapp'

t.test('config: off by default; inapp_ativo and inapp_cap_horas; 422 outside 0-168; 400 for a non-boolean', async (t) => {
  const w = await inappWorld(t, {}, false)
  const [row] = await w.s.sql('SELECT inapp_ativo, inapp_cap_horas FROM apps WHERE id = $1', [w.app.id])
  t.same(row, { inapp_ativo: false, inapp_cap_horas: 6 }, 'a new app has the channel off, cap 6')
  t.same((await w.config({})).json, { inapp_ativo: false, inapp_cap_horas: 6 }, 'an empty change answers the current values')
  t.same((await w.config({ inapp_ativo: true })).json, { inapp_ativo: true, inapp_cap_horas: 6 })
  t.same((await w.config({ inapp_cap_horas: 0 })).json, { inapp_ativo: true, inapp_cap_horas: 0 })
  t.same((await w.config({ inapp_cap_horas: 168 })).json, { inapp_ativo: true, inapp_cap_horas: 168 })
  for (const bad of [-1, 169, 1.5, '6', null]) {
    const r = await w.config({ inapp_cap_horas: bad })
    t.equal(r.status, 422, `cap ${JSON.stringify(bad)}`)
    t.equal(r.json.explain.campo, 'inapp_cap_horas')
  }
  const nb = await w.config({ inapp_ativo: 'sim' })
  t.equal(nb.status, 400)
  t.equal(nb.json.explain.campo, 'inapp_ativo')
  t.equal((await w.config({ inapp_ativo: false, extra: 1 })).status, 400, 'an unknown field is refused')
  t.same((await w.config({})).json, { inapp_ativo: true, inapp_cap_horas: 168 }, 'refused calls changed nothing')
  const noKey = await w.s.call('PUT', '/api/v1/in_app_messages/config', { body: { app_id: w.app.id, inapp_ativo: false } })
  t.equal(noKey.status, 401)
})

t.test('PM_INAPP_CAP_HORAS_DEFAULT is the cap a new app starts with', async (t) => {
  const w = await inappWorld(t, { env: { PM_INAPP_CAP_HORAS_DEFAULT: '2' } }, false)
  t.same((await w.config({})).json, { inapp_ativo: false, inapp_cap_horas: 2 })
})

t.test(
  'state machine: create is a draft; publicar, pausar, encerrar; 409 names the state and the accepted origins',
  async (t) => {
    const w = await inappWorld(t)
    const c = await w.create({ nome: '  Boas-vindas  ' })
    t.equal(c.status, 201)
    t.equal(c.json.estado, 'rascunho', 'creating never publishes')
    t.equal(c.json.nome, 'Boas-vindas', 'nome is trimmed')
    const id = c.json.id
    const bad = await w.op(id, 'pausar')
    t.equal(bad.status, 409)
    t.match(bad.json.explain, { estado_atual: 'rascunho', origens_aceitas: ['ativa'] })
    t.match(bad.json.errors[0], /rascunho/)
    const pub = await w.op(id, 'publicar')
    t.equal(pub.status, 200)
    t.equal(pub.json.estado, 'ativa')
    t.ok(pub.json.publicado_em)
    t.match((await w.op(id, 'publicar')).json.explain, { estado_atual: 'ativa', origens_aceitas: ['rascunho', 'pausada'] })
    t.equal((await w.op(id, 'pausar')).json.estado, 'pausada')
    t.equal((await w.op(id, 'publicar')).json.estado, 'ativa', 'pausada → ativa')
    t.equal((await w.op(id, 'pausar')).json.estado, 'pausada')
    const end = await w.op(id, 'encerrar')
    t.equal(end.json.estado, 'encerrada')
    t.ok(end.json.encerrado_em)
    for (const op of ['publicar', 'pausar', 'encerrar']) {
      const r = await w.op(id, op)
      t.equal(r.status, 409, `${op} from encerrada`)
      t.equal(r.json.explain.estado_atual, 'encerrada')
    }
    const draft = await w.create()
    t.equal((await w.op(draft.json.id, 'encerrar')).json.estado, 'encerrada', 'a draft can be ended')
    const dupOfDraft = await w.op((await w.create()).json.id, 'duplicar')
    t.equal(dupOfDraft.status, 409, 'duplicar only from encerrada')
    t.same(dupOfDraft.json.explain.origens_aceitas, ['encerrada'])
  },
)

t.test('concurrent publications: exactly one succeeds', async (t) => {
  const w = await inappWorld(t)
  const id = (await w.create()).json.id
  const rs = await Promise.all(Array.from({ length: 6 }, () => w.op(id, 'publicar')))
  t.equal(rs.filter((r) => r.status === 200).length, 1)
  t.equal(rs.filter((r) => r.status === 409).length, 5)
})

t.test('PATCH: replaces the top-level fields it carries, validated whole; 409 when ended; 404 unknown', async (t) => {
  const w = await inappWorld(t)
  const id = (await w.create({ nome: 'A', regras: { cap_total: 3 }, inicia_em: '2030-01-01T00:00:00Z' })).json.id
  const p = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, nome: 'B', formato: 'banner_top' })
  t.equal(p.status, 200)
  t.match(p.json, {
    nome: 'B',
    formato: 'banner_top',
    regras: { cap_total: 3 },
    inicia_em: '2030-01-01T00:00:00Z',
    estado: 'rascunho',
  })
  const cleared = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, inicia_em: null })
  t.equal(cleared.json.inicia_em, null, 'null clears a date')
  const r2 = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, regras: { prioridade: 5 } })
  t.same(
    r2.json.regras,
    { cap_total: 1, cooldown_h: 24, fechar_apos_ms: 0, prioridade: 5 },
    'regras is replaced whole, defaults apply',
  )
  const invalid = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, {
    app_id: w.app.id,
    formato: 'banner_bottom',
    estilo: { fechar: { mostrar: false } },
    conteudo: { pt: { titulo: 'x' } },
  })
  t.equal(invalid.status, 422, 'an edit that would trap the user is refused')
  t.match(invalid.json.explain.causa, /preso/)
  t.equal((await w.get(`/${id}`)).json.formato, 'banner_top', 'a refused PATCH wrote nothing')
  await w.op(id, 'publicar')
  t.equal(
    (await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, nome: 'C' })).json.nome,
    'C',
    'an active campaign is editable',
  )
  await w.op(id, 'encerrar')
  const ended = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, nome: 'D' })
  t.equal(ended.status, 409)
  t.equal(ended.json.explain.estado_atual, 'encerrada')
  t.equal((await w.call('PATCH', `/api/v1/in_app_messages/${randomUUID()}`, { app_id: w.app.id, nome: 'x' })).status, 404)
  const badId = await w.call('PATCH', '/api/v1/in_app_messages/nope', { app_id: w.app.id, nome: 'x' })
  t.equal(badId.status, 400)
  t.equal(badId.json.explain.campo, 'campaign_id')
})

t.test('read and list: newest first, estado filter, cursor pagination; another app sees nothing', async (t) => {
  const w = await inappWorld(t)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await w.create({ nome: `c${i}` })).json.id)
  await w.op(ids[1] as string, 'publicar')
  const one = await w.get(`/${ids[0]}`)
  t.equal(one.status, 200)
  t.match(one.json, { id: ids[0], app_id: w.app.id, nome: 'c0', estado: 'rascunho', conteudo: CARD })
  const p1 = await w.get('?limit=2')
  t.same(
    p1.json.campanhas.map((c: { nome: string }) => c.nome),
    ['c4', 'c3'],
  )
  t.type(p1.json.proximo, 'string')
  const p2 = await w.get(`?limit=2&cursor=${p1.json.proximo}`)
  t.same(
    p2.json.campanhas.map((c: { nome: string }) => c.nome),
    ['c2', 'c1'],
  )
  const p3 = await w.get(`?limit=2&cursor=${p2.json.proximo}`)
  t.same(
    p3.json.campanhas.map((c: { nome: string }) => c.nome),
    ['c0'],
  )
  t.equal(p3.json.proximo, null)
  t.same(
    (await w.get('?estado=ativa')).json.campanhas.map((c: { nome: string }) => c.nome),
    ['c1'],
  )
  t.equal((await w.get('?limit=0')).status, 400)
  t.equal((await w.get('?estado=viva')).status, 400)
  t.equal((await w.get('?cursor=%25%25')).status, 400)
  t.equal((await w.get(`/${randomUUID()}`)).status, 404)
  t.equal((await w.get('/nao-uuid')).status, 400)
  const other = await w.s.createApp()
  const foreign = await w.s.call('GET', `/api/v1/in_app_messages/${ids[0]}?app_id=${w.app.id}`, {
    headers: { authorization: `Basic ${other.api_key}` },
  })
  t.equal(foreign.status, 401, 'another app key: 401, never the campaign')
  const theirs = await w.s.call('GET', `/api/v1/in_app_messages/${ids[0]}?app_id=${other.id}`, {
    headers: { authorization: `Basic ${other.api_key}` },
  })
  t.equal(theirs.status, 404, 'the campaign does not exist in the other app')
})

t.test('duplicar: a new draft with the definition and counters at zero; 201', async (t) => {
  const w = await inappWorld(t)
  const id = await w.campaign({ nome: 'Orig', regras: { cap_total: 2 } })
  await w.s.sql('UPDATE inapp_campaigns SET servidos = 9, impressoes = 5, cliques = 2, fechados = 1 WHERE id = $1', [id])
  await w.op(id, 'encerrar')
  const d = await w.op(id, 'duplicar')
  t.equal(d.status, 201)
  t.not(d.json.id, id)
  t.match(d.json, {
    estado: 'rascunho',
    nome: 'Orig',
    regras: { cap_total: 2 },
    origem_id: id,
    contadores: { servidos: 0, impressoes: 0, cliques: 0, fechados: 0 },
  })
  t.equal((await w.get(`/${id}`)).json.contadores.impressoes, 5, 'the original keeps its funnel')
})

t.test('DELETE: an active campaign needs confirmar=true (409 otherwise); the funnel and its trail are erased', async (t) => {
  const w = await inappWorld(t)
  const id = await w.campaign()
  const dev = await w.device()
  await w.s.sql(
    `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at) VALUES ($1, $2, $3, 1, 1, now(), now())`,
    [w.app.id, id, dev],
  )
  await w.s.sql('INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at) VALUES ($1, $2, $3, now())', [
    w.app.id,
    id,
    dev,
  ])
  const del = (q: string) => w.call('DELETE', `/api/v1/in_app_messages/${id}?app_id=${w.app.id}${q}`)
  const r = await del('')
  t.equal(r.status, 409)
  t.equal(r.json.explain.estado_atual, 'ativa')
  t.equal((await del('&confirmar=false')).status, 409)
  t.equal((await del('&confirmar=sim')).status, 400)
  const ok = await del('&confirmar=true')
  t.equal(ok.status, 200)
  t.same(ok.json, { ok: true, id })
  t.equal((await w.get(`/${id}`)).status, 404)
  t.equal((await del('&confirmar=true')).status, 404)
  for (const tb of ['inapp_events', 'inapp_served', 'inapp_campaigns']) {
    t.equal((await w.s.sql(`SELECT count(*)::int AS n FROM ${tb}`))[0]?.n, 0, `${tb} erased`)
  }
  const draft = (await w.create()).json.id
  t.equal(
    (await w.call('DELETE', `/api/v1/in_app_messages/${draft}?app_id=${w.app.id}`)).status,
    200,
    'a draft needs no confirmation',
  )
  const paused = await w.campaign()
  await w.op(paused, 'pausar')
  t.equal((await w.call('DELETE', `/api/v1/in_app_messages/${paused}?app_id=${w.app.id}`)).status, 200, 'nor a paused one')
})

t.test('paused app: 403 on management routes', async (t) => {
  const w = await inappWorld(t)
  const id = (await w.create()).json.id
  await w.s.sql('UPDATE apps SET paused = true WHERE id = $1', [w.app.id])
  await w.s.svc.deps.dir.invalidate(w.app.id)
  t.equal((await w.get(`/${id}`)).status, 403)
  t.equal((await w.create()).status, 403)
  t.equal((await w.op(id, 'publicar')).status, 403)
})
