// The app page's "Chaves" section: pause and resume, rate_por_min, the plan (operators only: it is the
// organisation's, shared by its apps), the keys with rotation (the new key shown once, the previous key's expiry
// shown) and revocation.
import { byPerson } from '../../audit/record'
import type { AppRecord } from '../../apps/store'
import { type Db, query } from '../../db/pool'
import type { Router } from '../../http/router'
import { optInt } from '../../core/validation'
import { html, type Html, when } from '../html'
import { page } from '../layout'
import { DashError, htmlReply } from '../web'
import { type AppPageDeps, type AppView, appAction, button, csrfField } from './context'

const INT4_MAX = 2_147_483_647
const KEYS_SHOWN = 20

interface KeyRow {
  kid: string
  sandbox: boolean
  created_at: Date
  expires_at: Date | null
  revoked_at: Date | null
}

async function appKeys(db: Db, appId: string): Promise<KeyRow[]> {
  const r = await query<KeyRow>(
    db,
    'SELECT kid, sandbox, created_at, expires_at, revoked_at FROM app_keys WHERE app_id = $1 ORDER BY created_at DESC LIMIT $2',
    [appId, KEYS_SHOWN],
  )
  return r.rows
}

function keyState(k: KeyRow, now: number): string {
  if (k.revoked_at) return `revogada em ${when(k.revoked_at)}`
  if (k.expires_at) return k.expires_at.getTime() <= now ? `expirou em ${when(k.expires_at)}` : `vale até ${when(k.expires_at)}`
  return 'ativa'
}

export async function keysSection(d: AppPageDeps, { app, v }: AppView): Promise<Html> {
  const keys = await appKeys(d.db, app.id)
  const now = d.clock()
  const base = `/apps/${app.id}`
  return html`<section aria-labelledby="sec-chaves" id="chaves">
<h2 id="sec-chaves">Chaves</h2>
<p>Estado: <b>${app.paused ? 'pausado' : 'ativo'}</b>
${app.paused ? button(v, `${base}/retomar`, 'Retomar app') : button(v, `${base}/pausar`, 'Pausar app', { confirm: 'Pausar o app? As rotas dele passam a responder 403.' })}</p>
<form method="post" action="${base}/rate" class="linha">${csrfField(v)}
<label for="rate">rate_por_min</label><input id="rate" name="rate_por_min" type="number" min="1" max="${INT4_MAX}" required value="${app.ratePerMin}">
<button type="submit">Salvar limite</button></form>
${
  v.operator
    ? html`<form method="post" action="${base}/plano" class="linha">${csrfField(v)}
<label for="plano">Plano da organização</label><select id="plano" name="plano">
<option value="free"${app.plan === 'free' ? html` selected` : ''}>free</option><option value="pro"${app.plan === 'pro' ? html` selected` : ''}>pro</option></select>
<button type="submit">Salvar plano</button></form>`
    : html`<p>Plano da organização: <b>${app.plan}</b></p>`
}
<table><caption>Chaves da API</caption><thead><tr><th scope="col">kid</th><th scope="col">Ambiente</th><th scope="col">Criada em</th><th scope="col">Situação</th><th scope="col">Ações</th></tr></thead>
<tbody>${keys.map(
    (
      k,
    ) => html`<tr><td><code>${k.kid}</code></td><td>${k.sandbox ? 'sandbox' : 'produção'}</td><td>${when(k.created_at)}</td><td>${keyState(k, now)}</td>
<td>${k.revoked_at ? '' : button(v, `${base}/revogar`, 'Revogar', { fields: { kid: k.kid }, confirm: `Revogar a chave ${k.kid}? Ela para de funcionar na hora.` })}</td></tr>`,
  )}</tbody></table>
${button(v, `${base}/girar`, 'Girar chave', { confirm: 'Criar uma chave nova? A atual continua valendo por 24 horas.' })}
</section>`
}

export function keysRoutes(r: Router, d: AppPageDeps): void {
  appAction(d, r, '/apps/:id/pausar', async (app, _form, v) => {
    await d.apps.setPaused(app.id, true, byPerson(v.email))
    return { flash: { kind: 'ok', text: 'App pausado.' }, anchor: 'chaves' }
  })
  appAction(d, r, '/apps/:id/retomar', async (app, _form, v) => {
    await d.apps.setPaused(app.id, false, byPerson(v.email))
    return { flash: { kind: 'ok', text: 'App retomado.' }, anchor: 'chaves' }
  })
  appAction(d, r, '/apps/:id/rate', async (app, form, v) => {
    const raw = form.text('rate_por_min').trim()
    const n = /^\d{1,10}$/.test(raw) ? Number(raw) : Number.NaN
    const rate = optInt({ rate_por_min: n }, 'rate_por_min', 1, INT4_MAX) as number
    await d.apps.setRatePerMin(app.id, rate, byPerson(v.email))
    return { flash: { kind: 'ok', text: `rate_por_min agora é ${rate}.` }, anchor: 'chaves' }
  })
  appAction(d, r, '/apps/:id/plano', async (app, form, v) => {
    if (!v.operator) throw new DashError(403, 'Só o operador muda o plano.')
    const plan = form.text('plano')
    if (plan !== 'free' && plan !== 'pro') throw new DashError(400, 'Plano inválido: free ou pro.')
    await d.apps.setPlan(app.id, plan, byPerson(v.email))
    return { flash: { kind: 'ok', text: `Plano da organização: ${plan}.` }, anchor: 'chaves' }
  })
  appAction(d, r, '/apps/:id/revogar', async (app, form, v) => {
    const kid = form.text('kid')
    if (!/^[a-z0-9]{8}$/.test(kid)) throw new DashError(400, 'Chave inválida.')
    const n = await d.apps.revokeKeys(app.id, kid, byPerson(v.email))
    return { flash: { kind: 'ok', text: n ? `Chave ${kid} revogada.` : `A chave ${kid} já estava revogada.` }, anchor: 'chaves' }
  })
  appAction(d, r, '/apps/:id/girar', async (app: AppRecord, _form, v) => {
    const k = await d.apps.rotate(app.id, undefined, byPerson(v.email))
    const body = html`<h1>Chave nova de ${app.name}</h1>
<p class="aviso ok" role="status">Guarde a chave agora: ela não será mostrada de novo.</p>
<div class="cartao"><label for="chave">Chave da API</label><textarea id="chave" readonly rows="2" class="segredo">${k.api_key}</textarea>
<p>${k.anterior_expira_em ? html`A chave anterior vale até <b>${when(new Date(k.anterior_expira_em))}</b> (<time>${k.anterior_expira_em}</time>).` : 'Não havia chave anterior ativa.'}</p></div>
<p><a href="/apps/${app.id}#chaves">Voltar ao app</a></p>`
    return htmlReply(200, page({ title: 'Chave nova', viewer: v }, body))
  })
}
