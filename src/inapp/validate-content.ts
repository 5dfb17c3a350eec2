// What an in-app card shows (the spec, In-app campaign): `conteudo` by language in Form A (fixed fields) or Form B
// (`blocos`), button actions, and `estilo` with its close block (`estilo.fechar`). Problems are collected, not thrown.
import { isObj, join, type Obj, type Problems } from './checks'

export const ACTIONS = ['dismiss', 'open_url', 'open_notification_settings'] as const
const FONTS = ['sistema', 'serifada', 'monoespacada'] as const
const WEIGHTS = ['regular', 'medio', 'negrito'] as const
const ALIGN = ['esquerda', 'centro', 'direita'] as const
const ICONS = ['x', 'x_circulo', 'seta'] as const
const TYPOGRAPHY = ['fonte', 'peso', 'italico', 'sublinhado', 'tamanho', 'alinhamento'] as const
const FORM_A = ['titulo', 'corpo', 'imagem', 'botao', 'botao_secundario', 'acao_card'] as const
const BLOCK_MAX: Record<string, number> = { texto: 8, imagem: 4, botao: 2, espacador: 8 }
const LANG = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/

/** What the content says about exits and actions (anti-trap rule, reativados attribution). */
export interface ContentFacts {
  /** Languages whose block has a button or card action set to `dismiss`. */
  dismissLangs: Set<string>
  languages: string[]
  actions: Set<string>
  /** `estilo.acao_card` is `dismiss` (every language then has an exit). */
  styleDismiss: boolean
}

export function newFacts(): ContentFacts {
  return { dismissLangs: new Set(), languages: [], actions: new Set(), styleDismiss: false }
}

/** A button or card action: `{tipo, url?}`; `url` only (and always) with `open_url`. */
export function checkAction(p: Problems, path: string, v: unknown, facts: ContentFacts, lang: string | null): void {
  if (!isObj(v)) {
    p.add(path, `deve ser um objeto {tipo, url?} com tipo ${ACTIONS.join(', ')}`)
    return
  }
  p.known(path, v, ['tipo', 'url'])
  const kind = p.oneOf(join(path, 'tipo'), v.tipo, ACTIONS)
  if (!kind) return
  facts.actions.add(kind)
  if (kind === 'open_url') p.openUrl(join(path, 'url'), v.url)
  else if (v.url !== undefined) p.add(join(path, 'url'), `só é aceito com tipo open_url`)
  if (kind === 'dismiss') {
    if (lang === null) facts.styleDismiss = true
    else facts.dismissLangs.add(lang)
  }
}

function typography(p: Problems, path: string, b: Obj): void {
  if (b.fonte !== undefined) p.oneOf(join(path, 'fonte'), b.fonte, FONTS)
  if (b.peso !== undefined) p.oneOf(join(path, 'peso'), b.peso, WEIGHTS)
  if (b.italico !== undefined) p.bool(join(path, 'italico'), b.italico)
  if (b.sublinhado !== undefined) p.bool(join(path, 'sublinhado'), b.sublinhado)
  if (b.tamanho !== undefined) p.int(join(path, 'tamanho'), b.tamanho, 10, 48)
  if (b.alinhamento !== undefined) p.oneOf(join(path, 'alinhamento'), b.alinhamento, ALIGN)
}

function button(p: Problems, path: string, v: unknown, facts: ContentFacts, lang: string, extra: readonly string[] = []): void {
  if (!isObj(v)) {
    p.add(path, 'deve ser um objeto {texto, acao}')
    return
  }
  p.known(path, v, ['texto', 'acao', ...extra])
  p.text(join(path, 'texto'), v.texto, 1, p.lim.inappButtonMaxChars)
  if (v.acao === undefined) p.add(join(path, 'acao'), 'é obrigatório')
  else checkAction(p, join(path, 'acao'), v.acao, facts, lang)
}

function formA(p: Problems, path: string, b: Obj, facts: ContentFacts, lang: string): void {
  p.known(path, b, FORM_A)
  if (b.titulo !== undefined) p.text(join(path, 'titulo'), b.titulo, 1, p.lim.inappTitleMaxChars)
  if (b.corpo !== undefined) p.text(join(path, 'corpo'), b.corpo, 1, p.lim.inappBodyMaxChars)
  if (b.imagem !== undefined) p.https(join(path, 'imagem'), b.imagem)
  if (b.botao !== undefined) button(p, join(path, 'botao'), b.botao, facts, lang)
  if (b.botao_secundario !== undefined) {
    if (b.botao === undefined) p.add(join(path, 'botao_secundario'), 'só é aceito junto com botao')
    button(p, join(path, 'botao_secundario'), b.botao_secundario, facts, lang)
  }
  if (b.acao_card !== undefined) checkAction(p, join(path, 'acao_card'), b.acao_card, facts, lang)
  if (b.imagem === undefined && b.titulo === undefined && b.corpo === undefined && b.botao === undefined) {
    p.add(path, 'precisa de ao menos um de imagem, titulo, corpo, botao')
  }
}

function block(p: Problems, path: string, v: unknown, facts: ContentFacts, lang: string, counts: Map<string, number>): boolean {
  if (!isObj(v)) {
    p.add(path, 'deve ser um objeto com tipo texto, imagem, botao ou espacador')
    return false
  }
  const kind = p.oneOf(join(path, 'tipo'), v.tipo, ['texto', 'imagem', 'botao', 'espacador'] as const)
  if (!kind) return false
  counts.set(kind, (counts.get(kind) ?? 0) + 1)
  switch (kind) {
    case 'texto':
      p.known(path, v, ['tipo', 'texto', 'cor', ...TYPOGRAPHY])
      p.text(join(path, 'texto'), v.texto, 1, 500)
      if (v.cor !== undefined) p.color(join(path, 'cor'), v.cor)
      typography(p, path, v)
      return true
    case 'imagem':
      p.known(path, v, ['tipo', 'url', 'sangra', 'raio', 'acao_click', 'margens'])
      p.https(join(path, 'url'), v.url)
      if (v.sangra !== undefined) p.bool(join(path, 'sangra'), v.sangra)
      if (v.raio !== undefined) p.int(join(path, 'raio'), v.raio, 0, 64)
      if (v.acao_click !== undefined) checkAction(p, join(path, 'acao_click'), v.acao_click, facts, lang)
      if (v.margens !== undefined) {
        const m = v.margens
        if (!isObj(m)) p.add(join(path, 'margens'), 'deve ser um objeto {topo, base, esquerda, direita}')
        else {
          p.known(join(path, 'margens'), m, ['topo', 'base', 'esquerda', 'direita'])
          for (const side of ['topo', 'base', 'esquerda', 'direita']) {
            if (m[side] !== undefined) p.int(join(join(path, 'margens'), side), m[side], 0, 64)
          }
        }
      }
      return true
    case 'botao':
      button(p, path, v, facts, lang, ['tipo', 'cor_fundo', 'cor_texto', 'raio', ...TYPOGRAPHY])
      if (v.cor_fundo !== undefined) p.color(join(path, 'cor_fundo'), v.cor_fundo)
      if (v.cor_texto !== undefined) p.color(join(path, 'cor_texto'), v.cor_texto)
      if (v.raio !== undefined) p.int(join(path, 'raio'), v.raio, 0, 32)
      typography(p, path, v)
      return true
    case 'espacador':
      p.known(path, v, ['tipo', 'altura'])
      p.int(join(path, 'altura'), v.altura, 1, 200)
      return false
  }
}

function formB(p: Problems, path: string, b: Obj, facts: ContentFacts, lang: string): void {
  p.known(path, b, ['blocos'])
  const list = b.blocos
  const lp = join(path, 'blocos')
  if (!Array.isArray(list) || list.length === 0) {
    p.add(lp, `deve ser uma lista de 1 a ${p.lim.inappBlocksMax} blocos`)
    return
  }
  if (list.length > p.lim.inappBlocksMax) p.add(lp, `tem ${list.length} blocos; máximo ${p.lim.inappBlocksMax}`)
  const counts = new Map<string, number>()
  let visible = false
  list.slice(0, 64).forEach((v, i) => {
    if (block(p, join(lp, i), v, facts, lang, counts)) visible = true
  })
  for (const [kind, n] of counts) {
    const max = BLOCK_MAX[kind] as number
    if (n > max) p.add(lp, `tem ${n} blocos ${kind}; máximo ${max}`)
  }
  if (!visible && counts.size > 0) p.add(lp, 'precisa de ao menos um bloco visível (texto, imagem ou botao)')
}

/** `conteudo`: keyed by language, `pt` required, one form per language (mixing is refused). */
export function checkContent(p: Problems, v: unknown, facts: ContentFacts): void {
  if (!isObj(v)) {
    p.add('conteudo', 'deve ser um objeto por idioma, com o bloco pt')
    return
  }
  for (const [lang, b] of Object.entries(v)) {
    const path = join('conteudo', lang)
    if ((FORM_A as readonly string[]).includes(lang) || lang === 'blocos') {
      p.add(path, `${lang} na raiz de conteudo é recusado; coloque-o dentro de um idioma (ex.: conteudo.pt.${lang})`)
      continue
    }
    if (!LANG.test(lang)) {
      p.add(path, 'não é um código de idioma (ex.: pt, en, pt-BR)')
      continue
    }
    if (!isObj(b)) {
      p.add(path, 'deve ser um objeto (forma A: campos fixos; forma B: blocos)')
      continue
    }
    facts.languages.push(lang)
    const hasB = b.blocos !== undefined
    const hasA = FORM_A.some((k) => b[k] !== undefined)
    if (hasA && hasB) p.add(path, 'mistura as formas A (campos fixos) e B (blocos); use uma só por idioma')
    else if (hasB) formB(p, path, b, facts, lang)
    else formA(p, path, b, facts, lang)
  }
  if (v.pt === undefined) p.add('conteudo.pt', 'é obrigatório')
}

/** `estilo` and its close block `estilo.fechar`. Answers whether the close X is hidden. */
export function checkStyle(p: Problems, v: unknown, facts: ContentFacts): { hidesClose: boolean } {
  if (v === undefined) return { hidesClose: false }
  if (!isObj(v)) {
    p.add('estilo', 'deve ser um objeto')
    return { hidesClose: false }
  }
  p.known('estilo', v, [
    'fundo',
    'texto',
    'botao_fundo',
    'botao_texto',
    'raio',
    'escurecer',
    'padding_px',
    'imagem_sangra',
    'fundo_imagem',
    'acao_card',
    'fechar',
  ])
  for (const c of ['fundo', 'texto', 'botao_fundo', 'botao_texto']) if (v[c] !== undefined) p.color(join('estilo', c), v[c])
  if (v.raio !== undefined) p.int('estilo.raio', v.raio, 0, 32)
  if (v.escurecer !== undefined) p.num('estilo.escurecer', v.escurecer, 0, 1)
  if (v.padding_px !== undefined) p.int('estilo.padding_px', v.padding_px, 0, 64)
  if (v.imagem_sangra !== undefined) p.bool('estilo.imagem_sangra', v.imagem_sangra)
  if (v.fundo_imagem !== undefined) p.https('estilo.fundo_imagem', v.fundo_imagem)
  if (v.acao_card !== undefined) checkAction(p, 'estilo.acao_card', v.acao_card, facts, null)
  const f = v.fechar
  if (f === undefined) return { hidesClose: false }
  if (!isObj(f)) {
    p.add('estilo.fechar', 'deve ser um objeto {mostrar, icone, tamanho, cor, fundo}')
    return { hidesClose: false }
  }
  p.known('estilo.fechar', f, ['mostrar', 'icone', 'tamanho', 'cor', 'fundo'])
  if (f.mostrar !== undefined) p.bool('estilo.fechar.mostrar', f.mostrar)
  if (f.icone !== undefined) p.oneOf('estilo.fechar.icone', f.icone, ICONS)
  if (f.tamanho !== undefined) p.int('estilo.fechar.tamanho', f.tamanho, 16, 48)
  if (f.cor !== undefined) p.color('estilo.fechar.cor', f.cor)
  if (f.fundo !== undefined) p.color('estilo.fechar.fundo', f.fundo)
  return { hidesClose: f.mostrar === false }
}

/** spec anti-trap rule: the X may be hidden only when another exit is guaranteed (modal, or a `dismiss` action). */
export function checkTrap(p: Problems, format: string | undefined, hidesClose: boolean, facts: ContentFacts): void {
  if (!hidesClose || format === 'modal' || facts.styleDismiss) return
  const trapped = facts.languages.filter((l) => !facts.dismissLangs.has(l))
  if (trapped.length === 0) return
  p.add(
    'estilo.fechar.mostrar',
    `ocultar o X de fechar deixaria o usuário preso (idiomas sem saída: ${trapped.join(', ')}); use formato modal ou um botão/ação de card dismiss`,
  )
}
