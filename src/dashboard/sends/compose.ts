// The composer's form and the send request it stands for. Pure: the form's fields become the very JSON body a
// caller of POST /api/v1/notifications would send, and the API's errors (their `campo`) are traced back to the form
// field that caused them, so the message is shown beside that field. Nothing here validates what the API validates:
// a wrong TTL or URL travels to the API's validator as typed and comes back as its error.
import { randomUUID } from 'node:crypto'
import { BUSINESS_OFFSET } from '../../core/business-time'
import type { Form } from '../form'
import { SEGMENTS } from '../../message/types'

/** Languages one message may carry in the composer (the API has no such limit; the payload's size is the limit). */
export const MAX_LANGUAGES = 8

export interface LanguageBlock {
  code: string
  title: string
  message: string
}

export type Priority = '' | 'transactional' | 'marketing'

export interface ComposerState {
  languages: LanguageBlock[]
  url: string
  image: string
  segments: string[]
  playerIds: string
  externalIds: string
  exclude: { ios: boolean; android: boolean; web: boolean }
  scheduleAt: string
  ttl: string
  priority: Priority
  name: string
  /** The idempotency key of this form: a double submission of the same form is one send. */
  key: string
  testDevice: string
}

export function emptyState(): ComposerState {
  return {
    languages: [{ code: 'pt', title: '', message: '' }],
    url: '',
    image: '',
    segments: [],
    playerIds: '',
    externalIds: '',
    exclude: { ios: false, android: false, web: false },
    scheduleAt: '',
    ttl: '',
    priority: '',
    name: '',
    key: newKey(),
    testDevice: '',
  }
}

/** A fresh idempotency key for a form just rendered. */
export function newKey(): string {
  return `painel:${randomUUID()}`
}

const KEY_RE = /^painel:[0-9a-f-]{36}$/

/** The form as posted. Anything missing is empty; an unknown segment or priority is dropped, never trusted. */
export function readState(form: Form): ComposerState {
  const languages: LanguageBlock[] = []
  for (let i = 0; i < MAX_LANGUAGES; i++) {
    if (!form.fields.has(`idioma_${i}`)) break
    languages.push({
      code: form.text(`idioma_${i}`).trim(),
      title: form.text(`titulo_${i}`),
      message: form.text(`mensagem_${i}`),
    })
  }
  if (languages.length === 0) languages.push({ code: 'pt', title: '', message: '' })
  const priority = form.text('prioridade')
  const key = form.text('chave')
  return {
    languages,
    url: form.text('url').trim(),
    image: form.text('imagem').trim(),
    segments: SEGMENTS.filter((_, i) => form.text(`segmento_${i}`) === '1'),
    playerIds: form.text('player_ids'),
    externalIds: form.text('external_ids'),
    exclude: {
      ios: form.text('excluir_ios') === '1',
      android: form.text('excluir_android') === '1',
      web: form.text('excluir_web') === '1',
    },
    scheduleAt: form.text('agendar').trim(),
    ttl: form.text('ttl').trim(),
    priority: priority === 'transactional' || priority === 'marketing' ? priority : '',
    name: form.text('nome').trim(),
    key: KEY_RE.test(key) ? key : newKey(),
    testDevice: form.text('teste_dispositivo').trim(),
  }
}

/** A pasted list: one id a line, or separated by commas, semicolons or spaces. */
export function splitList(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

/**
 * "Agendar para" in the business zone (UTC-03:00, docs/decisions.md): `AAAA-MM-DD HH:MM` (or with a `T`, with
 * seconds, or `DD/MM/AAAA HH:MM`) becomes `send_after` with the zone's offset; a text that already carries an
 * offset travels as typed. Null for a text that names no time.
 */
export function scheduleToSendAfter(text: string): string | null {
  const t = text.trim()
  let m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(t)
  if (m) return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${BUSINESS_OFFSET}`
  m = /^(\d{2})\/(\d{2})\/(\d{4}),? (\d{2}):(\d{2})(?::(\d{2}))?$/.exec(t)
  if (m) return `${m[3]}-${m[2]}-${m[1]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${BUSINESS_OFFSET}`
  if (/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)$/.test(t)) return t
  return null
}

export interface Composed {
  body: Record<string, unknown>
  /** Problems of the form itself (not of the send): field id → message. */
  problems: Map<string, string>
}

/**
 * The send request the form stands for. Every target the person filled in travels, so two of them meet the API's
 * own "one target" rule; exclusions become `isIos`/`isAndroid`/`isAnyWeb: false` (the spec: false excludes).
 */
export function composeBody(appId: string, s: ComposerState): Composed {
  const problems = new Map<string, string>()
  const contents: Record<string, string> = {}
  const headings: Record<string, string> = {}
  s.languages.forEach((l, i) => {
    if (l.code === '') {
      if (l.title !== '' || l.message !== '') problems.set(`idioma_${i}`, 'Informe o código do idioma (ex.: pt, en, es).')
      return
    }
    if (Object.hasOwn(contents, l.code) || Object.hasOwn(headings, l.code)) {
      problems.set(`idioma_${i}`, `O idioma ${l.code} já está na mensagem.`)
      return
    }
    if (l.message !== '') contents[l.code] = l.message
    if (l.title !== '') headings[l.code] = l.title
  })
  const body: Record<string, unknown> = { app_id: appId, contents }
  if (Object.keys(headings).length > 0) body.headings = headings
  if (s.segments.length > 0) body.included_segments = s.segments
  const players = splitList(s.playerIds)
  if (players.length > 0) body.include_player_ids = players
  const users = splitList(s.externalIds)
  if (users.length > 0) body.include_external_user_ids = users
  if (s.exclude.ios) body.isIos = false
  if (s.exclude.android) body.isAndroid = false
  if (s.exclude.web) body.isAnyWeb = false
  if (s.url !== '') body.url = s.url
  if (s.image !== '') body.big_picture = s.image
  if (s.scheduleAt !== '') {
    const at = scheduleToSendAfter(s.scheduleAt)
    if (at === null) problems.set('agendar', 'Use AAAA-MM-DD HH:MM, no horário de Brasília (UTC-03:00).')
    else body.send_after = at
  }
  // A TTL that is not a whole number travels as typed: the API's validator names the problem.
  if (s.ttl !== '') body.ttl = /^\d{1,9}$/.test(s.ttl) ? Number(s.ttl) : s.ttl
  if (s.priority !== '') body.priority = s.priority
  if (s.name !== '') body.name = s.name
  return { body, problems }
}

/** The same message to one device, now: the composer's `Enviar teste`. */
export function testBody(body: Record<string, unknown>, deviceId: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body }
  delete out.included_segments
  delete out.include_external_user_ids
  delete out.send_after
  delete out.isIos
  delete out.isAndroid
  delete out.isAnyWeb
  out.include_player_ids = [deviceId]
  out.name = `Teste: ${typeof body.name === 'string' ? body.name : 'nova notificação'}`
  return out
}

/** Where an API error about `field` (its `campo`, a wire name) is shown in the form. */
export function fieldIdFor(field: string | undefined, s: ComposerState): string | null {
  if (field === undefined) return null
  const lang = (prefix: string, id: string): string | null => {
    if (!field.startsWith(`${prefix}.`)) return null
    const i = s.languages.findIndex((l) => l.code === field.slice(prefix.length + 1))
    return `${id}_${Math.max(0, i)}`
  }
  if (field === 'contents') return 'mensagem_0'
  const byLang = lang('contents', 'mensagem') ?? lang('headings', 'titulo')
  if (byLang) return byLang
  if (field === 'headings') return 'titulo_0'
  if (['url', 'app_url', 'web_url'].includes(field)) return 'url'
  if (field === 'big_picture') return 'imagem'
  if (field === 'send_after') return 'agendar'
  if (field === 'ttl') return 'ttl'
  if (field === 'priority' || field === 'X-Pm-Priority') return 'prioridade'
  if (field === 'name') return 'nome'
  if (/^(include_player_ids|include_external_user_ids|included_segments)/.test(field)) return 'publico'
  return null
}
