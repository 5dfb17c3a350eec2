// Campaign validation at the door (the spec, In-app campaign), through POST /api/v1/in_app_messages: every refusal is
// a 422 whose explain.problemas (and causa) list EVERY offending field; a refused body writes nothing.
import t from 'tap'
import { CARD, inappWorld } from '../helpers/inapp'

const FA = CARD.pt
const BTN = { texto: 'Ok', acao: { tipo: 'dismiss' } }

// [name, body overrides, offending fields expected in problemas]
const CASES: Array<[string, Record<string, unknown>, string[]]> = [
  ['unknown top-level field', { cor: '#ffffff' }, ['cor']],
  ['formato outside the list', { formato: 'popup' }, ['formato']],
  ['nome empty after trim', { nome: '   ' }, ['nome']],
  ['alvo_tipo unknown', { alvo_tipo: 'alguns' }, ['alvo_tipo']],
  ['segment with a non-empty list', { alvo_tipo: 'bloqueados', alvo: ['x'] }, ['alvo']],
  ['todos with a list', { alvo_tipo: 'todos', alvo: ['x'] }, ['alvo']],
  ['external_ids with an empty list', { alvo_tipo: 'external_ids', alvo: [] }, ['alvo']],
  ['player_ids with a malformed id', { alvo_tipo: 'player_ids', alvo: ['nope'] }, ['alvo[0]']],
  ['alvo not a list', { alvo_tipo: 'external_ids', alvo: 'u1' }, ['alvo']],
  ['conteudo without pt', { conteudo: { en: FA } }, ['conteudo.pt']],
  ['titulo at the root of conteudo', { conteudo: { pt: FA, titulo: 'x' } }, ['conteudo.titulo']],
  ['bad language key', { conteudo: { pt: FA, 'Pt BR': FA } }, ['conteudo.Pt BR']],
  ['form A and form B mixed', { conteudo: { pt: { titulo: 'x', blocos: [{ tipo: 'texto', texto: 'a' }] } } }, ['conteudo.pt']],
  ['form A empty', { conteudo: { pt: { acao_card: { tipo: 'dismiss' } } } }, ['conteudo.pt']],
  ['titulo over 80', { conteudo: { pt: { titulo: 'a'.repeat(81) } } }, ['conteudo.pt.titulo']],
  ['corpo over 240', { conteudo: { pt: { corpo: 'a'.repeat(241) } } }, ['conteudo.pt.corpo']],
  ['imagem over http', { conteudo: { pt: { imagem: 'http://x.com/a.png' } } }, ['conteudo.pt.imagem']],
  [
    'button text over 24',
    { conteudo: { pt: { botao: { texto: 'a'.repeat(25), acao: { tipo: 'dismiss' } } } } },
    ['conteudo.pt.botao.texto'],
  ],
  ['button without acao', { conteudo: { pt: { botao: { texto: 'Ok' } } } }, ['conteudo.pt.botao.acao']],
  ['secondary button alone', { conteudo: { pt: { titulo: 'x', botao_secundario: BTN } } }, ['conteudo.pt.botao_secundario']],
  [
    'action outside the closed list',
    { conteudo: { pt: { botao: { texto: 'Ok', acao: { tipo: 'share' } } } } },
    ['conteudo.pt.botao.acao.tipo'],
  ],
  [
    'open_url without a scheme',
    { conteudo: { pt: { botao: { texto: 'Ok', acao: { tipo: 'open_url', url: 'exemplo.com/x' } } } } },
    ['conteudo.pt.botao.acao.url'],
  ],
  [
    'open_url over plain http',
    { conteudo: { pt: { botao: { texto: 'Ok', acao: { tipo: 'open_url', url: 'http://exemplo.com' } } } } },
    ['conteudo.pt.botao.acao.url'],
  ],
  [
    'open_url with a space',
    { conteudo: { pt: { botao: { texto: 'Ok', acao: { tipo: 'open_url', url: 'meuapp://a b' } } } } },
    ['conteudo.pt.botao.acao.url'],
  ],
  [
    'url on dismiss',
    { conteudo: { pt: { botao: { texto: 'Ok', acao: { tipo: 'dismiss', url: 'https://x.com' } } } } },
    ['conteudo.pt.botao.acao.url'],
  ],
  [
    '13 blocks',
    { conteudo: { pt: { blocos: Array.from({ length: 13 }, () => ({ tipo: 'espacador', altura: 1 })).concat([]) } } },
    ['conteudo.pt.blocos'],
  ],
  [
    '9 text blocks',
    { conteudo: { pt: { blocos: Array.from({ length: 9 }, () => ({ tipo: 'texto', texto: 'a' })) } } },
    ['conteudo.pt.blocos'],
  ],
  [
    '5 image blocks',
    { conteudo: { pt: { blocos: Array.from({ length: 5 }, () => ({ tipo: 'imagem', url: 'https://x.com/a.png' })) } } },
    ['conteudo.pt.blocos'],
  ],
  [
    '3 button blocks',
    { conteudo: { pt: { blocos: Array.from({ length: 3 }, () => ({ tipo: 'botao', ...BTN })) } } },
    ['conteudo.pt.blocos'],
  ],
  ['only spacers', { conteudo: { pt: { blocos: [{ tipo: 'espacador', altura: 10 }] } } }, ['conteudo.pt.blocos']],
  [
    'block fields out of range',
    {
      conteudo: {
        pt: {
          blocos: [
            {
              tipo: 'texto',
              texto: '',
              cor: 'red',
              fonte: 'comic',
              peso: 'fino',
              tamanho: 9,
              alinhamento: 'justo',
              italico: 'sim',
            },
            { tipo: 'imagem', url: 'http://x.com/a.png', raio: 65, margens: { topo: 65 } },
            { tipo: 'botao', texto: 'Ok', acao: { tipo: 'dismiss' }, raio: 33, cor_fundo: '#12345' },
            { tipo: 'espacador', altura: 201 },
          ],
        },
      },
    },
    [
      'conteudo.pt.blocos[0].texto',
      'conteudo.pt.blocos[0].cor',
      'conteudo.pt.blocos[0].fonte',
      'conteudo.pt.blocos[0].peso',
      'conteudo.pt.blocos[0].tamanho',
      'conteudo.pt.blocos[0].alinhamento',
      'conteudo.pt.blocos[0].italico',
      'conteudo.pt.blocos[1].url',
      'conteudo.pt.blocos[1].raio',
      'conteudo.pt.blocos[1].margens.topo',
      'conteudo.pt.blocos[2].raio',
      'conteudo.pt.blocos[2].cor_fundo',
      'conteudo.pt.blocos[3].altura',
    ],
  ],
  [
    'estilo out of range',
    {
      estilo: {
        fundo: '#fff',
        raio: 33,
        escurecer: 1.5,
        padding_px: 65,
        fundo_imagem: 'http://x',
        fechar: { icone: 'o', tamanho: 15 },
      },
    },
    [
      'estilo.fundo',
      'estilo.raio',
      'estilo.escurecer',
      'estilo.padding_px',
      'estilo.fundo_imagem',
      'estilo.fechar.icone',
      'estilo.fechar.tamanho',
    ],
  ],
  [
    'anti-trap: hidden X on a banner without a dismiss',
    {
      formato: 'banner_top',
      conteudo: { pt: { titulo: 'x', botao: { texto: 'Ir', acao: { tipo: 'open_url', url: 'https://x.com' } } } },
      estilo: { fechar: { mostrar: false } },
    },
    ['estilo.fechar.mostrar'],
  ],
  [
    'anti-trap: one language without an exit',
    {
      formato: 'fullscreen',
      conteudo: { pt: FA, en: { titulo: 'Hi' } },
      estilo: { fechar: { mostrar: false } },
    },
    ['estilo.fechar.mostrar'],
  ],
  ['gatilho parameter without tipo', { gatilho: { segundos: 10 } }, ['gatilho.tipo']],
  ['gatilho field of another type', { gatilho: { tipo: 'ao_abrir', horas: 3 } }, ['gatilho.horas']],
  [
    'gatilho ranges',
    { gatilho: { tipo: 'sessao_duracao', segundos: 0, atraso_ms: 60_001 } },
    ['gatilho.segundos', 'gatilho.atraso_ms'],
  ],
  ['inatividade range', { gatilho: { tipo: 'inatividade', horas: 8761 } }, ['gatilho.horas']],
  [
    'evento: chave with a space, unknown comparator',
    { gatilho: { tipo: 'evento', chave: 'nivel atual', comparador: 'contem', valor: 1 } },
    ['gatilho.chave', 'gatilho.comparador'],
  ],
  [
    'evento: maior refuses text',
    { gatilho: { tipo: 'evento', chave: 'nivel', comparador: 'maior', valor: '10' } },
    ['gatilho.valor'],
  ],
  [
    'evento: more than 6 decimals',
    { gatilho: { tipo: 'evento', chave: 'x', comparador: 'igual', valor: 1.1234567 } },
    ['gatilho.valor'],
  ],
  ['evento: above 1e12', { gatilho: { tipo: 'evento', chave: 'x', comparador: 'menor', valor: -1e12 - 1 } }, ['gatilho.valor']],
  ['evento: existe with a value', { gatilho: { tipo: 'evento', chave: 'x', comparador: 'existe', valor: 1 } }, ['gatilho.valor']],
  [
    'evento: text over 120',
    { gatilho: { tipo: 'evento', chave: 'x', comparador: 'igual', valor: 'a'.repeat(121) } },
    ['gatilho.valor'],
  ],
  [
    'regras: inicia_em inside, ranges',
    { regras: { inicia_em: '2030-01-01T00:00:00Z', cap_total: -1, fechar_apos_ms: 600_001, cooldown_h: 1.5 } },
    ['regras.inicia_em', 'regras.cap_total', 'regras.fechar_apos_ms', 'regras.cooldown_h'],
  ],
  ['termina_em before inicia_em', { inicia_em: '2030-01-02T00:00:00Z', termina_em: '2030-01-01T00:00:00Z' }, ['termina_em']],
]

t.test('a text that cannot be stored exactly is refused at the door (400 naming it, as on every route)', async (t) => {
  const w = await inappWorld(t)
  for (const [body, campo] of [
    [{ conteudo: { pt: { titulo: 'a\ud800b' } } }, 'conteudo.pt.titulo'],
    [{ nome: 'x\udc00' }, 'nome'],
  ] as const) {
    const r = await w.create(body)
    t.equal(r.status, 400, campo)
    t.equal(r.json.explain.campo, campo)
  }
  t.same(await w.s.sql('SELECT id FROM inapp_campaigns'), [], 'nothing written')
})

t.test('each rule is a 422 naming every offending field; nothing is written', async (t) => {
  const w = await inappWorld(t)
  for (const [name, body, fields] of CASES) {
    const r = await w.create(body)
    t.equal(r.status, 422, name)
    const got = (r.json?.explain?.problemas ?? []).map((p: { campo: string }) => p.campo)
    t.same([...new Set(got)].sort(), [...fields].sort(), `${name}: ${r.json?.explain?.causa}`)
    for (const f of fields) t.ok(r.json.explain.causa.includes(f), `${name}: causa names ${f}`)
  }
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_campaigns'))[0]?.n, 0, 'no refused body wrote anything')
})

t.test('one body with several problems lists them all; the trap says the user would be trapped', async (t) => {
  const w = await inappWorld(t)
  const r = await w.create({
    formato: 'banner_bottom',
    alvo_tipo: 'nunca_pediu',
    alvo: ['a'],
    conteudo: { titulo: 'x', pt: { titulo: 'a'.repeat(81), blocos: [] } },
    estilo: { fechar: { mostrar: false } },
    gatilho: { tipo: 'evento', chave: 'k', comparador: 'maior', valor: 'dez' },
  })
  t.equal(r.status, 422)
  const campos = r.json.explain.problemas.map((p: { campo: string }) => p.campo)
  t.same(campos.sort(), ['alvo', 'conteudo.pt', 'conteudo.titulo', 'estilo.fechar.mostrar', 'gatilho.valor'].sort())
  t.match(r.json.errors[0], /preso/)
  t.match(r.json.explain.causa, /preso/)
})

t.test('accepted shapes: exits that allow hiding the X, both forms, every trigger, numbers vs text', async (t) => {
  const w = await inappWorld(t)
  const ok: Array<[string, Record<string, unknown>]> = [
    ['modal may hide the X', { formato: 'modal', conteudo: { pt: { titulo: 'x' } }, estilo: { fechar: { mostrar: false } } }],
    [
      'a dismiss button may hide the X',
      {
        formato: 'fullscreen',
        conteudo: { pt: FA },
        estilo: { fechar: { mostrar: false, icone: 'seta', tamanho: 16, cor: '#000000', fundo: '#FFFFFF' } },
      },
    ],
    [
      'a dismiss card action in estilo',
      {
        formato: 'banner_top',
        conteudo: { pt: { titulo: 'x' } },
        estilo: { acao_card: { tipo: 'dismiss' }, fechar: { mostrar: false } },
      },
    ],
    [
      'form B with every block',
      {
        conteudo: {
          pt: {
            blocos: [
              {
                tipo: 'texto',
                texto: 'a'.repeat(500),
                cor: '#aabbcc',
                fonte: 'serifada',
                peso: 'negrito',
                italico: true,
                sublinhado: false,
                tamanho: 48,
                alinhamento: 'centro',
              },
              {
                tipo: 'imagem',
                url: 'https://x.com/a.png',
                sangra: true,
                raio: 64,
                acao_click: { tipo: 'open_url', url: 'meuapp://promo' },
                margens: { topo: 0, base: 64, esquerda: 1, direita: 2 },
              },
              {
                tipo: 'botao',
                texto: 'a'.repeat(24),
                acao: { tipo: 'open_notification_settings' },
                cor_fundo: '#000000',
                cor_texto: '#ffffff',
                raio: 32,
                fonte: 'monoespacada',
              },
              { tipo: 'espacador', altura: 200 },
            ],
          },
        },
      },
    ],
    ['evento igual to text "10"', { gatilho: { tipo: 'evento', chave: 'nivel.atual:x-1', comparador: 'igual', valor: '10' } }],
    [
      'evento igual to number 10 with 6 decimals',
      { gatilho: { tipo: 'evento', chave: 'nivel', comparador: 'diferente', valor: 10.123456 } },
    ],
    ['evento maior 1e12', { gatilho: { tipo: 'evento', chave: 'k', comparador: 'maior', valor: 1e12 } }],
    ['evento nao_existe', { gatilho: { tipo: 'evento', chave: 'k', comparador: 'nao_existe' } }],
    ['atraso_ms alone', { gatilho: { atraso_ms: 0 } }],
    [
      'sessao_duracao and dates',
      {
        gatilho: { tipo: 'sessao_duracao', segundos: 86_400 },
        inicia_em: '2030-01-01T00:00:00-03:00',
        termina_em: '2030-02-01T00:00:00Z',
      },
    ],
    ['inatividade', { gatilho: { tipo: 'inatividade', horas: 8760 } }],
    ['an astral character is well-formed', { conteudo: { pt: { titulo: 'Olá 🐦' } } }],
  ]
  for (const [name, body] of ok) {
    const r = await w.create(body)
    t.equal(r.status, 201, `${name}: ${r.text.slice(0, 300)}`)
    t.equal(r.json?.estado, 'rascunho', `${name}: born a draft`)
  }
  const text = await w.create({ gatilho: { tipo: 'evento', chave: 'k', comparador: 'igual', valor: '10' } })
  const num = await w.create({ gatilho: { tipo: 'evento', chave: 'k', comparador: 'igual', valor: 10 } })
  t.equal(text.json.gatilho.valor, '10', 'text "10" stays text')
  t.equal(num.json.gatilho.valor, 10, 'number 10 stays a number')
})

t.test('defaults: regras, gatilho, formato, audience; a minimal body is app_id + conteudo', async (t) => {
  const w = await inappWorld(t)
  const r = await w.call('POST', '/api/v1/in_app_messages', { app_id: w.app.id, conteudo: { pt: { titulo: 'x' } } })
  t.equal(r.status, 201)
  t.match(r.json, {
    estado: 'rascunho',
    formato: 'modal',
    alvo_tipo: 'todos',
    alvo: [],
    gatilho: { tipo: 'ao_abrir', atraso_ms: 2000 },
    regras: { cap_total: 1, cooldown_h: 24, fechar_apos_ms: 0, prioridade: 100 },
    inicia_em: null,
    termina_em: null,
    schema_min: '0.5',
    contadores: { servidos: 0, impressoes: 0, cliques: 0, fechados: 0 },
  })
  const noContent = await w.call('POST', '/api/v1/in_app_messages', { app_id: w.app.id })
  t.equal(noContent.status, 422)
  t.same(
    noContent.json.explain.problemas.map((p: { campo: string }) => p.campo),
    ['conteudo'],
  )
  const broken = await w.s.call('POST', '/api/v1/in_app_messages', {
    raw: '{"app_id":',
    headers: { ...w.auth, 'content-type': 'application/json' },
  })
  t.equal(broken.status, 400)
  const noKey = await w.s.call('POST', '/api/v1/in_app_messages', { body: { app_id: w.app.id, conteudo: CARD } })
  t.equal(noKey.status, 401)
  const other = await w.s.createApp()
  const foreign = await w.call('POST', '/api/v1/in_app_messages', { app_id: other.id, conteudo: CARD })
  t.equal(foreign.status, 401, 'a foreign app_id is 401')
})
