// A browser-less client of the dashboard: a cookie jar, forms posted with their hidden token, redirects not
// followed (tests look at them; test/helpers/http.ts follows none). Plus people and organisations made through the
// real services.
import { insertOrg } from '../../src/orgs/store'
import { PeopleService } from '../../src/people/service'
import { request } from './http'
import type { TestService } from './service'

export interface Page {
  status: number
  headers: Headers
  text: string
}

export class DashClient {
  readonly jar = new Map<string, string>()
  /** Sent with every request (X-Forwarded-For behind a trusted proxy, Sec-Fetch-Mode of a page's script…). */
  headers: Record<string, string> = {}

  constructor(
    readonly base: string,
    readonly origin = base,
  ) {}

  #cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  #keep(headers: Headers): void {
    for (const c of headers.getSetCookie()) {
      const [pair] = c.split(';')
      const i = (pair as string).indexOf('=')
      const k = (pair as string).slice(0, i)
      const v = (pair as string).slice(i + 1)
      if (/Max-Age=0/i.test(c)) this.jar.delete(k)
      else this.jar.set(k, v)
    }
  }

  async get(path: string): Promise<Page> {
    const res = await request(this.base + path, { headers: { ...this.headers, cookie: this.#cookieHeader() } })
    this.#keep(res.headers)
    return res
  }

  async post(
    path: string,
    fields: Record<string, string>,
    o: { origin?: string | null; multipart?: FormData } = {},
  ): Promise<Page> {
    const headers: Record<string, string> = { ...this.headers, cookie: this.#cookieHeader() }
    const origin = o.origin === undefined ? this.origin : o.origin
    if (origin !== null) headers.origin = origin
    if (o.multipart) {
      // fetch encodes the multipart body (an uploaded file).
      for (const [k, v] of Object.entries(fields)) o.multipart.set(k, v)
      const res = await fetch(this.base + path, { method: 'POST', headers, body: o.multipart, redirect: 'manual' })
      this.#keep(res.headers)
      return { status: res.status, headers: res.headers, text: await res.text() }
    }
    headers['content-type'] = 'application/x-www-form-urlencoded'
    const res = await request(this.base + path, { method: 'POST', headers, body: new URLSearchParams(fields).toString() })
    this.#keep(res.headers)
    return res
  }

  /** The hidden `_csrf` value of a page's first form. */
  static token(p: Page): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(p.text)
    if (!m) throw new Error(`no _csrf on the page (${p.status}): ${p.text.slice(0, 300)}`)
    return m[1] as string
  }

  /** Signs in through /entrar; answers the POST's page (303 to /apps on success). */
  async signIn(email: string, senha: string): Promise<Page> {
    const form = await this.get('/entrar')
    return this.post('/entrar', { _csrf: DashClient.token(form), email, senha })
  }

  /** Posts a form found on `page` at `path`, with the page's token. */
  async submit(
    pagePath: string,
    action: string,
    fields: Record<string, string> = {},
    o: { multipart?: FormData } = {},
  ): Promise<Page> {
    const p = await this.get(pagePath)
    return this.post(action, { _csrf: DashClient.token(p), ...fields }, o)
  }
}

export async function makeOrg(s: TestService, name: string, plan: 'free' | 'pro' = 'free'): Promise<string> {
  return (await insertOrg(s.svc.deps.db, { name, plan, at: new Date() })).id
}

/** The people service as the test service's dashboard has it (its invitation, idle and password-cost settings). */
export function peopleOf(s: TestService, clock: () => number = Date.now): PeopleService {
  return PeopleService.fromConfig(s.svc.deps.db, clock, s.cfg.dashboard)
}

export async function makePerson(s: TestService, email: string, password: string, orgId: string | null): Promise<string> {
  const p = await peopleOf(s).create({ email, orgId, operator: orgId === null, password })
  return p.id
}

/** An app of an organisation, through the real service; answers its id and API key. */
export async function makeApp(
  s: TestService,
  name: string,
  orgId: string,
): Promise<{ id: string; api_key: string; receipt_key: string }> {
  return s.svc.deps.apps.create({ name, orgId })
}
