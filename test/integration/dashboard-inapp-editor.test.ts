// The in-app editor over HTTP: a campaign written in the form is the campaign the API stores for the same body,
// refused with the validator's problems beside their fields, previewed with the SDK's language rule, moved through
// the state machine by its buttons (only the ones its state allows) and served to a device's poll once published.
// Another organisation's person gets 404.
import t from 'tap'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { basic, startService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

async function world(t: Parameters<typeof startService>[0]) {
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const org = await makeOrg(s, 'Loja', 'pro')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const app = await s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const c = new DashClient(s.dashboardUrl)
  if ((await c.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
  const base = `/apps/${app.id}`
  const editor = `${base}/inapp/nova`
  const post = async (path: string, fields: Record<string, string>) => {
    const p = await c.get(editor)
    return c.post(path, { _csrf: DashClient.token(p), ...fields })
  }
  return { s, app, org, c, base, editor, post }
}

const beside = (html: string, id: string) =>
  new RegExp(`<p class="erro-campo" id="erro-${id}">([^<]*)</p>`).exec(html)?.[1] ?? null
const buttons = (html: string) => [...html.matchAll(/<button type="submit" name="acao" value="([a-z]+)"/g)].map((m) => m[1])

const CARD_FIELDS = {
  nome: 'Boas-vindas',
  formato: 'modal',
  alvo_tipo: 'todos',
  c_0_idioma: 'pt',
  c_0_forma: 'a',
  c_0_titulo: 'Olá',
  c_0_corpo: 'Bem-vindo à loja',
  c_0_botao_texto: 'Ok',
  c_0_botao_acao: 'dismiss',
  g_tipo: 'ao_abrir',
  r_cap_total: '2',
}

t.test('the editor: the validator beside its fields, the API body, the state machine, a device sees it', async (t) => {
  const w = await world(t)
  const page = await w.c.get(w.editor)
  t.equal(page.status, 200)
  t.match(page.text, /<label for="nome">Nome<\/label><input id="nome" name="nome" type="text"/)
  t.match(page.text, /<h2 id="titulo-previa">Pré-visualização<\/h2>/)
  t.same(buttons(page.text), ['previa', 'idioma', 'salvar', 'publicar'], 'a new campaign: save or publish')
  t.match(page.text, />Salvar rascunho<\/button>/)
  t.match((await w.c.get(w.base)).text, new RegExp(`<a class="botao" href="${w.editor}">Nova campanha</a>`))

  // The preview: the card in the device's language (the SDK's rule), and the validator's verdict as one types.
  const preview = async (fields: Record<string, string>) =>
    JSON.parse((await w.post(`${w.base}/inapp/previa`, fields)).text).html as string
  const twoLangs = { ...CARD_FIELDS, c_1_idioma: 'en', c_1_forma: 'a', c_1_titulo: 'Hello' }
  t.match(
    await preview({ ...twoLangs, previa_idioma: 'en' }),
    /<p class="titulo-previa">Hello<\/p>[\s\S]*<b id="idioma-cartao">en<\/b>/,
  )
  t.match(
    await preview({ ...twoLangs, previa_idioma: 'es' }),
    /<p class="titulo-previa">Olá<\/p>[\s\S]*<b id="idioma-cartao">pt<\/b>/,
  )
  t.match(await preview(CARD_FIELDS), /A API aceita esta campanha como está/)
  const trapped = await preview({
    ...CARD_FIELDS,
    formato: 'banner_top',
    c_0_botao_acao: 'open_url',
    c_0_botao_url: 'https://x.example',
    e_fechar_mostrar: 'nao',
  })
  t.match(trapped, /<a href="#e_fechar_mostrar">estilo\.fechar\.mostrar<\/a>: ocultar o X de fechar deixaria o usuário preso/)

  // Refused: every problem beside its field, nothing stored.
  const bad = await w.post(w.editor, {
    ...CARD_FIELDS,
    c_0_titulo: 'x'.repeat(81),
    g_tipo: 'evento',
    g_chave: 'tem espaço',
    g_comparador: 'maior',
    g_valor: 'dez',
    acao: 'salvar',
  })
  t.equal(bad.status, 422)
  t.equal(beside(bad.text, 'c_0_titulo'), 'conteudo.pt.titulo: deve ter de 1 a 80 caracteres')
  t.match(beside(bad.text, 'g_chave'), /gatilho\.chave: deve ter de 1 a 64 caracteres/)
  t.match(beside(bad.text, 'g_valor'), /maior e menor não comparam texto/)
  t.match(bad.text, /<p role="alert" class="aviso erro">Campanha inválida: 3 campo\(s\) com problema\.<\/p>/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_campaigns')).at(0)?.n, 0)
  // What Postgres cannot store (U+0000), typed or inside the blocks' JSON: refused beside its field, as the API's door does.
  const nul = await w.post(w.editor, { ...CARD_FIELDS, c_0_corpo: 'a\u0000b', acao: 'salvar' })
  t.equal(nul.status, 422)
  t.match(beside(nul.text, 'c_0_corpo'), /conteudo\.pt\.corpo: contém o caractere U\+0000/)
  const nulBlocks = await w.post(w.editor, {
    ...CARD_FIELDS,
    c_0_forma: 'b',
    c_0_blocos: '[{"tipo":"texto","texto":"a\\u0000b"}]',
    acao: 'publicar',
  })
  t.match(beside(nulBlocks.text, 'c_0_blocos'), /U\+0000/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_campaigns')).at(0)?.n, 0, 'nothing stored')

  // Saved as a draft: the stored definition is the one the API stores for the same body.
  const saved = await w.post(w.editor, { ...CARD_FIELDS, inicia: '2030-01-02 09:30', acao: 'salvar' })
  t.equal(saved.status, 303)
  const id = saved.headers.get('location')?.split('/').at(-1) as string
  const viaApi = await w.s.call('POST', '/api/v1/in_app_messages', {
    headers: basic(w.app.api_key),
    body: {
      app_id: w.app.id,
      nome: 'Boas-vindas',
      formato: 'modal',
      alvo_tipo: 'todos',
      alvo: [],
      conteudo: { pt: { titulo: 'Olá', corpo: 'Bem-vindo à loja', botao: { texto: 'Ok', acao: { tipo: 'dismiss' } } } },
      estilo: {},
      gatilho: { tipo: 'ao_abrir' },
      regras: { cap_total: 2 },
      inicia_em: '2030-01-02T09:30:00-03:00',
    },
  })
  t.equal(viaApi.status, 201, viaApi.text)
  const defs = await w.s.sql<{ id: string; definition: unknown }>('SELECT id, definition FROM inapp_campaigns')
  t.same(defs.find((x) => x.id === id)?.definition, defs.find((x) => x.id === viaApi.json.id)?.definition, 'the same campaign')
  await w.s.sql('DELETE FROM inapp_campaigns WHERE id = $1', [viaApi.json.id])

  const draft = await w.c.get(`${w.base}/inapp/${id}`)
  t.match(draft.text, /Rascunho salvo: Boas-vindas/)
  t.match(draft.text, /<b id="estado-campanha">rascunho<\/b>/)
  t.match(draft.text, /value="2030-01-02 09:30"/, 'the date back in the business zone')
  t.same(buttons(draft.text), ['previa', 'idioma', 'salvar', 'publicar', 'encerrar'], 'a draft: save, publish, end')
  // An operation the state does not allow is the service's 409, at the top.
  const wrong = await w.post(`${w.base}/inapp/${id}`, { acao: 'pausar' })
  t.equal(wrong.status, 409)
  t.match(wrong.text, /role="alert" class="aviso erro">[^<]*rascunho/)

  // Published (with an edit saved first); a device of a current SDK gets it in its package.
  await w.s.call('PUT', '/api/v1/in_app_messages/config', {
    headers: basic(w.app.api_key),
    body: { app_id: w.app.id, inapp_ativo: true },
  })
  const pub = await w.post(`${w.base}/inapp/${id}`, { ...CARD_FIELDS, c_0_corpo: 'Boas compras', acao: 'publicar' })
  t.equal(pub.status, 303)
  const active = await w.c.get(`${w.base}/inapp/${id}`)
  t.match(active.text, /<b id="estado-campanha">ativa<\/b>/)
  t.same(buttons(active.text), ['previa', 'idioma', 'salvar', 'pausar', 'encerrar'], 'active: save, pause, end')
  t.match(active.text, />Salvar alterações<\/button>/)
  const dev = await w.s.call('POST', '/api/v1/players', {
    body: { app_id: w.app.id, device_type: 1, identifier: 'tok-inapp', sdk_versao: '0.6.0' },
  })
  const pending = await w.s.call('GET', `/api/v1/inapp/pending?app_id=${w.app.id}&player_id=${dev.json.id}&schema=0.6`)
  t.equal(pending.status, 200)
  t.match(pending.json.messages, [{ campanha_id: id, conteudo: { pt: { corpo: 'Boas compras' } } }], 'served with the edit')

  // Reach on request; pause, end (its funnel stays), duplicate as a new draft.
  t.match((await w.c.get(`${w.base}/inapp/${id}?alcance=1`)).text, /<dd id="alcance">1<\/dd>/)
  t.match(
    JSON.parse((await w.c.get(`${w.base}/inapp/${id}/alcance.json`)).text).html,
    /<dd id="alcance">1<\/dd>/,
    'what the script fetches',
  )
  t.equal((await w.post(`${w.base}/inapp/${id}`, { acao: 'pausar' })).status, 303)
  t.same(buttons((await w.c.get(`${w.base}/inapp/${id}`)).text), ['previa', 'idioma', 'salvar', 'publicar', 'encerrar'])
  t.equal((await w.post(`${w.base}/inapp/${id}`, { acao: 'encerrar' })).status, 303)
  const ended = await w.c.get(`${w.base}/inapp/${id}`)
  t.same(buttons(ended.text), ['previa', 'duplicar'], 'ended: only duplicate')
  t.match(ended.text, /id="nome" name="nome" type="text" value="Boas-vindas"[^>]* disabled/)
  const dup = await w.post(`${w.base}/inapp/${id}`, { acao: 'duplicar' })
  const copy = dup.headers.get('location')?.split('/').at(-1) as string
  t.not(copy, id)
  t.match((await w.c.get(`${w.base}/inapp/${copy}`)).text, /<b id="estado-campanha">rascunho<\/b>/)
  const [row] = await w.s.sql('SELECT origem_id, estado FROM inapp_campaigns WHERE id = $1', [copy])
  t.same(row, { origem_id: id, estado: 'rascunho' })
})

t.test("another organisation's person: 404 on the editor, a campaign and its actions", async (t) => {
  const w = await world(t)
  const saved = await w.post(w.editor, { ...CARD_FIELDS, acao: 'salvar' })
  const id = saved.headers.get('location')?.split('/').at(-1) as string
  const other = await makeOrg(w.s, 'Outra')
  await makePerson(w.s, 'bia@example.com', SENHA, other)
  const bia = new DashClient(w.s.dashboardUrl)
  await bia.signIn('bia@example.com', SENHA)
  const token = DashClient.token(await bia.get('/apps'))
  for (const path of [w.editor, `${w.base}/inapp/${id}`, `${w.base}/inapp/${id}?alcance=1`, `${w.base}/inapp/${id}/alcance.json`])
    t.equal((await bia.get(path)).status, 404, path)
  for (const path of [w.editor, `${w.base}/inapp/${id}`, `${w.base}/inapp/previa`])
    t.equal((await bia.post(path, { _csrf: token, ...CARD_FIELDS, acao: 'publicar' })).status, 404, path)
  t.same(await w.s.sql('SELECT estado FROM inapp_campaigns'), [{ estado: 'rascunho' }], 'nothing changed')
  // A campaign id of the person's own app that is not there: 404 too.
  t.equal((await w.c.get(`${w.base}/inapp/00000000-0000-4000-8000-000000000000`)).status, 404)
})
