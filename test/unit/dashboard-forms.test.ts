// The dashboard's forms and the bodies they stand for: the composer's (a send request) and the in-app editor's (a
// campaign), both ways, and where an API error's field is shown.
import t from 'tap'
import type { CampaignShape } from '../../src/inapp/service'
import { parseCampaign } from '../../src/inapp/validate'
import { Form } from '../../src/dashboard/form'
import { campaignBody, editorOf, fieldIdFor as inappField, readEditor } from '../../src/dashboard/inapp-editor/form'
import { composeBody, emptyState, fieldIdFor, readState, scheduleToSendAfter, testBody } from '../../src/dashboard/sends/compose'

const form = (fields: Record<string, string>) => new Form(new Map(Object.entries(fields)))

t.test('Agendar para: the business zone, several spellings, an offset kept, anything else refused', async (t) => {
  t.equal(scheduleToSendAfter('2026-01-31 09:00'), '2026-01-31T09:00:00-03:00')
  t.equal(scheduleToSendAfter('2026-01-31T09:00:15'), '2026-01-31T09:00:15-03:00')
  t.equal(scheduleToSendAfter('31/01/2026 09:00'), '2026-01-31T09:00:00-03:00')
  t.equal(scheduleToSendAfter('2026-01-31T12:00:00Z'), '2026-01-31T12:00:00Z', 'an explicit offset travels as typed')
  for (const bad of ['amanhã', '2026-01-31', '09:00', '2026-1-3 9:00', '2026-01-31 09:00 GMT'])
    t.equal(scheduleToSendAfter(bad), null, bad)
})

t.test('the composer: the form becomes the API body; errors go beside their fields', async (t) => {
  const s = readState(
    form({
      idioma_0: 'pt',
      titulo_0: 'Oi',
      mensagem_0: 'Olá',
      idioma_1: 'en',
      mensagem_1: 'Hello',
      segmento_0: '1',
      segmento_9: '1',
      player_ids: 'a, b\nc;d  e',
      excluir_ios: '1',
      ttl: '60',
      prioridade: 'urgentíssimo',
      chave: 'forjada',
    }),
  )
  t.same(s.segments, ['Subscribed Users'], 'an unknown segment index is dropped')
  t.equal(s.priority, '', 'an unknown priority is dropped')
  t.match(s.key, /^painel:[0-9a-f-]{36}$/, 'a key not of this form is replaced')
  const { body, problems } = composeBody('app', s)
  t.same(body, {
    app_id: 'app',
    contents: { pt: 'Olá', en: 'Hello' },
    headings: { pt: 'Oi' },
    included_segments: ['Subscribed Users'],
    include_player_ids: ['a', 'b', 'c', 'd', 'e'],
    isIos: false,
    ttl: 60,
  })
  t.equal(problems.size, 0)
  t.equal(composeBody('app', { ...s, ttl: '3 dias' }).body.ttl, '3 dias', 'a TTL that is no number travels as typed')
  const dup = composeBody('app', { ...s, languages: [...s.languages, { code: 'pt', title: '', message: 'de novo' }] })
  t.equal(dup.problems.get('idioma_2'), 'O idioma pt já está na mensagem.')
  t.same(testBody(body, 'dev'), {
    app_id: 'app',
    contents: body.contents,
    headings: body.headings,
    include_player_ids: ['dev'],
    ttl: 60,
    name: 'Teste: nova notificação',
  })
  t.equal(fieldIdFor('contents', s), 'mensagem_0')
  t.equal(fieldIdFor('contents.en', s), 'mensagem_1')
  t.equal(fieldIdFor('headings.pt', s), 'titulo_0')
  t.equal(fieldIdFor('include_player_ids[3]', s), 'publico')
  t.equal(fieldIdFor('include_player_ids|included_segments', s), 'publico')
  t.equal(fieldIdFor('send_after', s), 'agendar')
  t.equal(fieldIdFor('data.x', s), null, 'no such field in the form: at the top')
  t.equal(
    composeBody('app', emptyState()).body.contents &&
      Object.keys(composeBody('app', emptyState()).body.contents as object).length,
    0,
  )
})

t.test('the in-app editor: a stored campaign back to the form and to the same body', async (t) => {
  const body = {
    nome: 'Reengajar',
    formato: 'banner_bottom',
    alvo_tipo: 'external_ids',
    alvo: ['u1', 'u2'],
    conteudo: {
      pt: {
        titulo: 'Volte',
        corpo: 'Temos novidades',
        botao: { texto: 'Ver', acao: { tipo: 'open_url', url: 'https://x.example' } },
        acao_card: { tipo: 'dismiss' },
      },
      en: {
        blocos: [
          { tipo: 'texto', texto: 'Come back', peso: 'negrito' },
          { tipo: 'botao', texto: 'Close', acao: { tipo: 'dismiss' } },
        ],
      },
    },
    estilo: { fundo: '#112233', raio: 8, escurecer: 0.4, fechar: { mostrar: false, icone: 'seta' } },
    gatilho: { tipo: 'evento', chave: 'carrinho', comparador: 'maior', valor: 10, atraso_ms: 500 },
    regras: { cap_total: 3, cooldown_h: 12, fechar_apos_ms: 8000, prioridade: 50 },
    inicia_em: '2030-01-02T09:30:00-03:00',
    termina_em: null,
  }
  const def = parseCampaign(body).def
  const shape = { ...def, id: 'c', app_id: 'a', estado: 'rascunho' } as unknown as CampaignShape
  const back = campaignBody(editorOf(shape), true).body
  t.same(parseCampaign(back).def, def, 'the form keeps every field')
  t.equal(editorOf(shape).startAt, '2030-01-02 09:30', 'the date in the business zone')
  // Posted fields read back the same way.
  const posted = readEditor(
    form({
      nome: 'X',
      formato: 'modal',
      alvo_tipo: 'todos',
      c_0_idioma: 'pt',
      c_0_forma: 'a',
      c_0_corpo: 'Oi',
      g_tipo: 'ao_abrir',
      r_cap_total: 'dois',
    }),
  )
  t.same(campaignBody(posted, false).body.regras, { cap_total: 'dois' }, 'a number that is not one travels as typed')
  const s = editorOf(shape)
  t.equal(inappField('conteudo.pt.botao.acao.url', s), 'c_0_botao_url')
  t.equal(inappField('conteudo.en.blocos[1].acao.tipo', s), 'c_1_blocos')
  t.equal(inappField('estilo.fechar.mostrar', s), 'e_fechar_mostrar')
  t.equal(inappField('gatilho.valor', s), 'g_valor')
  t.equal(inappField('alvo[1]', s), 'alvo')
  t.equal(inappField('conteudo.pt', { ...s, languages: [] }), 'c_0_idioma')
})
