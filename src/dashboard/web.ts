// The dashboard's request plumbing: HTML answers with their security headers, redirects, the error page, and the
// three kinds of handler: public pages, signed-in pages, and signed-in form posts (Origin check + synchroniser
// token). Every refusal is an HTML page; nothing thrown reaches the router as anything but a page.
import { timingSafeEqual } from 'node:crypto'
import { ApiError } from '../core/errors'
import type { Handler, RouteOptions } from '../http/router'
import type { Reply } from '../http/reply'
import type { Request } from '../http/request'
import { PasswordBusyError } from '../people/password'
import { PeopleError } from '../people/service'
import { CredentialError } from '../credentials/validate'
import { type Form, FormError, parseForm } from './form'
import { html } from './html'
import { page } from './layout'
import type { Sessions, Viewer } from './session'

/** A refusal shown as a page with this status. */
export class DashError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

export const notFound = (): DashError => new DashError(404, 'Página não encontrada.')

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  // The invitation link carries its token in the path: never sent to another site. (`no-referrer` would also make
  // Chromium send `Origin: null` on the dashboard's own form posts, which the Origin check refuses.)
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
}

export function htmlReply(status: number, body: string, headers: Record<string, string> = {}): Reply {
  return { status, body, contentType: 'text/html; charset=utf-8', headers: { ...SECURITY_HEADERS, ...headers } }
}

export function jsonReply(body: unknown): Reply {
  return { status: 200, body, headers: { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' } }
}

export function redirect(location: string, headers: Record<string, string> = {}): Reply {
  return { status: 303, headers: { ...SECURITY_HEADERS, Location: location, ...headers } }
}

/** Headers every dashboard route reads. */
export const DASH_HEADERS = ['cookie', 'content-type', 'origin', 'host', 'sec-fetch-site'] as const
export const FORM_LIMIT = 16 * 1024

function errorPage(status: number, message: string, viewer: Viewer | null): Reply {
  const title = status === 404 ? 'Não encontrado' : status === 429 ? 'Muitas tentativas' : 'Não foi possível'
  return htmlReply(
    status,
    page({ title, viewer }, html`<h1>${title}</h1><p role="alert">${message}</p><p><a href="/apps">Voltar aos apps</a></p>`),
  )
}

/** What a failure means for the person: validation messages as they are; anything else, a generic line. */
function toPage(err: unknown, viewer: Viewer | null): Reply {
  if (err instanceof DashError) return errorPage(err.status, err.message, viewer)
  if (err instanceof PasswordBusyError) {
    const busy = errorPage(503, 'Muitas entradas ao mesmo tempo. Tente de novo em alguns segundos.', viewer)
    return { ...busy, headers: { ...busy.headers, 'Retry-After': '5' } }
  }
  if (err instanceof PeopleError || err instanceof CredentialError || err instanceof FormError)
    return errorPage(400, err.message, viewer)
  if (err instanceof ApiError) {
    const t = err.texts()
    return errorPage(err.status === 404 ? 404 : err.status, `${t.erro} ${t.causa}`, viewer)
  }
  throw err // the router's boundary logs it and answers 500 (or 503 for a dependency)
}

export function sameOrigin(req: Request, dashboardUrl: string): boolean {
  const origin = req.header('origin')
  if (origin === undefined) {
    // Browsers send Origin on every POST; without it, only a request the browser calls same-origin (or no browser).
    const site = req.header('sec-fetch-site')
    return site === undefined || site === 'same-origin' || site === 'none'
  }
  let u: URL
  try {
    u = new URL(origin)
  } catch {
    return false
  }
  return u.origin === new URL(dashboardUrl).origin || (u.host !== '' && u.host === req.header('host'))
}

export function tokensEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y)
}

export interface Web {
  sessions: Sessions
  dashboardUrl: string
}

type Route = (path: string, opts: RouteOptions, h: Handler) => void

/** A page anyone may open. */
export function publicPage(route: Route, path: string, opts: RouteOptions, h: (req: Request) => Promise<Reply>): void {
  route(path, { ...opts, headers: DASH_HEADERS }, async (req) => {
    try {
      return await h(req)
    } catch (err) {
      return toPage(err, null)
    }
  })
}

/** A page for a signed-in person; a signed-out visitor is sent to /entrar. */
export function viewerPage(w: Web, route: Route, path: string, h: (req: Request, v: Viewer) => Promise<Reply>): void {
  signedIn(w, route, path, h, true)
}

/**
 * What a page's script polls (live counters, an export's progress): like a page, but not counted as use, so an open
 * tab alone does not hold off the idle timeout.
 */
export function pollPage(w: Web, route: Route, path: string, h: (req: Request, v: Viewer) => Promise<Reply>): void {
  signedIn(w, route, path, h, false)
}

function signedIn(w: Web, route: Route, path: string, h: (req: Request, v: Viewer) => Promise<Reply>, activity: boolean): void {
  route(path, { headers: DASH_HEADERS }, async (req) => {
    const v = await w.sessions.read(req.header('cookie'), activity)
    if (!v) return redirect('/entrar')
    try {
      return await h(req, v)
    } catch (err) {
      return toPage(err, v)
    }
  })
}

/** A form post of a signed-in person: same origin and the session's token, or 403 and nothing done. */
export function viewerAction(
  w: Web,
  route: Route,
  path: string,
  h: (req: Request, v: Viewer, form: Form) => Promise<Reply>,
  bodyLimit = FORM_LIMIT,
): void {
  route(path, { headers: DASH_HEADERS, bodyLimit }, async (req) => {
    const v = await w.sessions.read(req.header('cookie'))
    try {
      if (!sameOrigin(req, w.dashboardUrl)) throw new DashError(403, 'Requisição recusada: origem de outro site.')
      if (!v) return redirect('/entrar')
      const form = parseForm(req.header('content-type'), await req.body())
      if (!tokensEqual(form.text('_csrf'), v.csrf))
        throw new DashError(403, 'Requisição recusada: formulário expirado ou de outro site. Recarregue a página.')
      return await h(req, v, form)
    } catch (err) {
      if (err instanceof ApiError && err.key === 'BODY_TOO_LARGE') return toPage(new DashError(413, 'Arquivo grande demais.'), v)
      return toPage(err, v)
    }
  })
}
