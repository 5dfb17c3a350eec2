// The app page's "Envios" section: the newest sends first (keyset pages), live counters (the page polls
// /apps/{id}/envios.json), each send's funnel accepted → received → clicked, and two charts of the window
// statistics (by day in the API's UTC-03 zone): volumes, and the share of deliveries proven by receipts. Proof of
// arrival (recebidos, the receipts' totals and the proof chart) is shown only where the plan allows it (src/apps/plan.ts).
import { planShowsArrivals } from '../../apps/plan'
import type { Plan } from '../../apps/store'
import { type Db, query } from '../../db/pool'
import { isUuid, type Router } from '../../http/router'
import { ARRIVALS_GATE, windowStats } from '../../sends/read'
import { decodeCursor, encodeCursor, appFor } from '../access'
import { html, type Html, jsonData, when } from '../html'
import { jsonReply, pollPage } from '../web'
import type { AppPageDeps, AppView } from './context'

const PAGE = 20
const LIVE_MAX = 50
const CHART_DAYS = 30

interface SendRow {
  id: string
  name: string | null
  queued_at: Date
  completed_at: Date | null
  recipients: number
  successful: number
  failed: number
  errored: number
  remaining: number
  recebidos: number
  converted: number
  problem: string | null
}

const COLUMNS =
  'id, name, queued_at, completed_at, recipients, successful, failed, errored, remaining, recebidos, converted, problem'

/** The counters as people see them; `recebidos` is withheld on the free plan, as in the API's read shape. */
export function counters(s: SendRow, plan: Plan): Record<string, number | string | null> {
  return {
    recipients: s.recipients,
    successful: s.successful,
    failed: s.failed,
    errored: s.errored,
    remaining: s.remaining,
    recebidos: planShowsArrivals(plan) ? s.recebidos : null,
    clicks: s.converted,
    estado: s.remaining === 0 && s.completed_at ? 'concluído' : 'em andamento',
  }
}

async function sendPage(db: Db, appId: string, before: { at: Date; id: string } | null): Promise<SendRow[]> {
  const r = await query<SendRow>(
    db,
    `SELECT ${COLUMNS} FROM sends WHERE app_id = $1 ${before ? 'AND (queued_at, id) < ($3, $4)' : ''} ORDER BY queued_at DESC, id DESC LIMIT $2`,
    before ? [appId, PAGE + 1, before.at, before.id] : [appId, PAGE + 1],
  )
  return r.rows
}

const FIELDS = ['recipients', 'successful', 'failed', 'errored', 'remaining', 'recebidos', 'clicks'] as const

function funnel(s: SendRow, plan: Plan): Html {
  const max = Math.max(1, s.recipients)
  const arrived = planShowsArrivals(plan) ? s.recebidos : 0
  return html`<div class="funil" data-funil="${s.id}">
<label>aceitos <meter data-campo="successful" min="0" max="${max}" value="${s.successful}">${s.successful}</meter></label>
<label>recebidos <meter data-campo="recebidos" min="0" max="${max}" value="${arrived}">${arrived}</meter></label>
<label>cliques <meter data-campo="clicks" min="0" max="${max}" value="${s.converted}">${s.converted}</meter></label></div>`
}

export async function sendsSection(d: AppPageDeps, { app, q }: AppView): Promise<Html> {
  const now = d.clock()
  const [rows, stats] = await Promise.all([
    sendPage(d.db, app.id, decodeCursor(q.get('envios_antes'))),
    windowStats(d.db, app.id, new Date(now - CHART_DAYS * 86_400_000), new Date(now + 1), app.plan),
  ])
  const shown = rows.slice(0, PAGE)
  const last = shown[shown.length - 1]
  const proof = planShowsArrivals(app.plan)
  const chart = {
    dias: stats.por_dia.map((x) => x.dia),
    enviados: stats.por_dia.map((x) => x.enviados),
    cliques: stats.por_dia.map((x) => x.cliques),
    // The receipts' series only where proof of arrival is shown (painel.js draws the series it is given).
    ...(proof && {
      entregues: stats.por_dia.map((x) => x.entregues),
      provados: stats.por_dia.map((x) => (x.enviados > 0 ? Math.round(((x.entregues ?? 0) / x.enviados) * 1000) / 10 : null)),
    }),
  }
  const t = stats.totais
  return html`<section aria-labelledby="sec-envios" id="envios">
<h2 id="sec-envios">Envios</h2>
<p class="linha"><a class="botao" href="/apps/${app.id}/envios/novo">Nova notificação</a> <a href="/apps/${app.id}/envios">Todos os envios, com filtros</a></p>
${
  proof
    ? html`<p>Últimos ${CHART_DAYS} dias: ${t.disparos} envios, ${t.enviados} aceitos pelos provedores, ${t.entregues} com recibo de chegada, ${t.cliques} cliques.</p>`
    : html`<p>Últimos ${CHART_DAYS} dias: ${t.disparos} envios, ${t.enviados} aceitos pelos provedores, ${t.cliques} cliques.
<br><small>${ARRIVALS_GATE.por_que}</small></p>`
}
<div class="duas graficos">
${
  proof
    ? html`<figure><canvas id="grafico-volume" aria-label="Envios por dia (UTC-03): aceitos, entregues com recibo e cliques" role="img"></canvas><figcaption>Por dia (UTC-03): aceitos, entregues (recibo) e cliques</figcaption></figure>
<figure><canvas id="grafico-prova" aria-label="Porcentagem das entregas provadas por recibo, por dia" role="img"></canvas><figcaption>Entregas provadas por recibo (%)</figcaption></figure>`
    : html`<figure><canvas id="grafico-volume" aria-label="Envios por dia (UTC-03): aceitos e cliques" role="img"></canvas><figcaption>Por dia (UTC-03): aceitos e cliques</figcaption></figure>`
}
</div>
<script type="application/json" id="dados-graficos">${jsonData({ ...chart, url: `/apps/${app.id}/envios` })}</script>
${
  stats.por_dia.length > 0
    ? html`<details><summary>Os dias dos gráficos</summary><table><caption>Por dia (UTC-03): cada dia leva aos envios dele</caption>
<thead><tr><th scope="col">Dia</th><th scope="col">Aceitos</th><th scope="col">Cliques</th></tr></thead>
<tbody>${stats.por_dia.map(
        (x) =>
          html`<tr><td><a href="/apps/${app.id}/envios?desde=${x.dia}&ate=${x.dia}">${x.dia}</a></td><td>${x.enviados}</td><td>${x.cliques}</td></tr>`,
      )}</tbody></table></details>`
    : ''
}
${
  shown.length === 0
    ? html`<p>Nenhum envio ainda.</p>`
    : html`<table id="tabela-envios" data-vivo="/apps/${app.id}/envios.json"><caption>Envios, do mais novo ao mais antigo</caption>
<thead><tr><th scope="col">Enviado em</th><th scope="col">Nome</th>${FIELDS.map((f) => html`<th scope="col">${f}</th>`)}<th scope="col">Funil</th></tr></thead>
<tbody>${shown.map((s) => {
        const c = counters(s, app.plan)
        return html`<tr data-envio="${s.id}"><td>${when(s.queued_at)}</td><td><a href="/apps/${app.id}/envios/${s.id}">${s.name ?? s.id.slice(0, 8)}</a>${s.problem ? html`<br><small class="erro">${s.problem}</small>` : ''}</td>
${FIELDS.map((f) => html`<td data-campo="${f}">${c[f] ?? '—'}</td>`)}<td>${funnel(s, app.plan)}</td></tr>`
      })}</tbody></table>`
}
${rows.length > PAGE && last ? html`<p><a href="/apps/${app.id}?envios_antes=${encodeCursor(last.queued_at, last.id)}#envios">Envios mais antigos</a></p>` : ''}
</section>`
}

export function sendsRoutes(r: Router, d: AppPageDeps): void {
  // Live counters of the sends a page shows (at most 50 ids): one indexed query.
  pollPage(d, r.get.bind(r), '/apps/:id/envios.json', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const ids = (req.query.get('ids') ?? '')
      .split(',')
      .filter(isUuid)
      .slice(0, LIVE_MAX)
      .map((s) => s.toLowerCase())
    if (ids.length === 0) return jsonReply({ envios: {} })
    const x = await query<SendRow>(d.db, `SELECT ${COLUMNS} FROM sends WHERE app_id = $1 AND id = ANY($2::uuid[])`, [app.id, ids])
    const out: Record<string, unknown> = {}
    for (const s of x.rows) out[s.id] = counters(s, app.plan)
    return jsonReply({ envios: out })
  })
}
