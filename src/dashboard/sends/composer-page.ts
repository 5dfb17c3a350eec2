// The composer's page (/apps/{app_id}/envios/novo): the message per language, the tap URL and image, the audience
// (segments, pasted lists, platform exclusions), schedule, TTL and priority, a test send to one device, and `Enviar`
// (which asks for confirmation with the audience's size), beside the live preview. Errors sit beside the field that
// caused them (aria-invalid + aria-describedby); the page works without its script, which adds the live preview,
// the device search and the confirmation dialog.
import type { AppRecord } from '../../apps/store'
import { SEGMENTS } from '../../message/types'
import { html, type Html } from '../html'
import type { Viewer } from '../session'
import { MAX_LANGUAGES, type ComposerState } from './compose'
import { type PreviewModel, previewHtml } from './preview'

export interface ComposerView {
  app: AppRecord
  v: Viewer
  state: ComposerState
  preview: PreviewModel
  /** field id → message shown beside it; `geral` is shown at the top. */
  errors: Map<string, string>
  /** The result of a test send just made. */
  test?: { sendId: string; deviceId: string; text: string } | null
}

/** The error text beside a field, and the attributes that tie the field to it. */
export function errorOf(errors: Map<string, string>, id: string): { attrs: Html; note: Html } {
  const e = errors.get(id)
  if (!e) return { attrs: html``, note: html`` }
  return {
    attrs: html` aria-invalid="true" aria-describedby="erro-${id}"`,
    note: html`<p class="erro-campo" id="erro-${id}">${e}</p>`,
  }
}

export function textField(
  errors: Map<string, string>,
  id: string,
  label: string,
  value: string,
  o: { hint?: string; type?: string; area?: boolean; rows?: number; extra?: Html } = {},
): Html {
  const e = errorOf(errors, id)
  const described = [errors.has(id) ? `erro-${id}` : '', o.hint ? `dica-${id}` : ''].filter((x) => x !== '').join(' ')
  const attrs = html`${errors.has(id) ? html` aria-invalid="true"` : ''}${described ? html` aria-describedby="${described}"` : ''}`
  const control = o.area
    ? html`<textarea id="${id}" name="${id}" rows="${o.rows ?? 3}"${attrs}>${value}</textarea>`
    : html`<input id="${id}" name="${id}" type="${o.type ?? 'text'}" value="${value}"${attrs}${o.extra ?? ''}>`
  return html`<div class="campo"><label for="${id}">${label}</label>${control}${o.hint ? html`<small class="dica" id="dica-${id}">${o.hint}</small>` : ''}${e.note}</div>`
}

export function checkbox(id: string, label: string, checked: boolean, value = '1'): Html {
  return html`<label class="opcao"><input type="checkbox" id="${id}" name="${id}" value="${value}"${checked ? html` checked` : ''}> ${label}</label>`
}

function languageBlock(s: ComposerState, errors: Map<string, string>, i: number): Html {
  const l = s.languages[i] as ComposerState['languages'][number]
  // The first language's boxes are named exactly Título and Mensagem (the contract); the others say their number.
  const n = i === 0 ? '' : ` (idioma ${i + 1})`
  return html`<fieldset class="idioma"><legend>Idioma ${i + 1}${l.code ? html`: ${l.code}` : ''}</legend>
${textField(errors, `idioma_${i}`, i === 0 ? 'Código do idioma' : `Código do idioma ${i + 1}`, l.code, {
  extra: html` size="6" autocomplete="off"`,
})}
${textField(errors, `titulo_${i}`, `Título${n}`, l.title)}
${textField(errors, `mensagem_${i}`, `Mensagem${n}`, l.message, { area: true })}
</fieldset>`
}

export function composerBody(c: ComposerView): Html {
  const { app, v, state: s, errors } = c
  const base = `/apps/${app.id}`
  const audience = errorOf(errors, 'publico')
  const general = errors.get('geral')
  return html`<p class="trilha"><a href="${base}">${app.name}</a> › <a href="${base}/envios">Envios</a></p>
<h1>Nova notificação</h1>
${general ? html`<p role="alert" class="aviso erro">${general}</p>` : ''}
<div class="compositor">
<form method="post" action="${base}/envios/novo" id="compositor" novalidate data-previa="${base}/envios/previa" data-contar="${base}/envios/contar" data-busca="${base}/envios/dispositivos.json">
<input type="hidden" name="_csrf" value="${v.csrf}"><input type="hidden" name="chave" value="${s.key}">
<button type="submit" name="acao" value="previa" class="oculto" tabindex="-1" aria-hidden="true">Atualizar a pré-visualização</button>
<fieldset><legend>Mensagem</legend>
${s.languages.map((_, i) => languageBlock(s, errors, i))}
${
  s.languages.length < MAX_LANGUAGES
    ? html`<p><button type="submit" name="acao" value="idioma" class="secundario">Adicionar idioma</button></p>`
    : ''
}
${textField(errors, 'url', 'URL ao tocar', s.url, { type: 'url', hint: 'Para onde o toque leva (url: chega ao aparelho como pm_url).' })}
${textField(errors, 'imagem', 'Imagem (URL)', s.image, { type: 'url', hint: 'big_picture: uma URL http(s) absoluta.' })}
</fieldset>
<fieldset id="publico"${audience.attrs}><legend>Público</legend>
${audience.note}
<fieldset class="linha-opcoes"><legend>Segmentos</legend>${SEGMENTS.map((name, i) => checkbox(`segmento_${i}`, name, s.segments.includes(name)))}</fieldset>
${textField(errors, 'player_ids', 'Player IDs', s.playerIds, { area: true, hint: 'Um por linha (ou separados por vírgula); até 2.000.' })}
${textField(errors, 'external_ids', 'IDs externos (external_user_id)', s.externalIds, {
  area: true,
  hint: 'Um por linha; cada pessoa recebe em todos os dispositivos dela.',
})}
<fieldset class="linha-opcoes"><legend>Excluir plataformas</legend>
${checkbox('excluir_ios', 'Excluir iOS', s.exclude.ios)}${checkbox('excluir_android', 'Excluir Android', s.exclude.android)}${checkbox('excluir_web', 'Excluir web', s.exclude.web)}</fieldset>
<p class="dica">Use um só tipo de público por envio: segmentos, player IDs ou IDs externos.</p>
</fieldset>
<fieldset><legend>Entrega</legend>
${textField(errors, 'agendar', 'Agendar para', s.scheduleAt, {
  hint: 'Opcional. AAAA-MM-DD HH:MM no horário de Brasília (UTC-03:00), até 28 dias à frente; vazio envia agora.',
  extra: html` placeholder="2026-01-31 09:00" autocomplete="off"`,
})}
${textField(errors, 'ttl', 'TTL (segundos)', s.ttl, {
  hint: 'Opcional. Quanto tempo o provedor guarda a mensagem para um aparelho desligado: 0 a 2419200 (padrão 259200, 3 dias).',
  extra: html` inputmode="numeric"`,
})}
<div class="campo"><label for="prioridade">Prioridade</label><select id="prioridade" name="prioridade"${errorOf(errors, 'prioridade').attrs}>
<option value=""${s.priority === '' ? html` selected` : ''}>Padrão (transacional)</option>
<option value="transactional"${s.priority === 'transactional' ? html` selected` : ''}>Transacional (alta)</option>
<option value="marketing"${s.priority === 'marketing' ? html` selected` : ''}>Marketing (normal)</option></select>${errorOf(errors, 'prioridade').note}</div>
${textField(errors, 'nome', 'Nome interno', s.name, { hint: 'Opcional; aparece na lista de envios.' })}
</fieldset>
<fieldset><legend>Teste</legend>
${textField(errors, 'teste_dispositivo', 'Dispositivo de teste', s.testDevice, {
  type: 'search',
  hint: 'Player id, external user id ou token; a busca sugere dispositivos enquanto você digita.',
  extra: html` list="sugestoes-teste" autocomplete="off"`,
})}<datalist id="sugestoes-teste"></datalist>
<p><button type="submit" name="acao" value="teste" class="secundario">Enviar teste</button></p>
<div id="resultado-teste" role="status"${c.test ? html` data-estado="${base}/envios/${c.test.sendId}/teste.json?dispositivo=${c.test.deviceId}"` : ''}>${
    // Which device the test went to stays on the page; the script replaces only the provider's state beside it.
    c.test
      ? html`<p>${c.test.text} <span class="estado-teste">Aguardando o provedor…</span> <a href="${base}/envios/${c.test.sendId}">Página do teste</a></p>`
      : ''
  }</div>
</fieldset>
<p class="acoes"><button type="submit" name="acao" value="enviar" class="principal">Enviar</button></p>
</form>
<section aria-labelledby="titulo-previa" class="previa" id="previa">
<h2 id="titulo-previa">Pré-visualização</h2>
<div id="previa-conteudo" aria-live="polite">${previewHtml(c.preview, app.name)}</div>
</section>
</div>`
}

/** The confirmation asked before sending when no script asked it: the audience's size and the same form again. */
export function confirmBody(c: ComposerView, recipients: number, exact: boolean): Html {
  const { app, v, state: s } = c
  const base = `/apps/${app.id}`
  const hidden = (name: string, value: string) => html`<input type="hidden" name="${name}" value="${value}">`
  const fields: Html[] = [hidden('_csrf', v.csrf), hidden('chave', s.key)]
  s.languages.forEach((l, i) => {
    fields.push(hidden(`idioma_${i}`, l.code), hidden(`titulo_${i}`, l.title), hidden(`mensagem_${i}`, l.message))
  })
  fields.push(
    hidden('url', s.url),
    hidden('imagem', s.image),
    hidden('player_ids', s.playerIds),
    hidden('external_ids', s.externalIds),
    hidden('agendar', s.scheduleAt),
    hidden('ttl', s.ttl),
    hidden('prioridade', s.priority),
    hidden('nome', s.name),
    hidden('teste_dispositivo', s.testDevice),
  )
  SEGMENTS.forEach((name, i) => {
    if (s.segments.includes(name)) fields.push(hidden(`segmento_${i}`, '1'))
  })
  if (s.exclude.ios) fields.push(hidden('excluir_ios', '1'))
  if (s.exclude.android) fields.push(hidden('excluir_android', '1'))
  if (s.exclude.web) fields.push(hidden('excluir_web', '1'))
  const size = `${exact ? '' : 'cerca de '}${recipients} dispositivo${recipients === 1 ? '' : 's'}`
  return html`<p class="trilha"><a href="${base}">${app.name}</a> › <a href="${base}/envios">Envios</a></p>
<h1>Confirmar o envio</h1>
${
  recipients === 0
    ? html`<p role="alert" class="aviso erro">Nenhum dispositivo alcançável neste público: nada seria enviado.</p>`
    : html`<p role="status">Esta notificação vai para <b id="tamanho-publico">${size}</b>${s.scheduleAt ? html`, agendada para ${s.scheduleAt} (UTC-03:00)` : ''}.</p>`
}
<form method="post" action="${base}/envios/novo">${fields}
${recipients > 0 ? html`<input type="hidden" name="confirmar" value="1"><button type="submit" name="acao" value="enviar" class="principal">Confirmar envio</button> ` : ''}
<button type="submit" name="acao" value="editar" class="secundario">Voltar e editar</button></form>`
}
