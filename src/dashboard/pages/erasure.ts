// Erasing an app or an organisation from the dashboard (issue 32: a customer can leave): the "Excluir app" section of
// the app page, the organisation's page (/organizacoes/{org_id}: its apps and "Excluir organização"), the forms that
// ask for the name typed as it is shown, and the erasure's status page (/exclusoes/{job}). Only operators may erase,
// as only they change plans and manage people (organisations have no administrator of their own); anyone else sees
// why and is refused (403). A wrong name is refused (400) and nothing is touched. The erasure itself is the one the
// CLI runs (src/erasure/erase.ts), started in the background (src/dashboard/erasure-jobs.ts).
import { orgAuditSection } from './audit'
import { byPerson } from '../../audit/record'
import type { AppRecord } from '../../apps/store'
import { type Db, query } from '../../db/pool'
import type { Router } from '../../http/router'
import { appFor, orgFor } from '../access'
import type { ErasureJob, ErasureJobs } from '../erasure-jobs'
import { html, type Html, when } from '../html'
import { page } from '../layout'
import type { Sessions, Viewer } from '../session'
import { DashError, htmlReply, notFound, redirect, viewerAction, viewerPage, type Web } from '../web'
import { csrfField } from './context'

export interface ErasurePageDeps extends Web {
  db: Db
  sessions: Sessions
  jobs: ErasureJobs
}

const APPS_SHOWN = 100
/** The status page reloads itself this often while the erasure runs. */
const REFRESH_S = 2

const WHAT_APP =
  'Apaga para sempre o app e tudo o que ele guarda: dispositivos, envios e entregas, recibos, campanhas in-app e seus eventos, o webhook e suas tentativas, exportações, credenciais e chaves (que param de funcionar na hora, em todas as instâncias). Não há como desfazer.'
const WHAT_ORG =
  'Apaga para sempre a organização, todos os apps dela (com tudo o que cada um guarda), as pessoas dela (que saem do painel na hora) e os convites. Não há como desfazer.'

interface Target {
  kind: 'app' | 'org'
  name: string
  action: string
}

const noun = (t: Target) => (t.kind === 'app' ? 'o app' : 'a organização')
const button = (t: Target) => (t.kind === 'app' ? 'Excluir app' : 'Excluir organização')

/** The typed name is the shown one: surrounding spaces and Unicode composition aside, exactly (case included). */
export function sameName(typed: string, name: string): boolean {
  const a = typed.trim().normalize('NFC')
  return a !== '' && a === name.trim().normalize('NFC')
}

function confirmForm(v: Viewer, t: Target): Html {
  const id = `confirmar-${t.kind}`
  return html`<form method="post" action="${t.action}" class="cartao">${csrfField(v)}
<p>Para confirmar, digite o nome d${t.kind === 'app' ? 'o app' : 'a organização'}: <b class="nome-exato">${t.name}</b></p>
<label for="${id}">Digite o nome d${t.kind === 'app' ? 'o app' : 'a organização'} para confirmar</label>
<input id="${id}" name="nome_confirmacao" required autocomplete="off" spellcheck="false" maxlength="400">
<button type="submit" class="perigo">${button(t)}</button></form>`
}

/** The danger zone of a page: what goes, and the form (operators) or who to ask (anyone else). */
function dangerZone(v: Viewer, t: Target): Html {
  const hid = `sec-excluir-${t.kind}`
  return html`<section aria-labelledby="${hid}" id="excluir" class="zona-perigo">
<h2 id="${hid}">${button(t)}</h2>
<p>${t.kind === 'app' ? WHAT_APP : WHAT_ORG}</p>
${
  v.operator
    ? confirmForm(v, t)
    : html`<p>Só um operador pode excluir ${noun(t)}: peça a exclusão a quem opera o Pombo (<code>pombo ${t.kind} delete</code>).</p>`
}
</section>`
}

/** The app page's last section. */
export function appEraseSection(v: Viewer, app: AppRecord): Html {
  return dangerZone(v, { kind: 'app', name: app.name, action: `/apps/${app.id}/excluir` })
}

function operatorOnly(v: Viewer): void {
  if (!v.operator) throw new DashError(403, 'Só operadores excluem apps e organizações. Nada foi excluído.')
}

/** The page again with the refusal at the top and the form, for a name that did not match. */
function wrongName(v: Viewer, t: Target, back: string): ReturnType<typeof htmlReply> {
  const body = html`<h1>${button(t)}: ${t.name}</h1>
<p role="alert" class="aviso erro">O nome digitado não confere com o nome d${t.kind === 'app' ? 'o app' : 'a organização'}. Nada foi excluído.</p>
<p>${t.kind === 'app' ? WHAT_APP : WHAT_ORG}</p>
${confirmForm(v, t)}
<p><a href="${back}">Voltar</a></p>`
  return htmlReply(400, page({ title: button(t), viewer: v }, body))
}

const fmt = (n: number) => n.toLocaleString('pt-BR')

function removedTable(j: ErasureJob): Html {
  const r = j.removed
  if (!r) return html``
  const rows: Array<[string, number]> = Object.entries(r.rows).filter(([, n]) => n > 0)
  const extra: Array<[string, number]> = [
    ...(r.apps !== undefined ? ([['apps', r.apps]] as Array<[string, number]>) : []),
    ['chaves no Redis', r.redisKeys],
    ['entradas nas filas de trabalho', r.streamEntries],
    ['arquivos de exportação', r.files],
  ]
  return html`<table><caption>Removido</caption><thead><tr><th scope="col">O quê</th><th scope="col">Quantidade</th></tr></thead>
<tbody>${extra.map(([k, n]) => html`<tr><td>${k}</td><td>${fmt(n)}</td></tr>`)}
${rows.map(([k, n]) => html`<tr><td>linhas de <code>${k}</code></td><td>${fmt(n)}</td></tr>`)}</tbody></table>`
}

function statusPage(v: Viewer, j: ErasureJob): ReturnType<typeof htmlReply> {
  const what = j.kind === 'app' ? 'do app' : 'da organização'
  const back = html`<p><a href="${j.back}">Voltar aos apps</a></p>`
  let body: Html
  if (j.state === 'andamento') {
    body = html`<h1>Exclusão ${what}</h1>
<p role="status" id="exclusao-estado">Em andamento${j.progress ? html`: <code>${j.progress}</code>` : '…'}</p>
<p class="sub">Começou em ${when(new Date(j.startedAt))}. Esta página se atualiza sozinha; as chaves já não funcionam. Fechá-la não interrompe a exclusão.</p>`
  } else if (j.state === 'concluida') {
    const s = Math.max(0, Math.round(((j.finishedAt ?? j.startedAt) - j.startedAt) / 1000))
    body = html`<h1>Exclusão ${what}</h1>
<p role="status" id="exclusao-estado" class="aviso ok">Exclusão concluída em ${s} s: nada ${what} ficou guardado.</p>
${removedTable(j)}
${back}`
  } else {
    const why =
      j.state === 'falhou' ? html`parou com um erro: <code>${j.progress}</code>` : 'foi interrompida (o processo parou).'
    body = html`<h1>Exclusão ${what}</h1>
<p role="alert" id="exclusao-estado" class="aviso erro">A exclusão ${why} O que já saiu não volta, e as chaves continuam sem funcionar. Para continuar de onde parou, digite o nome de novo em ${j.kind === 'app' ? 'Excluir app' : 'Excluir organização'}.</p>
${back}`
  }
  return htmlReply(
    200,
    page({ title: `Exclusão ${what}`, viewer: v, refreshS: j.state === 'andamento' ? REFRESH_S : undefined }, body),
  )
}

export function erasureRoutes(r: Router, d: ErasurePageDeps): void {
  const get = r.get.bind(r)
  const post = r.post.bind(r)

  viewerPage(d, get, '/organizacoes/:id', async (req, v) => {
    const org = await orgFor(d.db, v, req.params[0])
    const apps = await query<{ id: string; nome: string; paused: boolean; criado_em: Date }>(
      d.db,
      'SELECT id, nome, paused, criado_em FROM apps WHERE org_id = $1 ORDER BY criado_em DESC, id DESC LIMIT $2',
      [org.id, APPS_SHOWN + 1],
    )
    const shown = apps.rows.slice(0, APPS_SHOWN)
    const flash = await d.sessions.takeFlash(v)
    const audit = await orgAuditSection(d.db, org.id)
    const body = html`<h1>${org.nome}</h1>
<p class="sub">Organização · ID <code>${org.id}</code> · plano ${org.plano}</p>
<section aria-labelledby="sec-org-apps" id="apps">
<h2 id="sec-org-apps">Apps</h2>
${
  shown.length === 0
    ? html`<p>Nenhum app nesta organização.</p>`
    : html`<table><caption>Apps da organização</caption><thead><tr><th scope="col">Nome</th><th scope="col">Estado</th><th scope="col">Criado em</th></tr></thead>
<tbody>${shown.map(
        (a) =>
          html`<tr><td><a href="/apps/${a.id}">${a.nome}</a></td><td>${a.paused ? 'pausado' : 'ativo'}</td><td>${when(a.criado_em)}</td></tr>`,
      )}</tbody></table>${apps.rows.length > APPS_SHOWN ? html`<p>E outros: veja <a href="/apps">Apps</a>.</p>` : ''}`
}
</section>
${audit}
${dangerZone(v, { kind: 'org', name: org.nome, action: `/organizacoes/${org.id}/excluir` })}`
    return htmlReply(200, page({ title: org.nome, viewer: v, flash }, body))
  })

  viewerAction(d, post, '/apps/:id/excluir', async (req, v, form) => {
    const app = await appFor(d.db, v, req.params[0])
    operatorOnly(v)
    const t: Target = { kind: 'app', name: app.name, action: `/apps/${app.id}/excluir` }
    if (!sameName(form.text('nome_confirmacao'), app.name)) return wrongName(v, t, `/apps/${app.id}#excluir`)
    const job = await d.jobs.start('app', app.id, v.userId, `/organizacoes/${app.orgId}`, byPerson(v.email))
    return redirect(`/exclusoes/${job}`)
  })

  viewerAction(d, post, '/organizacoes/:id/excluir', async (req, v, form) => {
    const org = await orgFor(d.db, v, req.params[0])
    operatorOnly(v)
    const t: Target = { kind: 'org', name: org.nome, action: `/organizacoes/${org.id}/excluir` }
    if (!sameName(form.text('nome_confirmacao'), org.nome)) return wrongName(v, t, `/organizacoes/${org.id}#excluir`)
    // The operator's own account is no organisation's; the organisation's people are signed out by the erasure (their
    // sessions go first), wherever they are signed in.
    const job = await d.jobs.start('org', org.id, v.userId, '/apps', byPerson(v.email))
    return redirect(`/exclusoes/${job}`)
  })

  viewerPage(d, get, '/exclusoes/:job', async (req, v) => {
    const job = await d.jobs.read(req.params[0] ?? '')
    // Any operator (a second one who submitted the same name lands here too); nobody else, as nobody else erases.
    if (!job || !v.operator) throw notFound()
    return statusPage(v, job)
  })
}
