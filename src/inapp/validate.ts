// In-app campaign bodies (the spec, In-app campaign): every field checked, every problem collected, one 422 listing them
// all. Creating and PATCH share one validator: PATCH replaces the top-level fields it carries and the merged
// campaign is validated whole, so an edit can never leave a campaign that creation would refuse.
import { DEFAULT_LIMITS, type Limits } from '../core/config'
import { ApiError, fieldError } from '../core/errors'
import { isUuid } from '../http/router'
import { isObj, join, type Obj, parseRfc3339, Problems, wellFormed } from './checks'
import { checkContent, checkStyle, checkTrap, newFacts } from './validate-content'

export const FORMATS = ['modal', 'banner_top', 'banner_bottom', 'fullscreen'] as const
export const AUDIENCES = ['todos', 'bloqueados', 'nunca_pediu', 'desinscritos', 'external_ids', 'player_ids'] as const
export const TRIGGERS = ['ao_abrir', 'evento', 'sessao_duracao', 'inatividade'] as const
const COMPARATORS = ['igual', 'diferente', 'maior', 'menor', 'existe', 'nao_existe'] as const
const TOP = [
  'nome',
  'formato',
  'alvo_tipo',
  'alvo',
  'conteudo',
  'estilo',
  'gatilho',
  'regras',
  'inicia_em',
  'termina_em',
] as const
const TRIGGER_PARAMS: Record<string, readonly string[]> = {
  ao_abrir: [],
  evento: ['chave', 'comparador', 'valor'],
  sessao_duracao: ['segundos'],
  inatividade: ['horas'],
}
const KEY = /^[A-Za-z0-9_.:-]{1,64}$/
/** Targets listed on one campaign. */
export const AUDIENCE_MAX = 10_000

export type CampaignFormat = (typeof FORMATS)[number]
export type TargetKind = (typeof AUDIENCES)[number]

export interface Rules {
  cap_total: number
  cooldown_h: number
  fechar_apos_ms: number
  prioridade: number
}

/** The campaign as stored and read back, defaults applied. */
export interface CampaignDef {
  nome: string
  formato: CampaignFormat
  alvo_tipo: TargetKind
  alvo: string[]
  conteudo: Obj
  estilo: Obj
  gatilho: Obj
  regras: Rules
  inicia_em: string | null
  termina_em: string | null
}

export interface ValidCampaign {
  def: CampaignDef
  /** Uses `open_notification_settings` anywhere (reativados attribution). */
  usesNotificationSettings: boolean
}

/** The `regras` of a campaign that sends none; the numbers are settings (src/core/config.ts). */
export function defaultRules(lim: Limits = DEFAULT_LIMITS): Rules {
  return {
    cap_total: lim.inappCapTotalDefault,
    cooldown_h: lim.inappCooldownHDefault,
    fechar_apos_ms: 0,
    prioridade: lim.inappPriorityDefault,
  }
}
const RULE_KEYS: readonly string[] = Object.keys(defaultRules())

function trigger(p: Problems, v: unknown): Obj {
  if (v === undefined || v === null) return { tipo: 'ao_abrir', atraso_ms: p.lim.inappDelayMsDefault }
  if (!isObj(v)) {
    p.add('gatilho', 'deve ser um objeto {tipo, ...parâmetros}')
    return {}
  }
  const out: Obj = {}
  let kind: string | undefined
  if (v.tipo === undefined) {
    const params = Object.keys(v).filter((k) => k !== 'atraso_ms')
    if (params.length > 0)
      p.add('gatilho.tipo', `é obrigatório quando há parâmetros (${params.join(', ')}); só atraso_ms pode vir sozinho`)
    kind = params.length > 0 ? undefined : 'ao_abrir'
  } else {
    kind = p.oneOf('gatilho.tipo', v.tipo, TRIGGERS)
  }
  out.tipo = kind
  out.atraso_ms =
    v.atraso_ms === undefined ? p.lim.inappDelayMsDefault : p.int('gatilho.atraso_ms', v.atraso_ms, 0, p.lim.inappDelayMsMax)
  if (!kind) return out
  const allowed = TRIGGER_PARAMS[kind] as readonly string[]
  for (const k of Object.keys(v)) {
    if (k !== 'tipo' && k !== 'atraso_ms' && !allowed.includes(k))
      p.add(join('gatilho', k), `não pertence ao gatilho do tipo ${kind}`)
  }
  if (kind === 'sessao_duracao') out.segundos = p.int('gatilho.segundos', v.segundos, 1, 86_400)
  if (kind === 'inatividade') out.horas = p.int('gatilho.horas', v.horas, 1, 8_760)
  if (kind === 'evento') {
    if (typeof v.chave !== 'string' || !wellFormed(v.chave) || !KEY.test(v.chave)) {
      p.add('gatilho.chave', 'deve ter de 1 a 64 caracteres: letras, dígitos e _ . : - (sem espaços)')
    }
    out.chave = v.chave
    const cmp = p.oneOf('gatilho.comparador', v.comparador, COMPARATORS)
    out.comparador = cmp
    if (cmp === 'existe' || cmp === 'nao_existe') {
      if (v.valor !== undefined) p.add('gatilho.valor', `não é aceito com o comparador ${cmp}`)
    } else if (cmp) {
      out.valor = v.valor
      triggerValue(p, v.valor, cmp === 'maior' || cmp === 'menor')
    }
  }
  return out
}

/** spec: text 1-120 characters, or a number up to 1e12 in absolute value with at most 6 decimals. "10" ≠ 10. */
function triggerValue(p: Problems, v: unknown, numeric: boolean): void {
  if (v === undefined || v === null) {
    p.add('gatilho.valor', 'é obrigatório com este comparador')
    return
  }
  if (typeof v === 'string') {
    if (numeric) p.add('gatilho.valor', 'deve ser um número: maior e menor não comparam texto')
    else p.text('gatilho.valor', v, 1, 120)
    return
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    p.add('gatilho.valor', numeric ? 'deve ser um número' : 'deve ser um texto ou um número')
    return
  }
  if (Math.abs(v) > 1e12) p.add('gatilho.valor', 'deve ter valor absoluto até 1e12')
  else if (Number(v.toFixed(6)) !== v) p.add('gatilho.valor', 'aceita no máximo 6 casas decimais')
}

function rules(p: Problems, v: unknown): Rules {
  if (v === undefined || v === null) return defaultRules(p.lim)
  if (!isObj(v)) {
    p.add('regras', 'deve ser um objeto')
    return defaultRules(p.lim)
  }
  for (const k of Object.keys(v)) {
    if (k === 'inicia_em' || k === 'termina_em') p.add(join('regras', k), 'só é aceito no nível de topo da campanha')
    else if (!RULE_KEYS.includes(k)) p.add(join('regras', k), 'não é um campo aceito aqui')
  }
  const r = defaultRules(p.lim)
  if (v.cap_total !== undefined) r.cap_total = p.int('regras.cap_total', v.cap_total, 0, p.lim.inappOccurrenceMax) ?? r.cap_total
  if (v.cooldown_h !== undefined) r.cooldown_h = p.int('regras.cooldown_h', v.cooldown_h, 0, 8_760) ?? r.cooldown_h
  if (v.fechar_apos_ms !== undefined)
    r.fechar_apos_ms = p.int('regras.fechar_apos_ms', v.fechar_apos_ms, 0, p.lim.inappCloseAfterMsMax) ?? 0
  if (v.prioridade !== undefined) r.prioridade = p.int('regras.prioridade', v.prioridade, 0, 1_000_000) ?? r.prioridade
  return r
}

function audience(p: Problems, kindRaw: unknown, v: unknown): { kind: TargetKind; targets: string[] } {
  const kind = kindRaw === undefined ? 'todos' : p.oneOf('alvo_tipo', kindRaw, AUDIENCES)
  if (v !== undefined && !Array.isArray(v)) {
    p.add('alvo', 'deve ser uma lista')
    return { kind: kind ?? 'todos', targets: [] }
  }
  const list = (v as unknown[] | undefined) ?? []
  if (!kind) return { kind: 'todos', targets: [] }
  if (kind !== 'external_ids' && kind !== 'player_ids') {
    if (list.length > 0) p.add('alvo', `deve ser [] com alvo_tipo ${kind} (uma lista só com external_ids ou player_ids)`)
    return { kind, targets: [] }
  }
  if (list.length === 0) p.add('alvo', `precisa de ao menos 1 item com alvo_tipo ${kind}`)
  if (list.length > AUDIENCE_MAX) p.add('alvo', `tem ${list.length} itens; máximo ${AUDIENCE_MAX}`)
  const out = new Set<string>()
  list.slice(0, AUDIENCE_MAX).forEach((x, i) => {
    if (kind === 'player_ids') {
      if (!isUuid(x)) p.add(join('alvo', i), 'deve ser um player_id (UUID)')
      else out.add(x.toLowerCase())
    } else if (p.text(join('alvo', i), x, 1, 128) !== undefined) {
      if (Buffer.byteLength(x as string) > 128) p.add(join('alvo', i), 'excede 128 bytes')
      else out.add(x as string)
    }
  })
  return { kind, targets: [...out] }
}

const DATE_FIELDS = ['inicia_em', 'termina_em'] as const
const NOT_A_DATE = 'deve ser uma data RFC 3339 com fuso (ex.: 2026-12-01T09:00:00-03:00)'

/**
 * The spec's In-app errors: a date outside RFC 3339 is a 400 (the value cannot be read), not one of the campaign's
 * 422 problems; `null` and absence are not dates. Create and PATCH call it before anything is read or written.
 */
export function checkDates(body: Obj): void {
  for (const k of DATE_FIELDS) {
    const v = body[k]
    if (v !== undefined && v !== null && parseRfc3339(v) === null) throw fieldError(k, NOT_A_DATE)
  }
}

/** A date that reached the validator (the body's were checked by checkDates; a stored one was valid when stored). */
function moment(p: Problems, name: string, v: unknown): { iso: string | null; ms: number | null } {
  if (v === undefined || v === null) return { iso: null, ms: null }
  const ms = parseRfc3339(v)
  if (ms === null) {
    p.add(name, NOT_A_DATE)
    return { iso: null, ms: null }
  }
  return { iso: v as string, ms }
}

/**
 * Validates a campaign body. `base` (PATCH) is the stored campaign: the body's top-level fields replace its fields.
 * Throws INVALID_FIELD (400) for a date outside RFC 3339, else INAPP_CAMPAIGN_INVALID listing every problem;
 * `app_id` is the route's business.
 */
export function parseCampaign(body: Obj, base?: CampaignDef, lim: Limits = DEFAULT_LIMITS): ValidCampaign {
  checkDates(body)
  const p = new Problems(lim)
  p.known('', body, [...TOP, 'app_id'])
  const src: Obj = { ...(base as unknown as Obj | undefined) }
  for (const k of TOP) if (body[k] !== undefined) src[k] = body[k]
  if (base && body.inicia_em === null) src.inicia_em = null
  if (base && body.termina_em === null) src.termina_em = null

  let name = typeof src.nome === 'string' ? src.nome.trim() : src.nome
  if (name === undefined) name = 'Campanha sem nome'
  else if (p.text('nome', name, 1, 120) === undefined) name = ''
  const format = src.formato === undefined ? 'modal' : p.oneOf('formato', src.formato, FORMATS)
  const aud = audience(p, src.alvo_tipo, src.alvo)
  const facts = newFacts()
  if (src.conteudo === undefined) p.add('conteudo', 'é obrigatório, com o bloco pt')
  else checkContent(p, src.conteudo, facts)
  const { hidesClose } = checkStyle(p, src.estilo, facts)
  checkTrap(p, format, hidesClose, facts)
  const parsedTrigger = trigger(p, src.gatilho)
  const parsedRules = rules(p, src.regras)
  const start = moment(p, 'inicia_em', src.inicia_em)
  const end = moment(p, 'termina_em', src.termina_em)
  if (start.ms !== null && end.ms !== null && end.ms <= start.ms) p.add('termina_em', 'deve ser posterior a inicia_em')
  if (!p.empty) throw new ApiError('INAPP_CAMPAIGN_INVALID', { problemas: p.list })
  return {
    def: {
      nome: name as string,
      formato: format as CampaignFormat,
      alvo_tipo: aud.kind,
      alvo: aud.targets,
      conteudo: src.conteudo as Obj,
      estilo: (src.estilo as Obj | undefined) ?? {},
      gatilho: parsedTrigger,
      regras: parsedRules,
      inicia_em: start.iso,
      termina_em: end.iso,
    },
    usesNotificationSettings: facts.actions.has('open_notification_settings'),
  }
}

/** SDK capability a campaign needs (the spec, Versioning), as major*1000+minor: 0.5 → 5, 0.6 → 6. */
export function schemaMin(def: Pick<CampaignDef, 'gatilho' | 'inicia_em'>, nowMs: number): number {
  if (def.gatilho.tipo !== 'ao_abrir') return 6
  if (def.inicia_em !== null && Date.parse(def.inicia_em) > nowMs) return 6
  return 5
}

export function schemaText(level: number): string {
  return `${Math.floor(level / 1000)}.${level % 1000}`
}

/** A version as the SDK reports it (`0.6`, `0.6.2`, `v1.2.0-beta`) → major*1000+minor, or null. */
export function parseSchema(v: string | null | undefined): number | null {
  if (!v) return null
  const m = /^v?(\d{1,4})\.(\d{1,3})(?:[.\-+].*)?$/.exec(v)
  return m ? Number(m[1]) * 1000 + Number(m[2]) : null
}
