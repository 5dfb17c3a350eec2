// The in-app card as a device will show it, for the editor's preview. The SDK decides what is shown and the app
// draws it (docs/sdk.md, `onShow`); this follows the SDK's rules (packages/sdk/src/inapp/rules.ts and feed.ts): the
// language block is the device's language, else `pt`, else the first (pickContent), the format places the card
// (modal centred over a dimmed screen, banners at the top or bottom, fullscreen), the close block shows its X
// unless hidden, `fechar_apos_ms` closes it by itself. Colours and sizes travel as `data-css` (the page's
// Content-Security-Policy forbids inline styles; the editor's script applies them), only after they pass the same
// shape checks as the validator (#rrggbb, bounded integers).
import { html, type Html } from '../html'

type Obj = Record<string, unknown>
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {})
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/** The SDK's language choice (packages/sdk/src/inapp/rules.ts, pickContent): the device's, else `pt`, else the first. */
export function pickContent(content: Obj, language: string | undefined): { language: string; block: Obj } {
  for (const k of [language, 'pt', ...Object.keys(content)]) {
    if (k !== undefined && typeof content[k] === 'object' && content[k] !== null && !Array.isArray(content[k]))
      return { language: k, block: content[k] as Obj }
  }
  return { language: 'pt', block: {} }
}

const COLOR = /^#[0-9a-fA-F]{6}$/
const color = (v: unknown): string | null => (typeof v === 'string' && COLOR.test(v) ? v : null)
const int = (v: unknown, min: number, max: number): number | null =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : null

/** `data-css` with the properties that passed their checks (none: no attribute). */
function css(props: Record<string, string | null>): Html {
  const kept = Object.fromEntries(Object.entries(props).filter(([, v]) => v !== null))
  return Object.keys(kept).length > 0 ? html` data-css="${JSON.stringify(kept)}"` : html``
}

function typography(b: Obj): Record<string, string | null> {
  const size = int(b.tamanho, 10, 48)
  return {
    'font-family': b.fonte === 'serifada' ? 'Georgia, serif' : b.fonte === 'monoespacada' ? 'ui-monospace, monospace' : null,
    'font-weight': b.peso === 'negrito' ? '700' : b.peso === 'medio' ? '500' : null,
    'font-style': b.italico === true ? 'italic' : null,
    'text-decoration': b.sublinhado === true ? 'underline' : null,
    'font-size': size === null ? null : `${size}px`,
    'text-align':
      b.alinhamento === 'centro'
        ? 'center'
        : b.alinhamento === 'direita'
          ? 'right'
          : b.alinhamento === 'esquerda'
            ? 'left'
            : null,
  }
}

const ACTION_TEXT: Record<string, string> = {
  dismiss: 'fecha o cartão',
  open_url: 'abre',
  open_notification_settings: 'abre os ajustes de notificação',
}

function actionNote(a: unknown): string {
  const o = obj(a)
  const kind = text(o.tipo)
  if (!kind) return ''
  return `${ACTION_TEXT[kind] ?? kind}${kind === 'open_url' && text(o.url) ? ` ${o.url}` : ''}`
}

function button(b: Obj, style: Obj, secondary = false): Html {
  const label = text(b.texto) ?? '(sem texto)'
  const note = actionNote(b.acao)
  const radius = int(b.raio, 0, 32)
  return html`<span class="botao-previa${secondary ? ' secundario' : ''}"${css({
    background: color(b.cor_fundo) ?? (secondary ? null : color(style.botao_fundo)),
    color: color(b.cor_texto) ?? (secondary ? null : color(style.botao_texto)),
    'border-radius': radius === null ? null : `${radius}px`,
    ...typography(b),
  })} title="${note}">${label}</span>${note ? html`<small class="acao-previa">(${note})</small>` : ''}`
}

function image(url: unknown, o: { bleed?: boolean; radius?: number | null } = {}): Html {
  return html`<span class="imagem-previa${o.bleed ? ' sangra' : ''}"${css({ 'border-radius': o.radius == null ? null : `${o.radius}px` })}>imagem: ${text(url) ?? '(sem URL)'}</span>`
}

function formA(b: Obj, style: Obj): Html {
  return html`${b.imagem !== undefined ? image(b.imagem, { bleed: style.imagem_sangra === true }) : ''}
${text(b.titulo) ? html`<p class="titulo-previa">${b.titulo as string}</p>` : ''}
${text(b.corpo) ? html`<p class="corpo-previa">${b.corpo as string}</p>` : ''}
${b.botao !== undefined || b.botao_secundario !== undefined ? html`<p class="botoes-previa">${b.botao !== undefined ? button(obj(b.botao), style) : ''} ${b.botao_secundario !== undefined ? button(obj(b.botao_secundario), style, true) : ''}</p>` : ''}`
}

function formB(blocks: unknown[], style: Obj): Html {
  return html`${blocks.slice(0, 12).map((v) => {
    const b = obj(v)
    switch (b.tipo) {
      case 'texto':
        return html`<p class="texto-previa"${css({ color: color(b.cor), ...typography(b) })}>${text(b.texto) ?? ''}</p>`
      case 'imagem': {
        const m = obj(b.margens)
        return html`<div class="bloco-imagem"${css({
          'margin-top': int(m.topo, 0, 64) === null ? null : `${m.topo}px`,
          'margin-bottom': int(m.base, 0, 64) === null ? null : `${m.base}px`,
          'margin-left': int(m.esquerda, 0, 64) === null ? null : `${m.esquerda}px`,
          'margin-right': int(m.direita, 0, 64) === null ? null : `${m.direita}px`,
        })}>${image(b.url, { bleed: b.sangra === true, radius: int(b.raio, 0, 64) })}</div>`
      }
      case 'botao':
        return html`<p class="botoes-previa">${button(b, style)}</p>`
      case 'espacador':
        return html`<div class="espacador-previa"${css({ height: int(b.altura, 1, 200) === null ? null : `${b.altura}px` })}></div>`
      default:
        return html``
    }
  })}`
}

/** The preview: the card on a phone-sized screen, and what the device does with it. */
export function cardPreview(body: Obj, deviceLanguage: string): Html {
  const content = obj(body.conteudo)
  const style = obj(body.estilo)
  const close = obj(style.fechar)
  const rules = obj(body.regras)
  const format = ['modal', 'banner_top', 'banner_bottom', 'fullscreen'].includes(String(body.formato))
    ? String(body.formato)
    : 'modal'
  const { language, block } = pickContent(content, deviceLanguage || undefined)
  const dim = typeof style.escurecer === 'number' && style.escurecer >= 0 && style.escurecer <= 1 ? style.escurecer : 0.5
  const radius = int(style.raio, 0, 32)
  const padding = int(style.padding_px, 0, 64)
  const showClose = close.mostrar !== false
  const icon = close.icone === 'x_circulo' ? '⊗' : close.icone === 'seta' ? '←' : '×'
  const closeSize = int(close.tamanho, 16, 48)
  const closeAfter = int(rules.fechar_apos_ms, 0, 600_000)
  const blocks = Array.isArray(block.blocos) ? block.blocos : null
  return html`<div class="tela formato-${format}"${css({ '--escurecer': format === 'modal' ? String(dim) : null })}>
<div class="cartao-app${format === 'modal' ? ' sobre-escuro' : ''}"${css({
    background: color(style.fundo),
    color: color(style.texto),
    'border-radius': radius === null ? null : `${radius}px`,
    padding: padding === null ? null : `${padding}px`,
  })}>
${
  showClose
    ? html`<span class="fechar-previa"${css({
        color: color(close.cor),
        background: color(close.fundo),
        'font-size': closeSize === null ? null : `${closeSize}px`,
      })} title="botão de fechar">${icon}</span>`
    : ''
}
${blocks ? formB(blocks, style) : formA(block, style)}
</div></div>
<ul class="notas-previa">
<li>Idioma mostrado: <b id="idioma-cartao">${language}</b> (aparelho em ${deviceLanguage || '—'}; regra do SDK: o idioma do aparelho, senão pt, senão o primeiro).</li>
<li>Formato: ${format}${format === 'modal' ? `, fundo escurecido a ${Math.round(dim * 100)}%` : ''}.</li>
<li>${showClose ? 'Com o X de fechar.' : 'Sem o X de fechar: a saída é o formato modal ou uma ação dismiss.'}</li>
${closeAfter ? html`<li>Fecha sozinho após ${closeAfter} ms.</li>` : ''}
${actionNote(style.acao_card) || actionNote(block.acao_card) ? html`<li>Tocar no cartão ${actionNote(block.acao_card) || actionNote(style.acao_card)}.</li>` : ''}
</ul>`
}
