// The sends list (/apps/{app_id}/envios): newest first, filtered by period (days in the business zone), state and
// text, paged by keyset on (queued_at, id) like every list of the dashboard, so the thousandth page costs what the
// first does; each row links to the send's page. The app page's charts link here with one day as the period.
import { planShowsArrivals } from '../../apps/plan'
import { BUSINESS_OFFSET } from '../../core/business-time'
import type { Clock } from '../../core/time'
import { type Db, query } from '../../db/pool'
import type { Router } from '../../http/router'
import { appFor, decodeCursor, encodeCursor } from '../access'
import { html, when } from '../html'
import { page } from '../layout'
import type { Sessions } from '../session'
import { htmlReply, viewerPage, type Web } from '../web'

export interface SendListDeps extends Web {
  db: Db
  clock: Clock
  sessions: Sessions
}

const PAGE = 25
export const STATES = { agendado: 'agendados', andamento: 'em andamento', concluido: 'concluídos' } as const
type StateFilter = keyof typeof STATES

export interface ListFilter {
  from: Date | null
  to: Date | null
  state: StateFilter | null
  text: string
}

interface Row {
  id: string
  name: string | null
  queued_at: Date
  send_after: Date | null
  completed_at: Date | null
  recipients: number
  successful: number
  failed: number
  errored: number
  recebidos: number
  converted: number
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** A day `AAAA-MM-DD` of the business zone as the instant it starts; `next` gives the next day's start. */
export function dayStart(text: string | null, next = false): Date | null {
  const m = text ? DAY.exec(text) : null
  if (!m) return null
  const at = Date.parse(`${m[1]}-${m[2]}-${m[3]}T00:00:00${BUSINESS_OFFSET}`)
  if (Number.isNaN(at)) return null
  return new Date(at + (next ? 86_400_000 : 0))
}

export function readFilter(q: URLSearchParams): ListFilter {
  const state = q.get('estado')
  return {
    from: dayStart(q.get('desde')),
    to: dayStart(q.get('ate'), true),
    state: state && Object.hasOwn(STATES, state) ? (state as StateFilter) : null,
    text: (q.get('q') ?? '').trim().slice(0, 200),
  }
}

/** Sends a text search reads per page at most: past them, the page offers to go on searching older sends. */
export const TEXT_SCAN = 20_000

/**
 * One page of the filtered list, newest first, after the cursor. A text filter has no index behind it (sends are
 * written at thousands a second; an index over their texts would tax every write): it reads at most TEXT_SCAN sends
 * in the list's order and answers, with the matches, where it stopped (`scannedTo`) when it stopped short.
 */
export async function listSends(
  db: Db,
  appId: string,
  f: ListFilter,
  before: { at: Date; id: string } | null,
  nowMs: number,
  limit: number,
  scan = TEXT_SCAN,
): Promise<{ rows: Row[]; scannedTo: { at: Date; id: string } | null }> {
  const params: unknown[] = [appId]
  const where: string[] = ['app_id = $1']
  const p = (v: unknown) => {
    params.push(v)
    return `$${params.length}`
  }
  if (f.from) where.push(`queued_at >= ${p(f.from)}`)
  if (f.to) where.push(`queued_at < ${p(f.to)}`)
  if (before) where.push(`(queued_at, id) < (${p(before.at)}, ${p(before.id)})`)
  if (f.state === 'concluido') where.push('completed_at IS NOT NULL')
  else if (f.state === 'agendado') where.push(`completed_at IS NULL AND send_after > ${p(new Date(nowMs))}`)
  else if (f.state === 'andamento')
    where.push(`completed_at IS NULL AND (send_after IS NULL OR send_after <= ${p(new Date(nowMs))})`)
  const filtered = `FROM sends WHERE ${where.join(' AND ')} ORDER BY queued_at DESC, id DESC`
  const filterParams = [...params]
  const columns = 'id, name, queued_at, send_after, completed_at, recipients, successful, failed, errored, recebidos, converted'
  const lim = p(limit)
  if (f.text === '') {
    const r = await query<Row>(db, `SELECT ${columns} ${filtered} LIMIT ${lim}`, params)
    return { rows: r.rows, scannedTo: null }
  }
  const like = p(`%${f.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)
  const exact = p(f.text.toLowerCase())
  const r = await query<Row>(
    db,
    `SELECT ${columns} FROM (SELECT ${columns}, contents, headings ${filtered} LIMIT ${scan}) s
      WHERE name ILIKE ${like} OR contents::text ILIKE ${like} OR headings::text ILIKE ${like} OR id::text = ${exact}
      ORDER BY queued_at DESC, id DESC LIMIT ${lim}`,
    params,
  )
  if (r.rows.length >= limit) return { rows: r.rows, scannedTo: null }
  // Fewer matches than asked for: did the scan reach the end of the list, or its bound?
  const last = await query<{ queued_at: Date; id: string }>(
    db,
    `SELECT queued_at, id ${filtered} OFFSET ${scan - 1} LIMIT 2`,
    filterParams,
  )
  // The last send read, when another one follows it.
  const end = last.rows.length === 2 ? last.rows[0] : undefined
  return { rows: r.rows, scannedTo: end ? { at: end.queued_at, id: end.id } : null }
}

function stateText(x: Row, nowMs: number): string {
  if (x.completed_at) return 'concluído'
  if (x.send_after && x.send_after.getTime() > nowMs) return `agendado para ${when(x.send_after)}`
  return 'em andamento'
}

export function sendListRoutes(r: Router, d: SendListDeps): void {
  viewerPage(d, r.get.bind(r), '/apps/:id/envios', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const f = readFilter(req.query)
    const now = d.clock()
    const { rows, scannedTo } = await listSends(d.db, app.id, f, decodeCursor(req.query.get('antes')), now, PAGE + 1)
    const shown = rows.slice(0, PAGE)
    const last = shown[shown.length - 1]
    const base = `/apps/${app.id}`
    const proof = planShowsArrivals(app.plan)
    const keep = new URLSearchParams()
    for (const k of ['desde', 'ate', 'estado', 'q']) {
      const val = req.query.get(k)
      if (val) keep.set(k, val)
    }
    const next = new URLSearchParams(keep)
    if (last) next.set('antes', encodeCursor(last.queued_at, last.id))
    const further = new URLSearchParams(keep)
    if (scannedTo) further.set('antes', encodeCursor(scannedTo.at, scannedTo.id))
    const filtered = keep.size > 0
    const body = html`<p class="trilha"><a href="${base}">${app.name}</a></p>
<h1>Envios</h1>
<p><a class="botao" href="${base}/envios/novo">Nova notificação</a></p>
<form method="get" action="${base}/envios" role="search" aria-label="Filtrar envios" class="linha filtros">
<label for="f-desde">De</label><input id="f-desde" name="desde" type="date" value="${req.query.get('desde') ?? ''}">
<label for="f-ate">Até</label><input id="f-ate" name="ate" type="date" value="${req.query.get('ate') ?? ''}">
<label for="f-estado">Estado</label><select id="f-estado" name="estado"><option value="">Todos</option>${Object.entries(
      STATES,
    ).map(([k, label]) => html`<option value="${k}"${f.state === k ? html` selected` : ''}>${label}</option>`)}</select>
<label for="f-q">Texto</label><input id="f-q" name="q" type="search" value="${f.text}" placeholder="nome, mensagem ou id">
<button type="submit">Filtrar</button>${filtered ? html` <a href="${base}/envios">Limpar filtros</a>` : ''}</form>
<p class="dica">Dias no horário de Brasília (UTC-03:00), pelo momento em que o envio foi aceito.</p>
${
  shown.length === 0
    ? html`<p>${filtered ? 'Nenhum envio com esses filtros.' : 'Nenhum envio ainda.'}</p>`
    : html`<table id="lista-envios"><caption>Envios${filtered ? ' filtrados' : ''}, do mais novo ao mais antigo</caption>
<thead><tr><th scope="col">Aceito em</th><th scope="col">Envio</th><th scope="col">Estado</th><th scope="col">recipients</th><th scope="col">successful</th><th scope="col">falhas</th><th scope="col">recebidos</th><th scope="col">cliques</th></tr></thead>
<tbody>${shown.map(
        (
          x,
        ) => html`<tr><td>${when(x.queued_at)}</td><td><a href="${base}/envios/${x.id}">${x.name ?? `Envio ${x.id.slice(0, 8)}`}</a></td>
<td>${stateText(x, now)}</td><td>${x.recipients}</td><td>${x.successful}</td><td>${x.failed + x.errored}</td><td>${proof ? x.recebidos : '—'}</td><td>${x.converted}</td></tr>`,
      )}</tbody></table>`
}
<p class="paginas">${req.query.get('antes') ? html`<a href="${base}/envios${keep.size ? `?${keep.toString()}` : ''}">Mais novos (início)</a> ` : ''}${
      rows.length > PAGE && last ? html`<a href="${base}/envios?${next.toString()}">Mais antigos</a>` : ''
    }${
      scannedTo
        ? html`<span role="status">A busca por texto leu ${TEXT_SCAN.toLocaleString('pt-BR')} envios a partir daqui. <a href="${base}/envios?${further.toString()}">Continuar buscando nos mais antigos</a></span>`
        : ''
    }</p>`
    return htmlReply(200, page({ title: `Envios · ${app.name}`, viewer: v, flash: await d.sessions.takeFlash(v) }, body))
  })
}
