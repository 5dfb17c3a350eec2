// The dashboard's sign-in rules, through the real routes: cookie flags, cross-site refusal, rate limiting,
// session expiry, sign-out, one-time invitations, password length, and 404 for another organisation's app.
import t from 'tap'
import { DashClient, makeApp, makeOrg, makePerson, peopleOf } from '../helpers/dashboard'
import { FakeClock, startService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

t.test('sign-in: the session cookie is HttpOnly, SameSite, with an expiry; a refusal says inválid', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const c = new DashClient(s.dashboardUrl)
  const out = await c.get('/apps')
  t.equal(out.status, 303, 'signed out: sent to /entrar')
  t.equal(out.headers.get('location'), '/entrar')

  const bad = await c.signIn('ana@example.com', 'senha-errada-123')
  t.equal(bad.status, 401)
  t.match(bad.text, /inválid/)
  t.notOk(c.jar.has('pm_sessao'))
  const unknown = await c.signIn('ninguem@example.com', SENHA)
  t.equal(unknown.status, 401, 'an unknown e-mail answers the same')
  t.match(unknown.text, /E-mail ou senha inválidos/)

  const ok = await c.signIn('Ana@Example.com', SENHA)
  t.equal(ok.status, 303, ok.text)
  t.equal(ok.headers.get('location'), '/apps')
  const cookie = ok.headers.getSetCookie().find((x) => x.startsWith('pm_sessao='))
  t.ok(cookie, 'session cookie set')
  t.match(cookie, /; HttpOnly/)
  t.match(cookie, /; SameSite=Lax/)
  t.match(cookie, /; Max-Age=43200/, '12 h by default')
  t.match(cookie, /; Path=\//)
  t.notMatch(cookie, /Secure/, 'plain http: not Secure')
  t.equal((await c.get('/apps')).status, 200)
  // Only a digest of the id is stored.
  const id = (c.jar.get('pm_sessao') as string).split('.')[0]
  const rows = await s.sql("SELECT encode(id_hash, 'hex') AS h FROM dashboard_sessions")
  t.equal(rows.length, 1)
  t.not(rows[0]?.h, Buffer.from(id as string, 'base64url').toString('hex'))
  // A tampered cookie is nobody.
  c.jar.set('pm_sessao', `${id}.${'A'.repeat(43)}`)
  t.equal((await c.get('/apps')).status, 303)
})

t.test('an https dashboard address makes the cookie Secure (and __Host-: dashboard-cookies.test.ts)', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_DASHBOARD_URL: 'https://painel.example.com' } })
  await makePerson(s, 'op@example.com', SENHA, null)
  const c = new DashClient(s.dashboardUrl)
  const ok = await c.signIn('op@example.com', SENHA)
  t.equal(ok.status, 303)
  t.match(
    ok.headers.getSetCookie().find((x) => x.startsWith('__Host-pm_sessao=')),
    /; Secure/,
  )
})

t.test('cross-site requests are refused: missing token, wrong token, foreign Origin', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  const form = await c.get('/apps/novo')
  const token = DashClient.token(form)
  t.equal((await c.post('/apps', { nome: 'Sem token' })).status, 403, 'no token')
  t.equal((await c.post('/apps', { nome: 'Token errado', _csrf: 'x'.repeat(43) })).status, 403, 'wrong token')
  const foreign = await c.post('/apps', { nome: 'Outro site', _csrf: token }, { origin: 'https://evil.example' })
  t.equal(foreign.status, 403, 'foreign origin, even with the token')
  t.match(foreign.text, /origem de outro site/)
  t.equal((await c.post('/apps', { nome: 'Nulo', _csrf: token }, { origin: 'null' })).status, 403, 'Origin: null')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0, 'nothing created')
  const made = await c.post('/apps', { nome: 'Certo', _csrf: token })
  t.equal(made.status, 201)
  t.match(made.text, /Chave da API/)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 1)
  // Sign-in itself: the pre-session token must match its cookie.
  const d = new DashClient(s.dashboardUrl)
  await d.get('/entrar')
  t.equal((await d.post('/entrar', { _csrf: 'y'.repeat(43), email: 'ana@example.com', senha: SENHA })).status, 403)
  const e = new DashClient(s.dashboardUrl)
  const p = await e.get('/entrar')
  t.equal(
    (
      await e.post(
        '/entrar',
        { _csrf: DashClient.token(p), email: 'ana@example.com', senha: SENHA },
        { origin: 'https://evil.example' },
      )
    ).status,
    403,
  )
  t.notOk(e.jar.has('pm_sessao'))
})

t.test('sign-in is rate-limited per account and per IP', async (t) => {
  // A clock that stands still: the account's delay (1 s after the third failure) has not passed when asked again.
  // Delays, their growth and the lockout they avoid: dashboard-signin-limits.test.ts.
  const s = await startService(t, {
    roles: ['api', 'dashboard'],
    clock: new FakeClock(),
    env: { PM_DASHBOARD_SIGNIN_PER_ACCOUNT: '3', PM_DASHBOARD_SIGNIN_PER_IP: '6' },
  })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  await makePerson(s, 'bia@example.com', SENHA, org)
  const c = new DashClient(s.dashboardUrl)
  for (let i = 0; i < 3; i++) t.equal((await c.signIn('ana@example.com', `errada-${i}-xxxxxxx`)).status, 401)
  const blocked = await c.signIn('ana@example.com', SENHA)
  t.equal(blocked.status, 429, 'from this network, even the right password waits its delay')
  t.match(blocked.text, /Muitas tentativas de entrar\. Tente de novo em 1 s/)
  t.notOk(c.jar.has('pm_sessao'))
  // Another account from the same address still signs in, until the address's own limit.
  t.equal((await new DashClient(s.dashboardUrl).signIn('bia@example.com', SENHA)).status, 303)
  t.equal((await new DashClient(s.dashboardUrl).signIn('bia@example.com', 'errada-xxxxxxxxxx')).status, 401)
  t.equal((await new DashClient(s.dashboardUrl).signIn('bia@example.com', SENHA)).status, 429, 'seventh attempt from this IP')
})

t.test('a session ends at its expiry, and at sign-out', async (t) => {
  const clock = new FakeClock()
  // An idle timeout above the hour: this is the absolute expiry (the idle one: dashboard-people.test.ts).
  const s = await startService(t, {
    roles: ['api', 'dashboard'],
    clock,
    env: { PM_DASHBOARD_SESSION_H: '1', PM_DASHBOARD_IDLE_MIN: '120' },
  })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  clock.advance(59 * 60_000)
  t.equal((await c.get('/apps')).status, 200, 'valid within the hour')
  clock.advance(2 * 60_000)
  const late = await c.get('/apps')
  t.equal(late.status, 303, 'expired')
  t.equal(late.headers.get('location'), '/entrar')

  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303)
  const copy = c.jar.get('pm_sessao') as string
  const apps = await c.get('/apps')
  const out = await c.post('/sair', { _csrf: DashClient.token(apps) })
  t.equal(out.status, 303)
  t.match(
    out.headers.getSetCookie().find((x) => x.startsWith('pm_sessao=')),
    /Max-Age=0/,
    'cookie cleared',
  )
  const thief = new DashClient(s.dashboardUrl)
  thief.jar.set('pm_sessao', copy)
  t.equal((await thief.get('/apps')).status, 303, 'a copied cookie is worthless after sign-out')
})

t.test('an invitation link is used once, sets a password of at least 12 characters, and expires', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { roles: ['api', 'dashboard'], clock })
  const org = await makeOrg(s, 'Convidados')
  const people = peopleOf(s, clock.now)
  const { token } = await people.invite('novo@example.com', org)
  const c = new DashClient(s.dashboardUrl)
  const form = await c.get(`/convite/${token}`)
  t.equal(form.status, 200)
  t.match(form.text, /novo@example\.com/)
  t.match(form.text, /Convidados/)
  t.equal(form.headers.get('referrer-policy'), 'same-origin', 'the token never leaks to another site through Referer')
  const short = await c.post(`/convite/${token}`, { _csrf: DashClient.token(form), senha: 'curta-11chr' })
  t.equal(short.status, 400)
  t.match(short.text, /12 caracteres/)
  const ok = await c.post(`/convite/${token}`, { _csrf: DashClient.token(form), senha: SENHA })
  t.equal(ok.status, 303, ok.text)
  t.equal((await c.get('/apps')).status, 200, 'signed in as the new person')
  const [u] = await s.sql('SELECT org_id, operator FROM dashboard_users WHERE email = $1', ['novo@example.com'])
  t.same(u, { org_id: org, operator: false })
  const again = new DashClient(s.dashboardUrl)
  t.equal((await again.get(`/convite/${token}`)).status, 404, 'used: gone')
  const p = await again.get('/entrar')
  t.equal((await again.post(`/convite/${token}`, { _csrf: DashClient.token(p), senha: 'outra-senha-longa' })).status, 404)
  // An unused link past 72 h is gone too.
  const late = await people.invite('tarde@example.com', org)
  clock.advance(72 * 3_600_000 + 1000)
  t.equal((await again.get(`/convite/${late.token}`)).status, 404)
  t.equal((await again.get('/convite/nao-existe')).status, 404)
})

t.test("another organisation's app answers 404 on every page and action; an operator sees all", async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const a = await makeOrg(s, 'A')
  const b = await makeOrg(s, 'B')
  await makePerson(s, 'a@example.com', SENHA, a)
  await makePerson(s, 'op@example.com', SENHA, null)
  const appA = await makeApp(s, 'App <b>A</b>', a)
  const appB = await makeApp(s, 'App B', b)
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('a@example.com', SENHA)).status, 303)
  const list = await c.get('/apps')
  t.match(list.text, /App &lt;b&gt;A&lt;\/b&gt;/, 'names are escaped')
  t.notMatch(list.text, /App B/)
  t.equal((await c.get(`/apps/${appA.id}`)).status, 200)
  const foreign = await c.get(`/apps/${appB.id}`)
  t.equal(foreign.status, 404)
  t.notMatch(foreign.text, /App B/)
  t.equal((await c.get('/apps/00000000-0000-4000-8000-000000000000')).status, 404, 'same as an app that does not exist')
  t.equal((await c.get('/apps/nao-e-uuid')).status, 404)
  const token = DashClient.token(list)
  for (const action of ['pausar', 'girar', 'credenciais/fcm/excluir', 'webhook/reativar', 'exportar']) {
    t.equal((await c.post(`/apps/${appB.id}/${action}`, { _csrf: token })).status, 404, action)
  }
  t.equal((await c.get(`/apps/${appB.id}/envios.json?ids=${appB.id}`)).status, 404)
  t.same((await s.sql('SELECT paused FROM apps WHERE id = $1', [appB.id]))[0], { paused: false }, 'nothing changed')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM app_keys WHERE app_id = $1', [appB.id]))[0]?.n, 1)
  // Plan changes are the operator's.
  t.equal((await c.post(`/apps/${appA.id}/plano`, { _csrf: token, plano: 'pro' })).status, 403)
  const op = new DashClient(s.dashboardUrl)
  t.equal((await op.signIn('op@example.com', SENHA)).status, 303)
  const all = await op.get('/apps')
  t.match(all.text, /App B/)
  t.match(all.text, /App &lt;b&gt;A/)
  t.equal((await op.get(`/apps/${appB.id}`)).status, 200)
  t.equal((await op.post(`/apps/${appB.id}/plano`, { _csrf: DashClient.token(all), plano: 'pro' })).status, 303)
  t.same((await s.sql('SELECT plan FROM orgs WHERE id = $1', [b]))[0], { plan: 'pro' })
})
