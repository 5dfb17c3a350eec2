// Sign-in (/entrar), sign-out (/sair) and the invitation link (/convite/<token>). Before a session exists the forms
// are protected by a double-submit token (an HttpOnly cookie and a hidden field that must match) plus the Origin
// check; sign-in is limited per network and slowed per account (src/dashboard/signin-limit.ts).
import { randomBytes } from 'node:crypto'
import type { Request } from '../../http/request'
import type { Reply } from '../../http/reply'
import type { Router } from '../../http/router'
import { PeopleError, type PeopleService, type Person } from '../../people/service'
import { parseForm } from '../form'
import { html } from '../html'
import { page } from '../layout'
import { cookieHeader, cookies, type Sessions } from '../session'
import { KNOWN_BROWSER_COOKIE, KNOWN_BROWSER_MAX_AGE_S, type SigninLimiter } from '../signin-limit'
import { DashError, FORM_LIMIT, htmlReply, publicPage, redirect, sameOrigin, tokensEqual, viewerAction, type Web } from '../web'

const PRE_COOKIE = 'pm_form'

export interface SigninDeps extends Web {
  sessions: Sessions
  people: PeopleService
  limiter: SigninLimiter
}

/** The pre-session token: the cookie's when it has one, else a new one set with the page. */
function preToken(req: Request, secure: boolean): { token: string; headers: Record<string, string> } {
  const have = cookies(req.header('cookie'), secure).get(PRE_COOKIE)
  if (have && /^[A-Za-z0-9_-]{43}$/.test(have)) return { token: have, headers: {} }
  const token = randomBytes(32).toString('base64url')
  return { token, headers: { 'Set-Cookie': cookieHeader(PRE_COOKIE, token, 3600, secure, 'Strict') } }
}

function checkPre(req: Request, d: SigninDeps, formToken: string): void {
  if (!sameOrigin(req, d.dashboardUrl)) throw new DashError(403, 'Requisição recusada: origem de outro site.')
  const cookie = cookies(req.header('cookie'), d.sessions.secure).get(PRE_COOKIE) ?? ''
  if (!tokensEqual(formToken, cookie))
    throw new DashError(403, 'Requisição recusada: formulário expirado. Recarregue a página e tente de novo.')
}

function signinPage(
  token: string,
  o: { email?: string; error?: string; status?: number } = {},
  headers: Record<string, string> = {},
): Reply {
  const body = html`<h1>Entrar</h1>
${o.error ? html`<p role="alert" class="aviso erro">${o.error}</p>` : ''}
<form method="post" action="/entrar" class="cartao">
<input type="hidden" name="_csrf" value="${token}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${o.email ?? ''}">
<label for="senha">Senha</label>
<input id="senha" name="senha" type="password" autocomplete="current-password" required>
<button type="submit">Entrar</button>
</form>`
  return htmlReply(o.status ?? 200, page({ title: 'Entrar' }, body), headers)
}

function invitePage(
  token: string,
  csrf: string,
  inv: { email: string; orgName: string },
  error?: string,
  headers: Record<string, string> = {},
): Reply {
  const body = html`<h1>Criar acesso</h1>
<p>Convite para <b>${inv.email}</b> na organização <b>${inv.orgName}</b>.</p>
${error ? html`<p role="alert" class="aviso erro">${error}</p>` : ''}
<form method="post" action="/convite/${token}" class="cartao">
<input type="hidden" name="_csrf" value="${csrf}">
<label for="senha">Senha</label>
<input id="senha" name="senha" type="password" autocomplete="new-password" minlength="12" required>
<p class="dica">Pelo menos 12 caracteres.</p>
<button type="submit">Criar acesso</button>
</form>`
  return htmlReply(error ? 400 : 200, page({ title: 'Criar acesso' }, body), headers)
}

/** "45 s", "3 min", "15 min": how long to wait, in words a person reads at a glance. */
function waitText(s: number): string {
  return s < 120 ? `${s} s` : `${Math.ceil(s / 60)} min`
}

const INVITE_GONE = 'Convite inválido, vencido ou já usado. Peça um novo convite.'

export function signinRoutes(r: Router, d: SigninDeps): void {
  const get = r.get.bind(r)
  const post = r.post.bind(r)

  publicPage(get, '/entrar', {}, async (req) => {
    if (await d.sessions.read(req.header('cookie'))) return redirect('/apps')
    const pre = preToken(req, d.sessions.secure)
    return signinPage(pre.token, {}, pre.headers)
  })

  publicPage(post, '/entrar', { bodyLimit: FORM_LIMIT }, async (req) => {
    const form = parseForm(req.header('content-type'), await req.body())
    checkPre(req, d, form.text('_csrf'))
    const email = form.text('email').slice(0, 320)
    const token = form.text('_csrf')
    const gate = await d.limiter.check(email, req.ip, cookies(req.header('cookie'), d.sessions.secure).get(KNOWN_BROWSER_COOKIE))
    if (!gate.ok) {
      // The same words whether the account exists or not; the wait is the one this source really has.
      const error =
        gate.scope === 'network'
          ? `Muitas tentativas de entrar a partir deste endereço. Tente de novo em ${waitText(gate.retryAfterS)}.`
          : `Muitas tentativas de entrar. Tente de novo em ${waitText(gate.retryAfterS)}.`
      return signinPage(token, { email, error, status: 429 }, { 'Retry-After': String(gate.retryAfterS) })
    }
    let person: Person | null
    try {
      person = await d.people.authenticate(email, form.text('senha'))
    } catch (err) {
      await gate.settle('void')
      throw err
    }
    await gate.settle(person ? 'success' : 'failure')
    await d.people.recordSignIn(email, person, req.ip)
    if (!person) return signinPage(token, { email, error: 'E-mail ou senha inválidos.', status: 401 })
    return redirect('/apps', {
      'Set-Cookie': await d.sessions.create(person),
      // A second Set-Cookie: header names differ only in case, so both are written (the reply's headers are a record).
      'set-cookie': cookieHeader(
        KNOWN_BROWSER_COOKIE,
        d.limiter.knownBrowser(email),
        KNOWN_BROWSER_MAX_AGE_S,
        d.sessions.secure,
        'Strict',
      ),
    })
  })

  viewerAction(d, post, '/sair', async (_req, v) => redirect('/entrar', { 'Set-Cookie': await d.sessions.destroy(v) }))

  publicPage(get, '/convite/:token', {}, async (req) => {
    const token = req.params[0] ?? ''
    const inv = await d.people.openInvite(token)
    if (!inv) throw new DashError(404, INVITE_GONE)
    const pre = preToken(req, d.sessions.secure)
    return invitePage(token, pre.token, inv, undefined, pre.headers)
  })

  publicPage(post, '/convite/:token', { bodyLimit: FORM_LIMIT }, async (req) => {
    const token = req.params[0] ?? ''
    const form = parseForm(req.header('content-type'), await req.body())
    checkPre(req, d, form.text('_csrf'))
    const inv = await d.people.openInvite(token)
    if (!inv) throw new DashError(404, INVITE_GONE)
    let person: Person | null
    try {
      person = await d.people.acceptInvite(token, form.text('senha'))
    } catch (err) {
      if (err instanceof PeopleError) return invitePage(token, form.text('_csrf'), inv, err.message)
      throw err
    }
    if (!person) throw new DashError(404, INVITE_GONE)
    return redirect('/apps', { 'Set-Cookie': await d.sessions.create(person) })
  })
}
