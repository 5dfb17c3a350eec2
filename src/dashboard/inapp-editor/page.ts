// The in-app editor's page (/apps/{app_id}/inapp/nova, and a campaign's page /apps/{app_id}/inapp/{id}): every field
// of the campaign, a preview of the card, the problems the validator finds as the person types, and the buttons the
// state machine allows from the campaign's state (the spec, States: In-app campaign). A campaign's page adds its
// funnel (servidos → impressões → cliques, fechados) and its reach (a count over the app's devices, so fetched by the
// page's script after the page, or asked for with a link).
import type { AppRecord } from '../../apps/store'
import type { FieldProblem } from '../../core/errors'
import type { CampaignShape } from '../../inapp/service'
import { ACTIONS } from '../../inapp/validate-content'
import { AUDIENCES, FORMATS, TRIGGERS } from '../../inapp/validate'
import { html, type Html, when } from '../html'
import type { Viewer } from '../session'
import { errorOf, textField } from '../sends/composer-page'
import { cardPreview } from './card'
import { type EditorState, fieldIdFor, type LanguageFields, MAX_LANGUAGES } from './form'

export interface EditorView {
  app: AppRecord
  v: Viewer
  state: EditorState
  /** The campaign being edited; null for a new one. */
  campaign: CampaignShape | null
  body: Record<string, unknown>
  errors: Map<string, string>
  /** What the validator says of the body as it stands (the preview lists it). */
  problems: readonly FieldProblem[]
  reach?: Record<string, unknown> | null
}

function select(
  errors: Map<string, string>,
  id: string,
  label: string,
  value: string,
  options: ReadonlyArray<readonly [string, string]>,
  o: { disabled?: boolean } = {},
): Html {
  const e = errorOf(errors, id)
  return html`<div class="campo"><label for="${id}">${label}</label><select id="${id}" name="${id}"${e.attrs}${o.disabled ? html` disabled` : ''}>${options.map(
    ([v, l]) => html`<option value="${v}"${v === value ? html` selected` : ''}>${l}</option>`,
  )}</select>${e.note}</div>`
}

const FORMAT_LABELS: Record<string, string> = {
  modal: 'Modal (centro, fundo escurecido)',
  banner_top: 'Faixa no topo',
  banner_bottom: 'Faixa embaixo',
  fullscreen: 'Tela cheia',
}
const AUDIENCE_LABELS: Record<string, string> = {
  todos: 'Todos',
  bloqueados: 'Quem negou a permissão de push',
  nunca_pediu: 'Quem nunca viu o pedido de permissão',
  desinscritos: 'Desinscritos',
  external_ids: 'Lista de IDs externos',
  player_ids: 'Lista de player IDs',
}
const TRIGGER_LABELS: Record<string, string> = {
  ao_abrir: 'Ao abrir o app',
  evento: 'Quando o app sinaliza um estado (chave e valor)',
  sessao_duracao: 'Depois de N segundos de sessão',
  inatividade: 'Ao voltar após N horas sem abrir',
}
const ACTION_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ['', 'Nenhuma'],
  ...ACTIONS.map(
    (a) =>
      [a, a === 'dismiss' ? 'Fechar (dismiss)' : a === 'open_url' ? 'Abrir URL (open_url)' : 'Ajustes de notificação'] as const,
  ),
]
const COMPARATORS = ['igual', 'diferente', 'maior', 'menor', 'existe', 'nao_existe'] as const

function languageFields(errors: Map<string, string>, l: LanguageFields, i: number, off: boolean): Html {
  const p = `c_${i}`
  const n = i === 0 ? '' : ` (idioma ${i + 1})`
  const t = (id: string, label: string, value: string, o: Parameters<typeof textField>[4] = {}) =>
    textField(errors, `${p}_${id}`, `${label}${n}`, value, { ...o, extra: off ? html` disabled` : o.extra })
  return html`<fieldset class="idioma"><legend>Idioma ${i + 1}${l.code ? html`: ${l.code}` : ''}</legend>
${t('idioma', 'Código do idioma', l.code, { hint: i === 0 ? 'O bloco pt é obrigatório.' : undefined })}
${select(
  errors,
  `${p}_forma`,
  `Forma${n}`,
  l.form,
  [
    ['a', 'Campos fixos (título, corpo, imagem, botões)'],
    ['b', 'Blocos (lista JSON)'],
  ],
  { disabled: off },
)}
<div data-mostrar-se="${p}_forma=a">
${t('titulo', 'Título', l.title, { hint: 'Até 80 caracteres.' })}
${t('corpo', 'Corpo', l.body, { area: true, hint: 'Até 240 caracteres.' })}
${t('imagem', 'Imagem (https)', l.image)}
${t('botao_texto', 'Texto do botão', l.button.text)}
${select(errors, `${p}_botao_acao`, `Ação do botão${n}`, l.button.kind, ACTION_OPTIONS, { disabled: off })}
${t('botao_url', 'Endereço do botão', l.button.url, { hint: 'Só com open_url: https://… ou um esquema do app.' })}
${t('botao2_texto', 'Texto do botão secundário', l.secondary.text)}
${select(errors, `${p}_botao2_acao`, `Ação do botão secundário${n}`, l.secondary.kind, ACTION_OPTIONS, { disabled: off })}
${t('botao2_url', 'Endereço do botão secundário', l.secondary.url)}
${select(errors, `${p}_card_acao`, `Ação ao tocar o cartão${n}`, l.card.kind, ACTION_OPTIONS, { disabled: off })}
${t('card_url', 'Endereço ao tocar o cartão', l.card.url)}
</div>
<div data-mostrar-se="${p}_forma=b">
${t('blocos', 'Blocos (JSON)', l.blocks, {
  area: true,
  rows: 6,
  hint: 'Forma B: [{"tipo":"texto","texto":"…"}, {"tipo":"imagem","url":"https://…"}, {"tipo":"botao","texto":"…","acao":{"tipo":"dismiss"}}, {"tipo":"espacador","altura":16}].',
})}
</div>
</fieldset>`
}

/** The buttons of a campaign in this state (the spec's state machine); a new campaign can be saved or published. */
function actions(c: CampaignShape | null): Html {
  const b = (value: string, label: string, o: { confirm?: string; cls?: string } = {}) =>
    html`<button type="submit" name="acao" value="${value}"${o.cls ? html` class="${o.cls}"` : ''}${o.confirm ? html` data-confirmar="${o.confirm}"` : ''}>${label}</button> `
  const state = c?.estado ?? null
  return html`<p class="acoes">${
    state === null || state === 'rascunho'
      ? b('salvar', 'Salvar rascunho', { cls: 'secundario' })
      : state !== 'encerrada'
        ? b('salvar', 'Salvar alterações', { cls: 'secundario' })
        : ''
  }${state === null || state === 'rascunho' || state === 'pausada' ? b('publicar', 'Publicar', { cls: 'principal' }) : ''}${
    state === 'ativa' ? b('pausar', 'Pausar') : ''
  }${
    state !== null && state !== 'encerrada'
      ? b('encerrar', 'Encerrar', { cls: 'perigo', confirm: 'Encerrar a campanha? Encerrar não tem volta (o funil fica).' })
      : ''
  }${state === 'encerrada' ? b('duplicar', 'Duplicar', { cls: 'principal' }) : ''}</p>`
}

/** The preview region's inside: the card and what the validator says. */
export function editorPreview(body: Record<string, unknown>, state: EditorState, problems: readonly FieldProblem[]): Html {
  return html`${cardPreview(body, state.previewLanguage)}
${
  problems.length === 0
    ? html`<p class="ok-previa">A API aceita esta campanha como está.</p>`
    : html`<div class="problemas" role="alert"><p>A API recusaria esta campanha: ${problems.length} problema${problems.length === 1 ? '' : 's'}.</p>
<ul>${problems.map((x) => html`<li><a href="#${fieldIdFor(x.campo, state)}">${x.campo}</a>: ${x.motivo}</li>`)}</ul></div>`
}`
}

/** The reach answer (the spec, Reach answer) as a list; without it, the link that asks for it. */
export function reachPart(c: CampaignShape, reach: Record<string, unknown> | null | undefined, base: string): Html {
  return reach
    ? html`<dl><dt>Alcance estimado</dt><dd id="alcance">${String(reach.alcance_estimado)}</dd><dt>Alcançáveis agora</dt><dd>${String(reach.alcancaveis_agora)}</dd>
<dt>Precisam atualizar o app</dt><dd>${String(reach.precisam_app_atualizado)}</dd><dt>Sem versão informada</dt><dd>${String(reach.sem_versao_reportada)}</dd>
<dt>SDK mínimo</dt><dd>${String(reach.schema_min_efetivo)}</dd></dl>`
    : html`<p><a href="${base}/inapp/${c.id}?alcance=1#h-funil-inapp">Calcular o alcance</a> <small>(conta os dispositivos do público)</small></p>`
}

function funnel(c: CampaignShape, reach: Record<string, unknown> | null | undefined, base: string): Html {
  const k = c.contadores
  const pct = (n: number, of: number) => (of > 0 ? ` (${Math.round((n / of) * 1000) / 10}%)` : '')
  return html`<section aria-labelledby="h-funil-inapp"><h2 id="h-funil-inapp">Funil e alcance</h2>
<ol class="funil-etapas"><li><span class="etapa">Servidos (entraram no pacote de um aparelho)</span> <b>${k.servidos}</b></li>
<li><span class="etapa">Impressões (recibo)</span> <b>${k.impressoes}</b>${pct(k.impressoes, k.servidos)}</li>
<li><span class="etapa">Cliques (recibo)</span> <b>${k.cliques}</b>${pct(k.cliques, k.impressoes)}</li>
<li><span class="etapa">Fechados (recibo)</span> <b>${k.fechados}</b>${pct(k.fechados, k.impressoes)}</li></ol>
<p class="dica">Servidos acima de impressões é normal: o funil pode contar a menos, nunca a mais.</p>
<div id="alcance-campanha" data-alcance="${base}/inapp/${c.id}/alcance.json">${reachPart(c, reach, base)}</div></section>`
}

export function editorBody(e: EditorView): Html {
  const { app, v, state: s, errors, campaign: c } = e
  const base = `/apps/${app.id}`
  const off = c?.estado === 'encerrada'
  const action = c ? `${base}/inapp/${c.id}` : `${base}/inapp/nova`
  const general = errors.get('geral')
  const t = (id: string, label: string, value: string, o: Parameters<typeof textField>[4] = {}) =>
    textField(errors, id, label, value, { ...o, extra: off ? html` disabled` : o.extra })
  const sel = (id: string, label: string, value: string, options: ReadonlyArray<readonly [string, string]>) =>
    select(errors, id, label, value, options, { disabled: off })
  const st = s.style
  const tr = s.trigger
  return html`<p class="trilha"><a href="${base}">${app.name}</a> › <a href="${base}#inapp">In-app</a></p>
<h1>${c ? c.nome : 'Nova campanha in-app'}</h1>
${c ? html`<p class="sub">Estado: <b id="estado-campanha">${c.estado}</b> · criada em ${when(new Date(c.criado_em))}${c.publicado_em ? html` · publicada em ${when(new Date(c.publicado_em))}` : ''}${c.encerrado_em ? html` · encerrada em ${when(new Date(c.encerrado_em))}` : ''}</p>` : ''}
${general ? html`<p role="alert" class="aviso erro">${general}</p>` : ''}
${off ? html`<p class="dica">Campanha encerrada: não pode mais ser editada; Duplicar cria um rascunho igual, com o funil zerado.</p>` : ''}
<div class="compositor">
<form method="post" action="${action}" id="editor-inapp" novalidate data-previa="${base}/inapp/previa">
<input type="hidden" name="_csrf" value="${v.csrf}">
<button type="submit" name="acao" value="previa" class="oculto" tabindex="-1" aria-hidden="true">Atualizar a pré-visualização</button>
<fieldset><legend>Campanha</legend>
${t('nome', 'Nome', s.name, { hint: 'Até 120 caracteres; aparece só no painel.' })}
${sel(
  'formato',
  'Formato',
  s.format,
  FORMATS.map((f) => [f, FORMAT_LABELS[f] ?? f] as const),
)}
</fieldset>
<fieldset><legend>Conteúdo</legend>
${s.languages.map((l, i) => languageFields(errors, l, i, off))}
${!off && s.languages.length < MAX_LANGUAGES ? html`<p><button type="submit" name="acao" value="idioma" class="secundario">Adicionar idioma</button></p>` : ''}
</fieldset>
<fieldset><legend>Estilo</legend>
<div class="duas">
${t('e_fundo', 'Cor de fundo', st.background, { hint: '#rrggbb' })}
${t('e_texto', 'Cor do texto', st.text, { hint: '#rrggbb' })}
${t('e_botao_fundo', 'Cor de fundo dos botões', st.buttonBackground)}
${t('e_botao_texto', 'Cor do texto dos botões', st.buttonText)}
${t('e_raio', 'Raio dos cantos (px)', st.radius, { hint: '0 a 32.', extra: html` inputmode="numeric"` })}
${t('e_padding_px', 'Espaçamento interno (px)', st.padding, { hint: '0 a 64.', extra: html` inputmode="numeric"` })}
${t('e_escurecer', 'Escurecer o fundo', st.dim, { hint: '0 a 1 (modal).', extra: html` inputmode="decimal"` })}
${t('e_fundo_imagem', 'Imagem de fundo (https)', st.backgroundImage)}
</div>
<label class="opcao"><input type="checkbox" id="e_imagem_sangra" name="e_imagem_sangra" value="1"${st.imageBleed ? html` checked` : ''}${off ? html` disabled` : ''}> Imagem sangrando até as bordas</label>
${sel('e_card_acao', 'Ação ao tocar o cartão (todos os idiomas)', st.card.kind, ACTION_OPTIONS)}
${t('e_card_url', 'Endereço ao tocar o cartão (todos os idiomas)', st.card.url)}
<fieldset class="linha-opcoes"><legend>Botão de fechar</legend>
${sel('e_fechar_mostrar', 'Mostrar o X', st.close.show, [
  ['sim', 'Mostrar'],
  ['nao', 'Ocultar (só com modal ou uma ação dismiss)'],
])}
${sel('e_fechar_icone', 'Ícone', st.close.icon, [
  ['', 'Padrão (x)'],
  ['x', 'x'],
  ['x_circulo', 'x em círculo'],
  ['seta', 'seta'],
])}
${t('e_fechar_tamanho', 'Tamanho do X (px)', st.close.size, { hint: '16 a 48.' })}
${t('e_fechar_cor', 'Cor do X', st.close.color)}
${t('e_fechar_fundo', 'Fundo do X', st.close.background)}
</fieldset>
</fieldset>
<fieldset><legend>Público</legend>
${sel(
  'alvo_tipo',
  'Quem vê',
  s.targetKind,
  AUDIENCES.map((a) => [a, AUDIENCE_LABELS[a] ?? a] as const),
)}
${t('alvo', 'IDs do público', s.targets, { area: true, hint: 'Só com as listas: um ID por linha (até 10.000).' })}
</fieldset>
<fieldset><legend>Gatilho</legend>
${sel(
  'g_tipo',
  'Quando mostrar',
  tr.kind,
  TRIGGERS.map((x) => [x, TRIGGER_LABELS[x] ?? x] as const),
)}
${t('g_atraso_ms', 'Atraso (ms)', tr.delayMs, { hint: '0 a 60000; padrão 2000, contado a partir do gatilho.', extra: html` inputmode="numeric"` })}
<div class="duas" data-mostrar-se="g_tipo=evento">
${t('g_chave', 'Chave do evento', tr.key, { hint: 'Evento: letras, dígitos e _ . : - (até 64).' })}
${sel(
  'g_comparador',
  'Comparador',
  tr.comparator,
  COMPARATORS.map((x) => [x, x] as const),
)}
${t('g_valor', 'Valor do evento', tr.value)}
${sel('g_valor_tipo', 'O valor é', tr.valueKind, [
  ['texto', 'texto'],
  ['numero', 'número'],
])}
</div>
<div data-mostrar-se="g_tipo=sessao_duracao">${t('g_segundos', 'Segundos de sessão', tr.seconds, { hint: 'Duração da sessão: 1 a 86400.' })}</div>
<div data-mostrar-se="g_tipo=inatividade">${t('g_horas', 'Horas sem abrir', tr.hours, { hint: 'Inatividade: 1 a 8760.' })}</div>
</fieldset>
<fieldset><legend>Regras</legend><div class="duas">
${t('r_cap_total', 'Vezes por aparelho (cap_total)', s.rules.capTotal, { hint: 'Padrão 1; 0 = sem limite.' })}
${t('r_cooldown_h', 'Horas entre duas exibições (cooldown_h)', s.rules.cooldownH, { hint: 'Padrão 24.' })}
${t('r_fechar_apos_ms', 'Fechar sozinho após (ms)', s.rules.closeAfterMs, { hint: '0 = nunca; até 600000.' })}
${t('r_prioridade', 'Prioridade', s.rules.priority, { hint: 'Padrão 100; a maior vence.' })}
</div></fieldset>
<fieldset><legend>Datas</legend><div class="duas">
${t('inicia', 'Começa em', s.startAt, { hint: 'Opcional. AAAA-MM-DD HH:MM, horário de Brasília (UTC-03:00).' })}
${t('termina', 'Termina em', s.endAt, { hint: 'Opcional.' })}
</div></fieldset>
${actions(c)}
</form>
<section aria-labelledby="titulo-previa" class="previa" id="previa">
<h2 id="titulo-previa">Pré-visualização</h2>
<div class="campo"><label for="previa_idioma">Idioma do aparelho</label><input id="previa_idioma" name="previa_idioma" form="editor-inapp" value="${s.previewLanguage}" size="6"></div>
<div id="previa-conteudo" aria-live="polite">${editorPreview(e.body, s, e.problems)}</div>
</section>
</div>
${c ? funnel(c, e.reach, base) : ''}`
}
