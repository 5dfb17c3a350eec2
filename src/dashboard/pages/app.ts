// /apps/{app_id}: one app, its sections (Chaves, Credenciais, Dispositivos, Envios, Webhook, In-app, and last the
// danger zone, Excluir app), with the credential problem met by real sends shown first. An app of another
// organisation answers 404.
import type { Router } from '../../http/router'
import { appFor } from '../access'
import { html } from '../html'
import { page } from '../layout'
import { htmlReply, viewerPage } from '../web'
import type { AppPageDeps } from './context'
import { credentialsRoutes, credentialsSection, problemBanner, recentProblem } from './credentials'
import { devicesRoutes, devicesSection } from './devices'
import { appAuditSection, auditRoutes } from './audit'
import { appEraseSection } from './erasure'
import { inappRoutes, inappSection } from './inapp'
import { keysRoutes, keysSection } from './keys'
import { sendsRoutes, sendsSection } from './sends'
import { webhookRoutes, webhookSection } from './webhook'

export function appPageRoutes(r: Router, d: AppPageDeps): void {
  viewerPage(d, r.get.bind(r), '/apps/:id', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const view = { app, v, q: req.query }
    const [flash, problem, keys, creds, devices, sends, webhook, inapp, audit] = await Promise.all([
      d.sessions.takeFlash(v),
      recentProblem(d.db, app.id),
      keysSection(d, view),
      credentialsSection(d, view),
      devicesSection(d, view),
      sendsSection(d, view),
      webhookSection(d, view),
      inappSection(d, view),
      appAuditSection(d.db, app.id),
    ])
    const body = html`<h1>${app.name}</h1>
<p class="sub">ID <code>${app.id}</code> · <a href="/organizacoes/${app.orgId}">organização</a> · plano ${app.plan}${app.paused ? ' · pausado' : ''}${app.sandbox ? ' · sandbox' : ''}</p>
${problemBanner(problem)}
<nav aria-label="Seções" class="secoes"><a href="#chaves">Chaves</a> <a href="#credenciais">Credenciais</a> <a href="#dispositivos">Dispositivos</a> <a href="#envios">Envios</a> <a href="#webhook">Webhook</a> <a href="#inapp">In-app</a> <a href="#auditoria">Auditoria</a> <a href="#excluir">Excluir app</a></nav>
${keys}${creds}${devices}${sends}${webhook}${inapp}${audit}${appEraseSection(v, app)}`
    return htmlReply(200, page({ title: app.name, viewer: v, flash, scripts: ['/assets/chart.umd.js'] }, body))
  })
  // Actions and sub-pages; static segments win over parameters in the router.
  keysRoutes(r, d)
  credentialsRoutes(r, d)
  devicesRoutes(r, d)
  sendsRoutes(r, d)
  webhookRoutes(r, d)
  inappRoutes(r, d)
  auditRoutes(r, d)
}
