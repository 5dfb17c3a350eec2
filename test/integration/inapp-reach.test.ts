// Reach (capability arithmetic), window statistics (half-open) and reativados attribution (the spec, In-app campaign,
// Versioning).
import t from 'tap'
import { inappWorld, nowIso } from '../helpers/inapp'
import { FakeClock } from '../helpers/service'

t.test('reach: alcance = agora + precisam; sem_versao ⊆ precisam; schema_min_efetivo recomputed', async (t) => {
  const clock = new FakeClock()
  const w = await inappWorld(t, { clock })
  await w.device({ sdk_versao: '0.6.1' })
  await w.device({ sdk_versao: '0.5' })
  await w.device({ sdk_versao: 'v1.2.0-beta' })
  await w.device({ sdk_versao: '0.4.9' })
  await w.device({ sdk_versao: 'nova' })
  const noVersion = await w.device({ sdk_versao: undefined })
  await w.s.sql('UPDATE devices SET sdk_versao = NULL WHERE id = $1', [noVersion])
  const open = await w.campaign({}, false)
  const r = await w.get(`/${open}/alcance`)
  t.same(r.json, {
    campanha_id: open,
    alvo_tipo: 'todos',
    alcance_estimado: 6,
    schema_min_efetivo: '0.5',
    alcancaveis_agora: 3,
    precisam_app_atualizado: 3,
    sem_versao_reportada: 2,
  })
  const ev = await w.campaign({ gatilho: { tipo: 'sessao_duracao', segundos: 30 } }, false)
  t.match((await w.get(`/${ev}/alcance`)).json, {
    schema_min_efetivo: '0.6',
    alcance_estimado: 6,
    alcancaveis_agora: 2,
    precisam_app_atualizado: 4,
    sem_versao_reportada: 2,
  })
  const later = await w.campaign({ inicia_em: new Date(clock.ms + 3600_000).toISOString() }, false)
  t.match((await w.get(`/${later}/alcance`)).json, { schema_min_efetivo: '0.6', alcancaveis_agora: 2 })
  clock.advance(3600_001)
  t.match(
    (await w.get(`/${later}/alcance`)).json,
    { schema_min_efetivo: '0.5', alcancaveis_agora: 3 },
    'once its time came, 0.5 is enough',
  )
  const list = await w.campaign({ alvo_tipo: 'player_ids', alvo: [noVersion] }, false)
  t.match((await w.get(`/${list}/alcance`)).json, {
    alvo_tipo: 'player_ids',
    alcance_estimado: 1,
    alcancaveis_agora: 0,
    precisam_app_atualizado: 1,
    sem_versao_reportada: 1,
  })
  const ext = await w.campaign({ alvo_tipo: 'external_ids', alvo: ['nobody'] }, false)
  t.match((await w.get(`/${ext}/alcance`)).json, { alcance_estimado: 0 })
  t.match((await w.get(`/${open}/funil`)).json, { alcance_estimado: 6, servidos: 0 })
})

t.test('window statistics: half-open [desde, ate), ordered by impressions; 400 for bad windows', async (t) => {
  const w = await inappWorld(t)
  const a = await w.campaign({ nome: 'A', regras: { cap_total: 0 } })
  const b = await w.campaign({ nome: 'B', regras: { cap_total: 0 } })
  const dev = await w.device()
  const pk = (await w.pending(dev)).json.messages as Array<{ campanha_id: string; prova: string }>
  const prova = (id: string) => (pk.find((m) => m.campanha_id === id) as { prova: string }).prova
  const t0 = Date.now() - 3600_000
  const at = (ms: number) => new Date(t0 + ms).toISOString()
  const r = await w.events(dev, [
    { campanha_id: a, prova: prova(a), evento: 'impressao', ocorrencia_n: 1, em: at(0) },
    { campanha_id: b, prova: prova(b), evento: 'impressao', ocorrencia_n: 1, em: at(1000) },
    { campanha_id: b, prova: prova(b), evento: 'impressao', ocorrencia_n: 2, em: at(2000) },
    { campanha_id: b, prova: prova(b), evento: 'clique', ocorrencia_n: 2, em: at(2500) },
    { campanha_id: a, prova: prova(a), evento: 'impressao', ocorrencia_n: 2, em: at(10_000) },
  ])
  t.same(r.json.resultados, ['aceito', 'aceito', 'aceito', 'aceito', 'aceito'])
  const q = (d: string, e: string) => w.get(`/stats?desde=${encodeURIComponent(d)}&ate=${encodeURIComponent(e)}`)
  const s = await q(at(0), at(10_000))
  t.equal(s.status, 200)
  t.same(
    s.json,
    {
      desde: at(0),
      ate: at(10_000),
      totais: { impressoes: 3, cliques: 1, reativados: 0 },
      campanhas: [
        { campanha_id: b, nome: 'B', estado: 'ativa', alvo_tipo: 'todos', impressoes: 2, cliques: 1, reativados: 0 },
        { campanha_id: a, nome: 'A', estado: 'ativa', alvo_tipo: 'todos', impressoes: 1, cliques: 0, reativados: 0 },
      ],
    },
    'desde included, ate excluded',
  )
  t.same((await q(at(10_000), at(10_001))).json.totais, { impressoes: 1, cliques: 0, reativados: 0 })
  t.same((await q(at(20_000), at(30_000))).json.campanhas, [])
  t.equal((await q('ontem', at(1))).status, 400)
  t.equal((await q(at(1), at(1))).status, 400, 'ate must be after desde')
  t.equal((await w.get('/stats')).status, 400)
})

t.test(
  'reativados: a device turning permission on stamps its last-7-days occasions on open_notification_settings campaigns, once',
  async (t) => {
    const w = await inappWorld(t)
    const ask = await w.campaign({
      nome: 'Ative',
      alvo_tipo: 'bloqueados',
      conteudo: {
        pt: { titulo: 'Ative as notificações', botao: { texto: 'Ativar', acao: { tipo: 'open_notification_settings' } } },
      },
    })
    const plain = await w.campaign({ nome: 'Plain', alvo_tipo: 'bloqueados' })
    const ident = `tok-${Date.now()}`
    const register = (perm: number) =>
      w.s.call('POST', '/api/v1/players', {
        body: { app_id: w.app.id, device_type: 1, identifier: ident, sdk_versao: '0.6', notif_permissoes: perm },
      })
    const dev = (await register(2)).json.id
    const bystander = await w.device({ notif_permissoes: 2 })
    const pk = (await w.pending(dev)).json.messages as Array<{ campanha_id: string; prova: string }>
    t.equal(pk.length, 2)
    const evs = pk.map((m) => ({
      campanha_id: m.campanha_id,
      prova: m.prova,
      evento: 'impressao',
      ocorrencia_n: 1,
      em: nowIso(-60_000),
    }))
    t.same((await w.events(dev, evs)).json.resultados, ['aceito', 'aceito'])
    t.equal((await register(2)).status, 200, 'still denied: nothing')
    await w.s.call('POST', '/api/v1/players', {
      body: { app_id: w.app.id, device_type: 1, identifier: `x-${Date.now()}`, notif_permissoes: 3 },
    })
    t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_reactivations'))[0]?.n, 0)
    t.equal((await register(3)).status, 200, 'permission turned on')
    t.equal((await register(2)).status, 200)
    t.equal((await register(3)).status, 200, 'on again: stamped once per campaign and device')
    const rows = await w.s.sql('SELECT campanha_id, device_id FROM inapp_reactivations')
    t.same(rows, [{ campanha_id: ask, device_id: dev }], 'only the campaign with the action; never the bystander')
    t.not(bystander, dev)
    const s = await w.get(`/stats?desde=${encodeURIComponent(nowIso(-3600_000))}&ate=${encodeURIComponent(nowIso(3600_000))}`)
    t.same(s.json.totais, { impressoes: 2, cliques: 0, reativados: 1 })
    t.match(
      s.json.campanhas.find((c: { campanha_id: string }) => c.campanha_id === ask),
      { reativados: 1 },
    )
    t.match(
      s.json.campanhas.find((c: { campanha_id: string }) => c.campanha_id === plain),
      { reativados: 0 },
    )
  },
)

t.test('reativados: occasions older than 7 days are not stamped', async (t) => {
  const w = await inappWorld(t)
  const ask = await w.campaign({
    conteudo: { pt: { titulo: 'x', botao: { texto: 'Ativar', acao: { tipo: 'open_notification_settings' } } } },
  })
  const ident = `tok-old-${Date.now()}`
  const register = (perm: number) =>
    w.s.call('POST', '/api/v1/players', { body: { app_id: w.app.id, device_type: 1, identifier: ident, notif_permissoes: perm } })
  const dev = (await register(0)).json.id
  await w.s.sql(
    `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
     VALUES ($1, $2, $3, 1, 1, now() - interval '8 days', now())`,
    [w.app.id, ask, dev],
  )
  await register(1)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_reactivations'))[0]?.n, 0)
})
