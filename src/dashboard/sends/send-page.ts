// A send's own page (/apps/{app_id}/envios/{send_id}): Funil (accepted → delivered by the provider → proved by
// receipt → clicked, in numbers and over time since the send), Plataformas, Tempo até o recibo, Falhas, and the
// message as sent. Live while the send is open: the page's script polls `dados.json`, which answers the same parts
// rendered again and the charts' data. Proof of arrival follows the app's plan (src/apps/plan.ts), with the reason.
import { planShowsArrivals } from '../../apps/plan'
import type { AppRecord } from '../../apps/store'
import type { Config } from '../../core/config'
import type { Clock } from '../../core/time'
import type { Db } from '../../db/pool'
import { isUuid, type Router } from '../../http/router'
import { pickText } from '../../message/payload'
import { ARRIVALS_GATE } from '../../sends/read'
import { appFor } from '../access'
import { html, type Html, jsonData, when } from '../html'
import { page } from '../layout'
import type { Sessions } from '../session'
import { htmlReply, jsonReply, notFound, pollPage, viewerPage, type Web } from '../web'
import { FAILURE_LABELS } from './failures'
import {
  LATENCY_EDGES_MS,
  loadSend,
  PLATFORM_LABELS,
  type PlatformKey,
  type SendDetail,
  type SendStats,
  sendStats,
  startOf,
} from './send-stats'

export interface SendPageDeps extends Web {
  cfg: Config
  db: Db
  clock: Clock
  sessions: Sessions
}

const nf = new Intl.NumberFormat('pt-BR')
const num = (n: number) => nf.format(n)

/** A duration for people: 850 ms, 12 s, 3 min 20 s, 2 h 5 min, 3 d 4 h. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`
  const s = Math.round(ms / 1_000)
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`
  const h = Math.floor(m / 60)
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
  const d = Math.floor(h / 24)
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`
}

export function stateOf(s: SendDetail, nowMs: number): string {
  if (s.completed_at) return 'concluído'
  if (s.send_after && s.send_after.getTime() > nowMs) return 'agendado'
  return 'em andamento'
}

const pct = (n: number, of: number) => (of > 0 ? ` (${(Math.round((n / of) * 1000) / 10).toLocaleString('pt-BR')}%)` : '')

function funnelPart(s: SendDetail, proof: boolean): Html {
  const step = (key: string, label: string, n: number | null, of: number, note?: Html) =>
    html`<li><span class="etapa">${label}</span> <b data-contador="${key}">${n === null ? '—' : num(n)}</b>${n === null ? '' : pct(n, of)}${note ?? ''}</li>`
  return html`<ol class="funil-etapas">
${step('recipients', 'Aceitos pelo Pombo (destinatários)', s.recipients, 0, s.recipients_exact || s.expansion_done ? undefined : html` <small>(estimativa até o segmento ser expandido)</small>`)}
${step('successful', 'Entregues ao provedor (successful)', s.successful, s.recipients)}
${step('recebidos', 'Provados por recibo (recebidos)', proof ? s.recebidos : null, s.successful, proof ? undefined : html` <small class="plano">${ARRIVALS_GATE.por_que}</small>`)}
${step('clicks', 'Clicados', s.converted, s.successful)}
</ol>
<p class="dica">Falhas: <b data-contador="failed">${num(s.failed)}</b> recusadas · <b data-contador="errored">${num(s.errored)}</b> com erro · <b data-contador="remaining">${num(s.remaining)}</b> pendentes.</p>`
}

function sampleNote(st: SendStats, what: string): Html {
  if (st.fraction >= 1) return html``
  return html`<p class="dica">Estimativa por amostra: ${what} de ${(Math.round(st.fraction * 10000) / 100).toLocaleString('pt-BR')}% dos dispositivos (escolhidos ao acaso), escalada para o envio todo; os totais do funil são exatos.</p>`
}

function platformsPart(st: SendStats, proof: boolean): Html {
  const keys = (Object.keys(PLATFORM_LABELS) as PlatformKey[]).filter((k) => st.platforms[k].devices > 0)
  if (keys.length === 0) return html`<p>Nenhuma entrega registrada ainda.</p>`
  return html`<table><caption>Por plataforma</caption><thead><tr><th scope="col">Plataforma</th><th scope="col">Dispositivos com entrega</th><th scope="col">Entregues ao provedor</th><th scope="col">Falhas</th><th scope="col">Pendentes</th>${
    proof ? html`<th scope="col">Provados por recibo</th>` : ''
  }<th scope="col">Cliques</th></tr></thead><tbody>${keys.map((k) => {
    const c = st.platforms[k]
    return html`<tr><th scope="row">${PLATFORM_LABELS[k]}</th><td>${num(c.devices)}</td><td>${num(c.accepted)}${pct(c.accepted, c.devices)}</td><td>${num(c.failed)}</td><td>${num(c.pending)}</td>${
      proof ? html`<td>${num(c.proven)}${pct(c.proven, c.accepted)}</td>` : ''
    }<td>${num(c.clicked)}</td></tr>`
  })}</tbody></table>${sampleNote(st, 'entregas')}`
}

function latencyPart(s: SendDetail, st: SendStats, proof: boolean): Html {
  if (!proof) return html`<p class="plano">${ARRIVALS_GATE.por_que}</p>`
  if (s.archived) return html`<p>Os horários dos recibos deste envio já foram arquivados; o total continua no funil.</p>`
  const l = st.latency
  if (!l) return html`<p>Nenhum recibo ainda.</p>`
  return html`<dl class="percentis"><dt>p50</dt><dd data-contador="p50">${duration(l.p50)}</dd><dt>p90</dt><dd>${duration(l.p90)}</dd><dt>p99</dt><dd>${duration(l.p99)}</dd><dt>Recibos medidos</dt><dd>${num(l.count)}</dd></dl>
<details><summary>Distribuição em tabela</summary><table><caption>Recibos por tempo desde o envio</caption><thead><tr><th scope="col">Até</th><th scope="col">Recibos</th></tr></thead><tbody>${l.histogram.map(
    (b, i) =>
      html`<tr><td>${b.upToMs === null ? `mais de ${duration(LATENCY_EDGES_MS[i - 1] as number)}` : duration(b.upToMs)}</td><td>${num(b.n)}</td></tr>`,
  )}</tbody></table></details>${sampleNote(st, 'recibos')}`
}

function failuresPart(s: SendDetail, st: SendStats): Html {
  const total = s.failed + s.errored
  return html`${s.problem ? html`<p class="aviso erro" role="alert">Problema neste envio: ${s.problem}</p>` : ''}
${
  total === 0
    ? html`<p>Nenhuma falha.</p>`
    : st.failures.length === 0
      ? html`<p>${num(total)} falhas; os detalhes das entregas já foram apagados pela retenção.</p>`
      : html`<table><caption>Falhas por motivo</caption><thead><tr><th scope="col">Motivo</th><th scope="col">Entregas</th><th scope="col">O que o provedor disse</th></tr></thead><tbody>${st.failures.map(
          (f) =>
            html`<tr><td>${FAILURE_LABELS[f.category]}</td><td>${num(f.n)}</td><td>${f.words.length ? f.words.join(', ') : '—'}</td></tr>`,
        )}</tbody></table>${sampleNote(st, 'entregas')}`
}`
}

function messagePart(s: SendDetail): Html {
  const m = s.message
  const data = (m.data ?? {}) as Record<string, unknown>
  const langs = Object.keys(s.contents).sort()
  const target =
    s.target_kind === 'segments'
      ? `segmentos: ${s.included_segments.join(', ')}`
      : s.target_kind === 'players'
        ? `${num(s.include_player_ids?.length ?? 0)} player id(s)`
        : `${num(s.include_external_user_ids?.length ?? 0)} id(s) externo(s)`
  const excluded = (['ios', 'android', 'web'] as const).filter((p) => !s.platforms[p])
  return html`<dl class="mensagem">
${langs.map(
  (l) =>
    html`<dt>Idioma ${l}${l === pickText(Object.fromEntries(langs.map((k) => [k, k]))) ? ' (escolhido pelo servidor)' : ''}</dt><dd>${s.headings?.[l] ? html`<b>${s.headings[l]}</b><br>` : ''}${s.contents[l]}</dd>`,
)}
${typeof data.pm_url === 'string' ? html`<dt>URL ao tocar</dt><dd>${data.pm_url}</dd>` : ''}
${typeof m.big_picture === 'string' ? html`<dt>Imagem</dt><dd>${m.big_picture}</dd>` : ''}
<dt>Público</dt><dd>${target}${excluded.length ? ` · sem ${excluded.join(', ')}` : ''}</dd>
<dt>Prioridade</dt><dd>${s.lane === 0 ? 'transacional' : 'marketing'}</dd>
<dt>TTL</dt><dd>${duration(s.ttl_s * 1000)}</dd>
${s.external_id ? html`<dt>external_id</dt><dd>${s.external_id}</dd>` : ''}
</dl>
<details><summary>Payload como viaja (sem pm_msg_id e pm_rcpt)</summary><pre class="payload">${JSON.stringify(m, null, 2)}</pre></details>`
}

/** The charts' data (painel's chart.js): cumulative funnel over time, and the time-to-receipt histogram. */
function chartData(s: SendDetail, st: SendStats, proof: boolean) {
  return {
    labels: st.timeline.at.map((ms) => `+${duration(ms)}`),
    accepted: st.timeline.accepted,
    proven: proof ? st.timeline.proven : null,
    clicked: st.timeline.clicked,
    recipients: s.recipients,
    histogram: proof && st.latency ? st.latency.histogram.map((b) => b.n) : null,
    histogramLabels: [...LATENCY_EDGES_MS.map((e) => `≤ ${duration(e)}`), `> ${duration(LATENCY_EDGES_MS.at(-1) as number)}`],
    platforms: (Object.keys(PLATFORM_LABELS) as PlatformKey[]).map((k) => ({
      label: PLATFORM_LABELS[k],
      accepted: st.platforms[k].accepted,
      failed: st.platforms[k].failed,
      proven: proof ? st.platforms[k].proven : null,
      clicked: st.platforms[k].clicked,
    })),
  }
}

async function view(d: SendPageDeps, app: AppRecord, sid: string | undefined) {
  if (!isUuid(sid)) throw notFound()
  const s = await loadSend(d.db, app.id, sid.toLowerCase())
  if (!s) throw notFound()
  const now = d.clock()
  const st = await sendStats(d.db, app.id, s, now)
  return { s, st, now, proof: planShowsArrivals(app.plan) }
}

export function sendPageRoutes(r: Router, d: SendPageDeps): void {
  viewerPage(d, r.get.bind(r), '/apps/:id/envios/:sid', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const { s, st, now, proof } = await view(d, app, req.params[1])
    const base = `/apps/${app.id}`
    const title = s.name ?? `Envio ${s.id.slice(0, 8)}`
    const state = stateOf(s, now)
    const start = startOf(s)
    const body = html`<p class="trilha"><a href="${base}">${app.name}</a> › <a href="${base}/envios">Envios</a></p>
<h1>${title}</h1>
<p class="sub">ID <code>${s.id}</code> · <span data-contador="estado">${state}</span> · aceito em ${when(s.queued_at)}${
      s.send_after ? html` · agendado para ${when(s.send_after)}` : ''
    }${s.completed_at ? html` · concluído em ${when(s.completed_at)} (${duration(s.completed_at.getTime() - start.getTime())})` : ''}</p>
<div id="envio-vivo" data-vivo="${base}/envios/${s.id}/dados.json" data-aberto="${s.completed_at ? '0' : '1'}">
<section aria-labelledby="h-funil"><h2 id="h-funil">Funil</h2>
<div data-parte="funnel">${funnelPart(s, proof)}</div>
<figure><div class="grafico"><canvas id="grafico-funil" role="img" aria-label="Funil acumulado desde o envio: aceitos pelo Pombo, entregues ao provedor${proof ? ', provados por recibo' : ''} e cliques"></canvas></div>
<figcaption>Acumulado desde ${s.send_after ? 'o horário agendado' : 'o envio'} (${when(start)})</figcaption></figure>
</section>
<section aria-labelledby="h-plataformas"><h2 id="h-plataformas">Plataformas</h2>
<div data-parte="platforms">${platformsPart(st, proof)}</div>
<figure><div class="grafico"><canvas id="grafico-plataformas" role="img" aria-label="Entregas por plataforma"></canvas></div></figure>
</section>
<section aria-labelledby="h-tempo"><h2 id="h-tempo">Tempo até o recibo</h2>
<div data-parte="latency">${latencyPart(s, st, proof)}</div>
${proof ? html`<figure><div class="grafico"><canvas id="grafico-tempo" role="img" aria-label="Histograma do tempo entre o envio e o recibo"></canvas></div></figure>` : ''}
</section>
<section aria-labelledby="h-falhas"><h2 id="h-falhas">Falhas</h2>
<div data-parte="failures">${failuresPart(s, st)}</div>
</section>
</div>
<section aria-labelledby="h-mensagem"><h2 id="h-mensagem">Mensagem como enviada</h2>${messagePart(s)}</section>
<script type="application/json" id="dados-envio">${jsonData(chartData(s, st, proof))}</script>`
    const flash = await d.sessions.takeFlash(v)
    return htmlReply(200, page({ title, viewer: v, flash, scripts: ['/assets/chart.umd.js'] }, body))
  })

  // The live parts of the page while it is open.
  pollPage(d, r.get.bind(r), '/apps/:id/envios/:sid/dados.json', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const { s, st, now, proof } = await view(d, app, req.params[1])
    return jsonReply({
      open: s.completed_at === null,
      state: stateOf(s, now),
      parts: {
        funnel: funnelPart(s, proof).text,
        platforms: platformsPart(st, proof).text,
        latency: latencyPart(s, st, proof).text,
        failures: failuresPart(s, st).text,
      },
      charts: chartData(s, st, proof),
    })
  })
}
