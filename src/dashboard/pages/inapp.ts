// The app page's "In-app" section: the channel switch and `inapp_cap_horas`, the campaigns (keyset pages) with
// their state and funnel (served → impressions → clicks), the estimated reach of one campaign on request (a count
// over the app's devices, so never for a whole page at once), and publish, pause, end.
import { byPerson } from '../../audit/record'
import { isUuid, type Router } from '../../http/router'
import { type Operation, parseCapHours, TRANSITIONS } from '../../inapp/service'
import { html, type Html } from '../html'
import { DashError } from '../web'
import { type AppPageDeps, type AppView, appAction, button, csrfField } from './context'

const PAGE = 20
const OPS: Array<[Operation, string]> = [
  ['publicar', 'Publicar'],
  ['pausar', 'Pausar'],
  ['encerrar', 'Encerrar'],
]

export async function inappSection(d: AppPageDeps, { app, v, q }: AppView): Promise<Html> {
  const cursor = q.get('inapp_apos')
  let list: Awaited<ReturnType<AppPageDeps['campaigns']['list']>>
  try {
    list = await d.campaigns.list(app.id, { limit: PAGE, state: null, cursor: cursor && cursor.length < 200 ? cursor : null })
  } catch {
    list = await d.campaigns.list(app.id, { limit: PAGE, state: null, cursor: null }) // a mangled cursor: first page
  }
  const reachOf = q.get('alcance')
  const reach = isUuid(reachOf) && list.campanhas.some((c) => c.id === reachOf) ? await d.campaigns.reach(app.id, reachOf) : null
  const base = `/apps/${app.id}`
  return html`<section aria-labelledby="sec-inapp" id="inapp"><h2 id="sec-inapp">In-app</h2>
<form method="post" action="${base}/inapp/config" class="linha">${csrfField(v)}
<label><input type="checkbox" name="ativo" value="1"${app.inappActive ? html` checked` : ''}> Canal in-app ativo</label>
<label for="cap">inapp_cap_horas</label><input id="cap" name="cap_horas" type="number" min="0" max="168" value="${app.inappCapHours}">
<button type="submit">Salvar in-app</button></form>
<p><a class="botao" href="${base}/inapp/nova">Nova campanha</a></p>
${
  list.campanhas.length === 0
    ? html`<p>Nenhuma campanha ainda.</p>`
    : html`<table><caption>Campanhas</caption><thead><tr><th scope="col">Nome</th><th scope="col">Estado</th><th scope="col">Funil</th><th scope="col">Alcance</th><th scope="col">Ações</th></tr></thead>
<tbody>${list.campanhas.map((c) => {
        const k = c.contadores
        const max = Math.max(1, k.servidos)
        return html`<tr><td><a href="${base}/inapp/${c.id}">${c.nome}</a></td><td>${c.estado}</td>
<td class="funil"><label>servidos ${k.servidos}</label> <label>impressões <meter min="0" max="${max}" value="${k.impressoes}">${k.impressoes}</meter> ${k.impressoes}</label>
<label>cliques <meter min="0" max="${max}" value="${k.cliques}">${k.cliques}</meter> ${k.cliques}</label> <label>fechados ${k.fechados}</label></td>
<td>${reach && reach.campanha_id === c.id ? html`<b>${reach.alcance_estimado}</b> dispositivos` : html`<a href="${base}?alcance=${c.id}#inapp">Calcular</a>`}</td>
<td>${OPS.filter(([op]) => TRANSITIONS[op].from.includes(c.estado)).map(([op, label]) =>
          button(
            v,
            `${base}/inapp/${c.id}/${op}`,
            label,
            op === 'encerrar' ? { confirm: `Encerrar a campanha ${c.nome}? Encerrar não tem volta.` } : {},
          ),
        )}</td></tr>`
      })}</tbody></table>`
}
${list.proximo ? html`<p><a href="${base}?inapp_apos=${list.proximo}#inapp">Próximas campanhas</a></p>` : ''}
</section>`
}

export function inappRoutes(r: Router, d: AppPageDeps): void {
  appAction(d, r, '/apps/:id/inapp/config', async (app, form, v) => {
    const raw = form.text('cap_horas').trim()
    const cap = parseCapHours(/^\d{1,4}$/.test(raw) ? Number(raw) : raw === '' ? undefined : raw, d.cfg.limits.inappCapHoursMax)
    const out = await d.campaigns.setConfig(app.id, form.text('ativo') === '1', cap, byPerson(v.email))
    return {
      flash: { kind: 'ok', text: `In-app ${out.inapp_ativo ? 'ativo' : 'desligado'}, inapp_cap_horas ${out.inapp_cap_horas}.` },
      anchor: 'inapp',
    }
  })
  appAction(d, r, '/apps/:id/inapp/:cid/:op', async (app, _form, v, req) => {
    const [, cid, op] = req.params
    if (!isUuid(cid) || (op !== 'publicar' && op !== 'pausar' && op !== 'encerrar'))
      throw new DashError(404, 'Campanha não encontrada.')
    const c = await d.campaigns.apply(app.id, cid.toLowerCase(), op, byPerson(v.email))
    return { flash: { kind: 'ok', text: `Campanha ${c.nome}: ${c.estado}.` }, anchor: 'inapp' }
  })
}
