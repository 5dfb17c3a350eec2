// The audit log in the dashboard (docs/dashboard.md; the contract: heading `Auditoria`, newest first): the app page
// and the organisation's page show their newest records under `Auditoria`, with a link to the whole log, paged by a
// keyset cursor (/apps/{id}/auditoria, /organizacoes/{id}/auditoria). A person sees their organisation's, an
// operator every one; anything else answers 404, like an app or organisation that does not exist.
import { type AuditRow, decodeAuditCursor, encodeAuditCursor, listAudit } from '../../audit/list'
import type { Db } from '../../db/pool'
import type { Router } from '../../http/router'
import { appFor, orgFor } from '../access'
import { html, type Html, when } from '../html'
import { page } from '../layout'
import { htmlReply, viewerPage, type Web } from '../web'

/** Records per page of the whole log. */
export const AUDIT_PAGE = 50
/** Records in the section of the app page and the organisation's page. */
const SECTION_ROWS = 10

export interface AuditPageDeps extends Web {
  db: Db
}

function details(d: Record<string, unknown>): string {
  const text = JSON.stringify(d)
  return text === '{}' ? '' : text
}

function table(rows: AuditRow[], withApp: boolean): Html {
  if (rows.length === 0) return html`<p>Nenhum registro ainda.</p>`
  return html`<table class="auditoria"><caption>Registros de auditoria, do mais novo ao mais antigo</caption>
<thead><tr><th scope="col">Quando</th><th scope="col">Quem</th><th scope="col">Ação</th>${withApp ? html`<th scope="col">App</th>` : ''}<th scope="col">Detalhes</th></tr></thead>
<tbody>${rows.map(
    (r) =>
      html`<tr><td><time datetime="${r.em}">${when(new Date(r.em))}</time></td><td>${r.quem}</td><td><code>${r.acao}</code></td>${
        withApp
          ? html`<td>${r.app_id ? html`<a href="/apps/${r.app_id}"><code>${r.app_id.slice(0, 8)}</code></a>` : '—'}</td>`
          : ''
      }<td><code>${details(r.detalhes)}</code></td></tr>`,
  )}</tbody></table>`
}

/** The app page's section: the newest records and the way to the whole log. */
export async function appAuditSection(db: Db, appId: string): Promise<Html> {
  const p = await listAudit(db, { appId, order: 'newest', limit: SECTION_ROWS })
  return html`<section aria-labelledby="sec-auditoria" id="auditoria">
<h2 id="sec-auditoria">Auditoria</h2>
<p class="sub">Quem mudou o quê neste app (pessoas, comandos do operador, chaves).</p>
${table(p.rows, false)}
<p><a href="/apps/${appId}/auditoria">Toda a auditoria do app</a></p>
</section>`
}

/** The organisation's page section: the newest records of the organisation and of its apps. */
export async function orgAuditSection(db: Db, orgId: string): Promise<Html> {
  const p = await listAudit(db, { orgId, order: 'newest', limit: SECTION_ROWS })
  return html`<section aria-labelledby="sec-auditoria" id="auditoria">
<h2 id="sec-auditoria">Auditoria</h2>
${table(p.rows, true)}
<p><a href="/organizacoes/${orgId}/auditoria">Toda a auditoria da organização</a></p>
</section>`
}

export function auditRoutes(r: Router, d: AuditPageDeps): void {
  const get = r.get.bind(r)

  viewerPage(d, get, '/apps/:id/auditoria', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const p = await listAudit(d.db, {
      appId: app.id,
      order: 'newest',
      after: decodeAuditCursor(req.query.get('antes')),
      limit: AUDIT_PAGE,
    })
    const body = html`<h1>Auditoria</h1>
<p class="sub">App <a href="/apps/${app.id}">${app.name}</a> · <code>${app.id}</code></p>
${table(p.rows, false)}
${p.next ? html`<p><a href="/apps/${app.id}/auditoria?antes=${encodeAuditCursor(p.next)}">Registros mais antigos</a></p>` : ''}
<p><a href="/apps/${app.id}#auditoria">Voltar ao app</a></p>`
    return htmlReply(200, page({ title: `Auditoria: ${app.name}`, viewer: v }, body))
  })

  viewerPage(d, get, '/organizacoes/:id/auditoria', async (req, v) => {
    const org = await orgFor(d.db, v, req.params[0])
    const p = await listAudit(d.db, {
      orgId: org.id,
      order: 'newest',
      after: decodeAuditCursor(req.query.get('antes')),
      limit: AUDIT_PAGE,
    })
    const body = html`<h1>Auditoria</h1>
<p class="sub">Organização <a href="/organizacoes/${org.id}">${org.nome}</a> · <code>${org.id}</code> (os registros dela e dos apps dela)</p>
${table(p.rows, true)}
${p.next ? html`<p><a href="/organizacoes/${org.id}/auditoria?antes=${encodeAuditCursor(p.next)}">Registros mais antigos</a></p>` : ''}
<p><a href="/organizacoes/${org.id}">Voltar à organização</a></p>`
    return htmlReply(200, page({ title: `Auditoria: ${org.nome}`, viewer: v }, body))
  })
}
