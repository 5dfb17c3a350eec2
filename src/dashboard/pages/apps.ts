// /apps: the viewer's apps (an operator's: every app), the "Novo app" form, and the creation answer that shows the
// API key once (in a read-only text area: its text and its value are both the key, however a reader looks).
import { byPerson } from '../../audit/record'
import type { AppService } from '../../apps/service'
import { parseCreateApp } from '../../apps/validate'
import type { Config } from '../../core/config'
import type { Db } from '../../db/pool'
import { isUuid, type Router } from '../../http/router'
import { listOrgs } from '../../orgs/store'
import { decodeCursor, encodeCursor, listApps } from '../access'
import { html, when } from '../html'
import { page } from '../layout'
import type { Sessions } from '../session'
import { DashError, htmlReply, viewerAction, viewerPage, type Web } from '../web'

export interface AppsPageDeps extends Web {
  db: Db
  apps: AppService
  cfg: Config
  sessions: Sessions
}

const PAGE = 50

export function appsRoutes(r: Router, d: AppsPageDeps): void {
  const get = r.get.bind(r)
  const post = r.post.bind(r)

  viewerPage(d, get, '/apps', async (req, v) => {
    const rows = await listApps(d.db, v, decodeCursor(req.query.get('apos')), PAGE + 1)
    const shown = rows.slice(0, PAGE)
    const last = shown[shown.length - 1]
    const flash = await d.sessions.takeFlash(v)
    const body = html`<h1>Apps</h1>
<p><a class="botao" href="/apps/novo">Novo app</a></p>
${
  shown.length === 0
    ? html`<p>Nenhum app ainda.</p>`
    : html`<table><thead><tr><th scope="col">Nome</th><th scope="col">Organização</th><th scope="col">Plano</th><th scope="col">Estado</th><th scope="col">Criado em</th></tr></thead>
<tbody>${shown.map(
        (a) =>
          html`<tr><td><a href="/apps/${a.id}">${a.nome}</a></td><td>${a.org_name}</td><td>${a.plan}</td><td>${a.paused ? 'pausado' : 'ativo'}</td><td>${when(a.criado_em)}</td></tr>`,
      )}</tbody></table>`
}
${rows.length > PAGE && last ? html`<p><a href="/apps?apos=${encodeCursor(last.criado_em, last.id)}">Próxima página</a></p>` : ''}`
    return htmlReply(200, page({ title: 'Apps', viewer: v, flash }, body))
  })

  viewerPage(d, get, '/apps/novo', async (_req, v) => {
    const orgs = v.operator ? await listOrgs(d.db, 500) : []
    const body = html`<h1>Novo app</h1>
<form method="post" action="/apps" class="cartao">
<input type="hidden" name="_csrf" value="${v.csrf}">
<label for="nome">Nome</label>
<input id="nome" name="nome" required maxlength="200">
${
  v.operator
    ? html`<label for="org">Organização</label>
<select id="org" name="org"><option value="">Nova organização (com o nome do app)</option>
${orgs.map((o) => html`<option value="${o.id}">${o.nome} (${o.plano})</option>`)}</select>`
    : ''
}
<button type="submit">Criar</button>
</form>`
    return htmlReply(200, page({ title: 'Novo app', viewer: v }, body))
  })

  viewerAction(d, post, '/apps', async (_req, v, form) => {
    const input = parseCreateApp({ nome: form.text('nome') }, d.cfg.limits.appNameMaxBytes)
    let orgId: string | undefined
    if (v.operator) {
      const chosen = form.text('org')
      if (chosen !== '' && !isUuid(chosen)) throw new DashError(400, 'Organização inválida.')
      orgId = chosen || undefined
    } else {
      orgId = v.orgId ?? undefined
    }
    const app = await d.apps.create({ ...input, orgId }, byPerson(v.email))
    const body = html`<h1>App criado: ${app.nome}</h1>
<p class="aviso ok" role="status">Guarde as chaves agora: elas não serão mostradas de novo.</p>
<div class="cartao">
<label for="chave">Chave da API</label>
<textarea id="chave" readonly rows="2" class="segredo">${app.api_key}</textarea>
<label for="recibo">Chave de recibo</label>
<textarea id="recibo" readonly rows="2" class="segredo">${app.receipt_key}</textarea>
<p>ID do app: <code>${app.id}</code></p>
</div>
<p><a href="/apps/${app.id}">Abrir o app</a></p>`
    return htmlReply(201, page({ title: 'App criado', viewer: v }, body))
  })
}
