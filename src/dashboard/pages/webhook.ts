// The app page's "Webhook" section: the confirmation mode, the destination, `fila_pendente`, whether it is
// disabled (re-enable), its last attempts, and the abandoned events with a replay button.
import { byPerson } from '../../audit/record'
import { enableDestination, pendingCount } from '../../confirmations/store'
import { APP_ABANDONED, replayAbandoned } from '../../confirmations/replay'
import { query } from '../../db/pool'
import type { Router } from '../../http/router'
import { html, type Html, when } from '../html'
import { DashError } from '../web'
import { type AppPageDeps, type AppView, appAction, button } from './context'

const ATTEMPTS_SHOWN = 10
const ABANDONED_PAGE = 20

interface Destination {
  id: string
  url: string
  disabled_at: Date | null
  consecutive_failures: number
}

export async function webhookSection(d: AppPageDeps, { app, v, q }: AppView): Promise<Html> {
  const dest = (
    await query<Destination>(
      d.db,
      'SELECT id, url, disabled_at, consecutive_failures FROM webhook_destinations WHERE app_id = $1 AND active',
      [app.id],
    )
  ).rows[0]
  const base = `/apps/${app.id}`
  if (!dest) {
    return html`<section aria-labelledby="sec-webhook" id="webhook"><h2 id="sec-webhook">Webhook</h2>
<p>Modo de confirmação: <b>${app.confirmMode}</b>. Nenhum destino registrado (PUT /api/v1/confirmacoes com <code>url</code>).</p></section>`
  }
  const beforeText = q.get('abandonados_antes')
  const before = beforeText && /^\d{1,19}$/.test(beforeText) ? beforeText : null
  const [pending, attempts, abandoned] = await Promise.all([
    pendingCount(d.db, app.id),
    query<{ event_seq: string; n: number; result: string; http_status: number | null; reason: string | null; at: Date }>(
      d.db,
      `SELECT event_seq, n, result, http_status, reason, at FROM webhook_attempts WHERE app_id = $3 AND destination_id = $1
        ORDER BY event_seq DESC, n DESC LIMIT $2`,
      [dest.id, ATTEMPTS_SHOWN, app.id],
    ),
    query<{ event_seq: string; evento: string; attempts: number; last_reason: string | null; abandoned_at: Date }>(
      d.db,
      `SELECT event_seq, evento, attempts, last_reason, abandoned_at FROM webhook_abandoned WHERE ${APP_ABANDONED}
        ${before ? 'AND event_seq < $3' : ''} ORDER BY event_seq DESC LIMIT $2`,
      before ? [app.id, ABANDONED_PAGE + 1, before] : [app.id, ABANDONED_PAGE + 1],
    ),
  ])
  const ab = abandoned.rows.slice(0, ABANDONED_PAGE)
  const lastAb = ab[ab.length - 1]
  return html`<section aria-labelledby="sec-webhook" id="webhook"><h2 id="sec-webhook">Webhook</h2>
<dl><dt>Modo</dt><dd>${app.confirmMode}</dd><dt>Destino</dt><dd><code>${dest.url}</code></dd>
<dt>fila_pendente</dt><dd>${pending}</dd>
<dt>Situação</dt><dd>${dest.disabled_at ? html`<b class="erro">desativado</b> desde ${when(dest.disabled_at)} após ${dest.consecutive_failures} falhas seguidas ${button(v, `${base}/webhook/reativar`, 'Reativar')}` : 'ativo'}</dd></dl>
<table><caption>Últimas tentativas</caption><thead><tr><th scope="col">Evento (seq)</th><th scope="col">Tentativa</th><th scope="col">Resultado</th><th scope="col">HTTP</th><th scope="col">Motivo</th><th scope="col">Quando</th></tr></thead>
<tbody>${attempts.rows.map(
    (a) =>
      html`<tr><td>${a.event_seq}</td><td>${a.n}</td><td>${a.result}</td><td>${a.http_status ?? '—'}</td><td>${a.reason ?? ''}</td><td>${when(a.at)}</td></tr>`,
  )}</tbody></table>
<table><caption>Eventos abandonados</caption><thead><tr><th scope="col">Evento (seq)</th><th scope="col">Tipo</th><th scope="col">Tentativas</th><th scope="col">Último motivo</th><th scope="col">Abandonado em</th><th scope="col">Ações</th></tr></thead>
<tbody>${ab.map(
    (
      a,
    ) => html`<tr><td>${a.event_seq}</td><td>${a.evento}</td><td>${a.attempts}</td><td>${a.last_reason ?? ''}</td><td>${when(a.abandoned_at)}</td>
<td>${button(v, `${base}/webhook/reenviar`, 'Reenviar', { fields: { seq: a.event_seq } })}</td></tr>`,
  )}</tbody></table>
${abandoned.rows.length > ABANDONED_PAGE && lastAb ? html`<p><a href="${base}?abandonados_antes=${lastAb.event_seq}#webhook">Abandonados mais antigos</a></p>` : ''}
</section>`
}

export function webhookRoutes(r: Router, d: AppPageDeps): void {
  appAction(d, r, '/apps/:id/webhook/reativar', async (app, _form, v) => {
    const out = await enableDestination(d.db, app.id, new Date(d.clock()), byPerson(v.email))
    if (!out) throw new DashError(404, 'Este app não tem destino de webhook ativo.')
    return { flash: { kind: 'ok', text: 'Webhook reativado: a fila volta a ser entregue.' }, anchor: 'webhook' }
  })
  appAction(d, r, '/apps/:id/webhook/reenviar', async (app, form, v) => {
    const seq = form.text('seq')
    if (!/^\d{1,19}$/.test(seq)) throw new DashError(400, 'Evento inválido.')
    const dest = (await query<{ id: string }>(d.db, 'SELECT id FROM webhook_destinations WHERE app_id = $1 AND active', [app.id]))
      .rows[0]
    if (!dest || !(await replayAbandoned(d.db, app.id, seq, new Date(d.clock()), byPerson(v.email)))) {
      throw new DashError(404, 'Evento abandonado não encontrado (já reenviado?).')
    }
    return { flash: { kind: 'ok', text: `Evento ${seq} de volta à fila do webhook.` }, anchor: 'webhook' }
  })
}
