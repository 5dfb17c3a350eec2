// The in-app decisions that need no I/O, kept pure so they can be tested exhaustively: does an `evento` trigger
// match the app's state, may a campaign be shown now (its dates, `cap_total`, `cooldown_h`, the app-wide
// `inapp_cap_horas`), and which of several due campaigns wins (`prioridade`, higher first).

export type Comparator = 'igual' | 'diferente' | 'maior' | 'menor' | 'existe' | 'nao_existe'
export type TriggerValue = string | number

export interface Gatilho {
  tipo: 'ao_abrir' | 'evento' | 'sessao_duracao' | 'inatividade'
  atraso_ms?: number
  chave?: string
  comparador?: Comparator
  valor?: TriggerValue
  segundos?: number
  horas?: number
}

export interface Regras {
  cap_total: number
  cooldown_h: number
  fechar_apos_ms: number
  prioridade: number
}

/** One item of `messages[]` in a package. */
export interface InappMessage {
  campanha_id: string
  formato: string
  conteudo: Record<string, unknown>
  estilo?: Record<string, unknown>
  gatilho: Gatilho
  regras: Regras
  inicia_em?: string | null
  termina_em?: string | null
  /** Echoed exactly in every event about this campaign. */
  prova: string
}

/** Display history on this device, kept across launches. */
export interface History {
  /** Per campaign: displays so far (the last `ocorrencia_n`) and when the last one happened (epoch ms). */
  shown: Record<string, { n: number; last: number }>
  /** Last display of any campaign (epoch ms), for `inapp_cap_horas`. */
  lastAny: number
}

export const ATRASO_DEFAULT_MS = 2000
/** The service accepts `ocorrencia_n` up to 500. */
export const OCCURRENCE_MAX = 500
const HOUR_MS = 3_600_000

/**
 * Whether the app's state satisfies an `evento` trigger. Text and numbers never equal each other (`"10"` is not
 * `10`); `maior`/`menor` compare numbers only (a text value never matches); `diferente` needs a value to differ (a
 * key never signalled matches only `nao_existe`).
 */
export function matches(
  cmp: Comparator | undefined,
  valor: TriggerValue | undefined,
  present: boolean,
  value: TriggerValue | undefined,
): boolean {
  switch (cmp) {
    case 'existe':
      return present
    case 'nao_existe':
      return !present
    case 'igual':
      return present && value !== undefined && value === valor
    case 'diferente':
      return present && value !== undefined && valor !== undefined && value !== valor
    case 'maior':
      return present && typeof value === 'number' && typeof valor === 'number' && value > valor
    case 'menor':
      return present && typeof value === 'number' && typeof valor === 'number' && value < valor
    default:
      return false
  }
}

export type Verdict =
  | { ok: true; n: number }
  | { ok: false; why: 'antes_do_inicio' | 'encerrada' | 'cap_total' | 'cooldown' | 'cap_global' }

function instant(v: string | null | undefined): number | null {
  if (!v) return null
  const t = Date.parse(v)
  return Number.isFinite(t) ? t : null
}

/** When the campaign may start showing (its `inicia_em`), or null. */
export function startsAt(m: InappMessage): number | null {
  return instant(m.inicia_em)
}

/** Whether `m` may be shown at `now` given the history and the app's global gap (hours), and its occurrence number. */
export function eligible(m: InappMessage, h: History, capGlobalH: number, now: number): Verdict {
  const ini = instant(m.inicia_em)
  if (ini !== null && now < ini) return { ok: false, why: 'antes_do_inicio' }
  const fim = instant(m.termina_em)
  if (fim !== null && now >= fim) return { ok: false, why: 'encerrada' }
  const mine = h.shown[m.campanha_id]
  const n = mine?.n ?? 0
  const cap = m.regras?.cap_total ?? 1
  if ((cap > 0 && n >= cap) || n >= OCCURRENCE_MAX) return { ok: false, why: 'cap_total' }
  if (mine && now - mine.last < (m.regras?.cooldown_h ?? 24) * HOUR_MS) return { ok: false, why: 'cooldown' }
  if (h.lastAny > 0 && now - h.lastAny < capGlobalH * HOUR_MS) return { ok: false, why: 'cap_global' }
  return { ok: true, n: n + 1 }
}

/** The campaign to show among those due now: the eligible one with the highest `prioridade`, first in package order
 *  on a tie (the package is already ordered by the service). */
export function choose(
  due: InappMessage[],
  order: string[],
  h: History,
  capGlobalH: number,
  now: number,
): { m: InappMessage; n: number } | null {
  let best: { m: InappMessage; n: number; p: number; i: number } | null = null
  for (const m of due) {
    const v = eligible(m, h, capGlobalH, now)
    if (!v.ok) continue
    const p = m.regras?.prioridade ?? 100
    const i = order.indexOf(m.campanha_id)
    if (!best || p > best.p || (p === best.p && i >= 0 && (best.i < 0 || i < best.i))) best = { m, n: v.n, p, i }
  }
  return best ? { m: best.m, n: best.n } : null
}

/** Records a display in the history (a new object). */
export function record(h: History, id: string, n: number, now: number): History {
  return { shown: { ...h.shown, [id]: { n, last: now } }, lastAny: now }
}

/** The block of `conteudo` for a language: the device's, else `pt` (always present), else the first. */
export function pickContent(
  conteudo: Record<string, unknown>,
  language: string | undefined,
): { idioma: string; bloco: Record<string, unknown> } {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  for (const k of [language, 'pt', ...Object.keys(conteudo)]) {
    if (k !== undefined && isObj(conteudo[k])) return { idioma: k, bloco: conteudo[k] }
  }
  return { idioma: 'pt', bloco: {} }
}
