// The people of the dashboard: /pessoas (operators: everyone who signs in, their open sessions; end a person's
// sessions, remove a person), /convites (operators: invitations still usable; cancel one) and /conta (anyone: sign
// out everywhere). Organisations have no administrator of their own, so managing people is the operators' (as
// `pombo user …` is); every action calls the PeopleService the CLI calls.
import { byPerson } from '../../audit/record'
import { isUuid, type Router } from '../../http/router'
import type { PeopleService } from '../../people/service'
import { decodeCursor, encodeCursor } from '../access'
import { html, when } from '../html'
import { page } from '../layout'
import { cookieHeader, SESSION_COOKIE, type Sessions, type Viewer } from '../session'
import { DashError, htmlReply, notFound, redirect, viewerAction, viewerPage, type Web } from '../web'
import { button } from './context'

export interface PeoplePageDeps extends Web {
  sessions: Sessions
  people: PeopleService
}

const PAGE = 50

function operatorOnly(v: Viewer): void {
  if (!v.operator) throw new DashError(403, 'Só operadores gerenciam pessoas e convites.')
}

/** The id in a path: a UUID, else 404 (like a person that does not exist). */
function pathId(raw: string | undefined): string {
  if (!isUuid(raw)) throw notFound()
  return raw.toLowerCase()
}

/** The answer when the viewer's own sessions have just ended: the cookie goes, and so to /entrar. */
function signedOut(d: PeoplePageDeps): ReturnType<typeof redirect> {
  return redirect('/entrar', { 'Set-Cookie': cookieHeader(SESSION_COOKIE, '', 0, d.sessions.secure) })
}

export function peopleRoutes(r: Router, d: PeoplePageDeps): void {
  const get = r.get.bind(r)
  const post = r.post.bind(r)

  viewerPage(d, get, '/pessoas', async (req, v) => {
    operatorOnly(v)
    const after = req.query.get('apos')
    const rows = await d.people.list(after && after.length <= 254 ? after : null, PAGE + 1)
    const shown = rows.slice(0, PAGE)
    const last = shown[shown.length - 1]
    const flash = await d.sessions.takeFlash(v)
    const body = html`<h1>Pessoas</h1>
<p class="sub">Quem entra no painel. Novas pessoas: <code>pombo user invite --email … --org ORG_ID</code>. <a href="/convites">Convites pendentes</a></p>
<table><caption>Pessoas</caption><thead><tr><th scope="col">E-mail</th><th scope="col">Organização</th><th scope="col">Papel</th><th scope="col">Sessões abertas</th><th scope="col">Criada em</th><th scope="col">Ações</th></tr></thead>
<tbody>${shown.map(
      (p) =>
        html`<tr><td>${p.email}</td><td>${p.orgName ?? '—'}</td><td>${p.operator ? 'operador' : 'pessoa'}</td><td>${p.sessions}</td><td>${when(p.createdAt)}</td>
<td>${button(v, `/pessoas/${p.id}/sessoes`, 'Encerrar sessões', { confirm: `Encerrar todas as sessões de ${p.email}? A pessoa precisa entrar de novo.` })}
${p.id === v.userId ? '' : button(v, `/pessoas/${p.id}/remover`, 'Remover', { confirm: `Remover ${p.email}? Todas as sessões dessa pessoa terminam na hora.`, cls: 'perigo' })}</td></tr>`,
    )}</tbody></table>
${rows.length > PAGE && last ? html`<p><a href="/pessoas?apos=${encodeURIComponent(last.email)}">Próxima página</a></p>` : ''}`
    return htmlReply(200, page({ title: 'Pessoas', viewer: v, flash }, body))
  })

  viewerAction(d, post, '/pessoas/:id/sessoes', async (req, v) => {
    operatorOnly(v)
    const id = pathId(req.params[0])
    const person = await d.people.find(id)
    if (!person) throw notFound()
    const n = await d.people.endSessions(id, byPerson(v.email))
    if (id === v.userId) return signedOut(d)
    await d.sessions.setFlash(v, { kind: 'ok', text: `Sessões de ${person.email} encerradas: ${n}.` })
    return redirect('/pessoas')
  })

  viewerAction(d, post, '/pessoas/:id/remover', async (req, v, form) => {
    operatorOnly(v)
    const id = pathId(req.params[0])
    const person = await d.people.find(id)
    if (!person) throw notFound()
    if (id === v.userId)
      throw new DashError(400, 'Você não pode remover a si mesmo. Outro operador pode, ou `pombo user remove`.')
    // Without the confirmation (no script ran to ask), the question is a page of its own.
    if (form.text('confirmar') !== '1') {
      const body = html`<h1>Remover ${person.email}?</h1>
<p>A pessoa deixa de entrar no painel e todas as sessões dela terminam na hora.</p>
${button(v, `/pessoas/${id}/remover`, 'Confirmar remoção', { fields: { confirmar: '1' }, cls: 'perigo' })}
<p><a href="/pessoas">Voltar</a></p>`
      return htmlReply(200, page({ title: 'Remover pessoa', viewer: v }, body))
    }
    const out = await d.people.remove(id, byPerson(v.email))
    await d.sessions.setFlash(v, {
      kind: 'ok',
      text: `${out.person.email} removida; sessões encerradas: ${out.sessions}.`,
    })
    return redirect('/pessoas')
  })

  viewerPage(d, get, '/convites', async (req, v) => {
    operatorOnly(v)
    const org = req.query.get('org')
    const orgId = isUuid(org) ? org.toLowerCase() : undefined
    const rows = await d.people.invites({ orgId, after: decodeCursor(req.query.get('apos')), limit: PAGE + 1 })
    const shown = rows.slice(0, PAGE)
    const last = shown[shown.length - 1]
    const flash = await d.sessions.takeFlash(v)
    const next = last ? `/convites?apos=${encodeCursor(last.createdAt, last.id)}${orgId ? `&org=${orgId}` : ''}` : '/convites'
    const body = html`<h1>Convites</h1>
<p class="sub">Convites ainda válidos (nem usados, nem vencidos). Cancelado, o link deixa de funcionar na hora. <a href="/pessoas">Pessoas</a></p>
${
  shown.length === 0
    ? html`<p>Nenhum convite pendente.</p>`
    : html`<table><caption>Convites pendentes</caption><thead><tr><th scope="col">E-mail</th><th scope="col">Organização</th><th scope="col">Criado em</th><th scope="col">Vence em</th><th scope="col">Ações</th></tr></thead>
<tbody>${shown.map(
        (i) =>
          html`<tr><td>${i.email}</td><td><a href="/convites?org=${i.orgId}">${i.orgName}</a></td><td>${when(i.createdAt)}</td><td>${when(i.expiresAt)}</td>
<td>${button(v, `/convites/${i.id}/cancelar`, 'Cancelar', { confirm: `Cancelar o convite de ${i.email}?` })}</td></tr>`,
      )}</tbody></table>`
}
${rows.length > PAGE && last ? html`<p><a href="${next}">Próxima página</a></p>` : ''}`
    return htmlReply(200, page({ title: 'Convites', viewer: v, flash }, body))
  })

  viewerAction(d, post, '/convites/:id/cancelar', async (req, v) => {
    operatorOnly(v)
    const gone = await d.people.cancelInvites({ id: pathId(req.params[0]) }, byPerson(v.email))
    if (gone.length === 0) throw new DashError(404, 'Convite não encontrado: já usado, vencido ou cancelado.')
    await d.sessions.setFlash(v, { kind: 'ok', text: `Convite de ${gone[0]?.email} cancelado.` })
    return redirect('/convites')
  })

  viewerPage(d, get, '/conta', async (_req, v) => {
    const flash = await d.sessions.takeFlash(v)
    const body = html`<h1>Conta</h1>
<div class="cartao">
<p>E-mail: <b>${v.email}</b>${v.operator ? ' (operador)' : ''}</p>
<p>Perdeu um aparelho ou entrou num computador de outra pessoa? Encerre todas as suas sessões, inclusive esta.</p>
${button(v, '/conta/sair-de-todos', 'Sair de todos os dispositivos', { confirm: 'Encerrar todas as suas sessões, inclusive esta?' })}
</div>`
    return htmlReply(200, page({ title: 'Conta', viewer: v, flash }, body))
  })

  viewerAction(d, post, '/conta/sair-de-todos', async (_req, v) => {
    await d.people.endSessions(v.userId, byPerson(v.email))
    return signedOut(d)
  })
}
