// The in-app editor's form and the campaign body it stands for (the spec, In-app campaign), both ways: the posted
// fields become the JSON body POST/PATCH /api/v1/in_app_messages take, and a stored campaign becomes the fields again.
// Nothing here judges the campaign: values travel as typed (a number that is not one stays text) so that the API's
// validator (src/inapp/validate.ts) names every problem, and each problem's `campo` is traced back to its field.
import { BUSINESS_OFFSET } from '../../core/business-time'
import type { CampaignShape } from '../../inapp/service'
import type { Form } from '../form'
import { scheduleToSendAfter, splitList } from '../sends/compose'

export const MAX_LANGUAGES = 6
export const ACTION_KINDS = ['dismiss', 'open_url', 'open_notification_settings'] as const

/** One language block: form A (fixed fields) or B (blocks, as JSON text). */
export interface LanguageFields {
  code: string
  form: 'a' | 'b'
  title: string
  body: string
  image: string
  button: ActionFields & { text: string }
  secondary: ActionFields & { text: string }
  card: ActionFields
  blocks: string
}

export interface ActionFields {
  kind: string
  url: string
}

export interface EditorState {
  name: string
  format: string
  targetKind: string
  targets: string
  languages: LanguageFields[]
  style: {
    background: string
    text: string
    buttonBackground: string
    buttonText: string
    radius: string
    dim: string
    padding: string
    imageBleed: boolean
    backgroundImage: string
    card: ActionFields
    close: { show: string; icon: string; size: string; color: string; background: string }
  }
  trigger: {
    kind: string
    delayMs: string
    key: string
    comparator: string
    value: string
    valueKind: 'texto' | 'numero'
    seconds: string
    hours: string
  }
  rules: { capTotal: string; cooldownH: string; closeAfterMs: string; priority: string }
  startAt: string
  endAt: string
  /** The device language the preview draws for. */
  previewLanguage: string
}

const noAction = (): ActionFields => ({ kind: '', url: '' })

export function emptyLanguage(code = ''): LanguageFields {
  return {
    code,
    form: 'a',
    title: '',
    body: '',
    image: '',
    button: { text: '', ...noAction() },
    secondary: { text: '', ...noAction() },
    card: noAction(),
    blocks: '',
  }
}

export function emptyEditor(): EditorState {
  return {
    name: '',
    format: 'modal',
    targetKind: 'todos',
    targets: '',
    languages: [emptyLanguage('pt')],
    style: {
      background: '',
      text: '',
      buttonBackground: '',
      buttonText: '',
      radius: '',
      dim: '',
      padding: '',
      imageBleed: false,
      backgroundImage: '',
      card: noAction(),
      close: { show: 'sim', icon: '', size: '', color: '', background: '' },
    },
    trigger: {
      kind: 'ao_abrir',
      delayMs: '',
      key: '',
      comparator: 'igual',
      value: '',
      valueKind: 'texto',
      seconds: '',
      hours: '',
    },
    rules: { capTotal: '', cooldownH: '', closeAfterMs: '', priority: '' },
    startAt: '',
    endAt: '',
    previewLanguage: 'pt',
  }
}

export function readEditor(f: Form): EditorState {
  const t = (k: string) => f.text(k).trim()
  const action = (prefix: string): ActionFields => ({ kind: t(`${prefix}_acao`), url: t(`${prefix}_url`) })
  const languages: LanguageFields[] = []
  for (let i = 0; i < MAX_LANGUAGES; i++) {
    if (!f.fields.has(`c_${i}_idioma`)) break
    const p = `c_${i}`
    languages.push({
      code: t(`${p}_idioma`),
      form: t(`${p}_forma`) === 'b' ? 'b' : 'a',
      title: f.text(`${p}_titulo`),
      body: f.text(`${p}_corpo`),
      image: t(`${p}_imagem`),
      button: { text: f.text(`${p}_botao_texto`), ...action(`${p}_botao`) },
      secondary: { text: f.text(`${p}_botao2_texto`), ...action(`${p}_botao2`) },
      card: action(`${p}_card`),
      blocks: f.text(`${p}_blocos`),
    })
  }
  if (languages.length === 0) languages.push(emptyLanguage('pt'))
  return {
    name: t('nome'),
    format: t('formato'),
    targetKind: t('alvo_tipo'),
    targets: f.text('alvo'),
    languages,
    style: {
      background: t('e_fundo'),
      text: t('e_texto'),
      buttonBackground: t('e_botao_fundo'),
      buttonText: t('e_botao_texto'),
      radius: t('e_raio'),
      dim: t('e_escurecer'),
      padding: t('e_padding_px'),
      imageBleed: t('e_imagem_sangra') === '1',
      backgroundImage: t('e_fundo_imagem'),
      card: action('e_card'),
      close: {
        show: t('e_fechar_mostrar') === 'nao' ? 'nao' : 'sim',
        icon: t('e_fechar_icone'),
        size: t('e_fechar_tamanho'),
        color: t('e_fechar_cor'),
        background: t('e_fechar_fundo'),
      },
    },
    trigger: {
      kind: t('g_tipo'),
      delayMs: t('g_atraso_ms'),
      key: f.text('g_chave'),
      comparator: t('g_comparador'),
      value: f.text('g_valor'),
      valueKind: t('g_valor_tipo') === 'numero' ? 'numero' : 'texto',
      seconds: t('g_segundos'),
      hours: t('g_horas'),
    },
    rules: {
      capTotal: t('r_cap_total'),
      cooldownH: t('r_cooldown_h'),
      closeAfterMs: t('r_fechar_apos_ms'),
      priority: t('r_prioridade'),
    },
    startAt: t('inicia'),
    endAt: t('termina'),
    previewLanguage: t('previa_idioma') || 'pt',
  }
}

/** A number as typed: a number when it reads as one, else the text itself (the validator names it). */
function numeric(s: string): number | string {
  return /^-?\d{1,15}(\.\d{1,12})?$/.test(s) ? Number(s) : s
}

function actionBody(a: ActionFields): Record<string, unknown> | undefined {
  if (a.kind === '' && a.url === '') return undefined
  const out: Record<string, unknown> = { tipo: a.kind }
  if (a.url !== '') out.url = a.url
  return out
}

function buttonBody(b: ActionFields & { text: string }): Record<string, unknown> | undefined {
  if (b.text === '' && b.kind === '' && b.url === '') return undefined
  const out: Record<string, unknown> = { texto: b.text }
  const a = actionBody(b)
  if (a) out.acao = a
  return out
}

/** A date of the form (business zone, like the composer's) as RFC 3339; a text that is no date travels as typed. */
function dateBody(s: string): string {
  return scheduleToSendAfter(s) ?? s
}

export interface Composed {
  body: Record<string, unknown>
  /** Problems of the form itself (a block list that is not JSON): field id → message. */
  problems: Map<string, string>
}

/** The campaign body. `forPatch`: every top-level field travels (PATCH replaces them), empty dates as null. */
export function campaignBody(s: EditorState, forPatch: boolean): Composed {
  const problems = new Map<string, string>()
  const content: Record<string, unknown> = {}
  s.languages.forEach((l, i) => {
    if (l.code === '') return
    let block: Record<string, unknown>
    if (l.form === 'b') {
      try {
        block = { blocos: JSON.parse(l.blocks === '' ? '[]' : l.blocks) }
      } catch {
        problems.set(`c_${i}_blocos`, 'Os blocos não são um JSON válido (uma lista de objetos com tipo).')
        return
      }
    } else {
      block = {}
      if (l.title !== '') block.titulo = l.title
      if (l.body !== '') block.corpo = l.body
      if (l.image !== '') block.imagem = l.image
      const b1 = buttonBody(l.button)
      if (b1) block.botao = b1
      const b2 = buttonBody(l.secondary)
      if (b2) block.botao_secundario = b2
      const card = actionBody(l.card)
      if (card) block.acao_card = card
    }
    content[l.code] = block
  })
  const style: Record<string, unknown> = {}
  const st = s.style
  if (st.background) style.fundo = st.background
  if (st.text) style.texto = st.text
  if (st.buttonBackground) style.botao_fundo = st.buttonBackground
  if (st.buttonText) style.botao_texto = st.buttonText
  if (st.radius) style.raio = numeric(st.radius)
  if (st.dim) style.escurecer = numeric(st.dim)
  if (st.padding) style.padding_px = numeric(st.padding)
  if (st.imageBleed) style.imagem_sangra = true
  if (st.backgroundImage) style.fundo_imagem = st.backgroundImage
  const card = actionBody(st.card)
  if (card) style.acao_card = card
  const close: Record<string, unknown> = {}
  if (st.close.show === 'nao') close.mostrar = false
  if (st.close.icon) close.icone = st.close.icon
  if (st.close.size) close.tamanho = numeric(st.close.size)
  if (st.close.color) close.cor = st.close.color
  if (st.close.background) close.fundo = st.close.background
  if (Object.keys(close).length > 0) style.fechar = close

  const tr = s.trigger
  const trigger: Record<string, unknown> = { tipo: tr.kind || 'ao_abrir' }
  if (tr.delayMs) trigger.atraso_ms = numeric(tr.delayMs)
  if (tr.kind === 'evento') {
    trigger.chave = tr.key
    trigger.comparador = tr.comparator
    if (tr.comparator !== 'existe' && tr.comparator !== 'nao_existe')
      trigger.valor = tr.valueKind === 'numero' ? numeric(tr.value.trim()) : tr.value
  }
  if (tr.kind === 'sessao_duracao') trigger.segundos = numeric(tr.seconds)
  if (tr.kind === 'inatividade') trigger.horas = numeric(tr.hours)

  const rules: Record<string, unknown> = {}
  if (s.rules.capTotal) rules.cap_total = numeric(s.rules.capTotal)
  if (s.rules.cooldownH) rules.cooldown_h = numeric(s.rules.cooldownH)
  if (s.rules.closeAfterMs) rules.fechar_apos_ms = numeric(s.rules.closeAfterMs)
  if (s.rules.priority) rules.prioridade = numeric(s.rules.priority)

  const listed = s.targetKind === 'external_ids' || s.targetKind === 'player_ids'
  const body: Record<string, unknown> = {
    nome: s.name,
    formato: s.format || 'modal',
    alvo_tipo: s.targetKind || 'todos',
    alvo: listed ? splitList(s.targets) : [],
    conteudo: content,
    estilo: style,
    gatilho: trigger,
    regras: rules,
  }
  if (s.startAt) body.inicia_em = dateBody(s.startAt)
  else if (forPatch) body.inicia_em = null
  if (s.endAt) body.termina_em = dateBody(s.endAt)
  else if (forPatch) body.termina_em = null
  return { body, problems }
}

/** A stored date as the form shows it: the business zone's `AAAA-MM-DD HH:MM`. */
function dateField(iso: string | null): string {
  if (!iso) return ''
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return iso
  const local = new Date(ms + Number(BUSINESS_OFFSET.slice(0, 3)) * 3_600_000).toISOString()
  return `${local.slice(0, 10)} ${local.slice(11, 16)}`
}

type Obj = Record<string, unknown>
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v))
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {})
const actionFields = (v: unknown): ActionFields => ({ kind: str(obj(v).tipo), url: str(obj(v).url) })

/** A stored campaign as the editor's fields. */
export function editorOf(c: CampaignShape): EditorState {
  const s = emptyEditor()
  s.name = c.nome
  s.format = c.formato
  s.targetKind = c.alvo_tipo
  s.targets = c.alvo.join('\n')
  s.languages = Object.entries(c.conteudo).map(([code, v]) => {
    const b = obj(v)
    const l = emptyLanguage(code)
    if (Array.isArray(b.blocos)) {
      l.form = 'b'
      l.blocks = JSON.stringify(b.blocos, null, 2)
      return l
    }
    l.title = str(b.titulo)
    l.body = str(b.corpo)
    l.image = str(b.imagem)
    l.button = { text: str(obj(b.botao).texto), ...actionFields(obj(b.botao).acao) }
    l.secondary = { text: str(obj(b.botao_secundario).texto), ...actionFields(obj(b.botao_secundario).acao) }
    l.card = actionFields(b.acao_card)
    return l
  })
  if (s.languages.length === 0) s.languages = [emptyLanguage('pt')]
  const e = c.estilo
  const close = obj(e.fechar)
  s.style = {
    background: str(e.fundo),
    text: str(e.texto),
    buttonBackground: str(e.botao_fundo),
    buttonText: str(e.botao_texto),
    radius: str(e.raio),
    dim: str(e.escurecer),
    padding: str(e.padding_px),
    imageBleed: e.imagem_sangra === true,
    backgroundImage: str(e.fundo_imagem),
    card: actionFields(e.acao_card),
    close: {
      show: close.mostrar === false ? 'nao' : 'sim',
      icon: str(close.icone),
      size: str(close.tamanho),
      color: str(close.cor),
      background: str(close.fundo),
    },
  }
  const g = c.gatilho
  s.trigger = {
    kind: str(g.tipo) || 'ao_abrir',
    delayMs: str(g.atraso_ms),
    key: str(g.chave),
    comparator: str(g.comparador) || 'igual',
    value: str(g.valor),
    valueKind: typeof g.valor === 'number' ? 'numero' : 'texto',
    seconds: str(g.segundos),
    hours: str(g.horas),
  }
  s.rules = {
    capTotal: String(c.regras.cap_total),
    cooldownH: String(c.regras.cooldown_h),
    closeAfterMs: String(c.regras.fechar_apos_ms),
    priority: String(c.regras.prioridade),
  }
  s.startAt = dateField(c.inicia_em)
  s.endAt = dateField(c.termina_em)
  return s
}

/** Where a validation problem (`campo`, a wire path) is shown in the form. */
export function fieldIdFor(path: string, s: EditorState): string {
  // `alvo[3]`, `conteudo.pt.blocos[0].texto` (the door's paths) read as `alvo`, `conteudo.pt.blocos.texto`.
  const parts = path.replace(/\[\d+\]/g, '').split('.')
  const [top, second, ...rest] = parts
  switch (top) {
    case 'nome':
    case 'formato':
    case 'alvo_tipo':
      return top
    case 'alvo':
      return 'alvo'
    case 'inicia_em':
      return 'inicia'
    case 'termina_em':
      return 'termina'
    case 'gatilho':
      return second && second !== 'tipo' ? `g_${second}` : 'g_tipo'
    case 'regras':
      return second && ['cap_total', 'cooldown_h', 'fechar_apos_ms', 'prioridade'].includes(second)
        ? `r_${second}`
        : 'r_cap_total'
    case 'estilo': {
      if (second === 'fechar')
        return `e_fechar_${rest[0] && ['icone', 'tamanho', 'cor', 'fundo'].includes(rest[0]) ? rest[0] : 'mostrar'}`
      if (second === 'acao_card') return rest[rest.length - 1] === 'url' ? 'e_card_url' : 'e_card_acao'
      const known = [
        'fundo',
        'texto',
        'botao_fundo',
        'botao_texto',
        'raio',
        'escurecer',
        'padding_px',
        'imagem_sangra',
        'fundo_imagem',
      ]
      return second && known.includes(second) ? `e_${second}` : 'e_fundo'
    }
    case 'conteudo': {
      const i = second === undefined ? -1 : s.languages.findIndex((l) => l.code === second)
      if (i < 0) return 'c_0_idioma'
      const p = `c_${i}`
      const [field] = rest
      const last = rest[rest.length - 1]
      if (field === undefined) return s.languages[i]?.form === 'b' ? `${p}_blocos` : `${p}_titulo`
      if (field === 'blocos') return `${p}_blocos`
      if (field === 'botao' || field === 'botao_secundario') {
        const q = field === 'botao' ? `${p}_botao` : `${p}_botao2`
        return rest[1] === 'acao' ? (last === 'url' ? `${q}_url` : `${q}_acao`) : `${q}_texto`
      }
      if (field === 'acao_card') return last === 'url' ? `${p}_card_url` : `${p}_card_acao`
      if (['titulo', 'corpo', 'imagem'].includes(field)) return `${p}_${field}`
      return `${p}_titulo`
    }
    default:
      return 'geral'
  }
}
