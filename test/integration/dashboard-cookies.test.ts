// The dashboard served over https (PM_DASHBOARD_URL https://…, as compose.yaml serves it behind nginx): every cookie
// it sets is Secure and carries the __Host- prefix (Path=/, no Domain), and it reads only prefixed cookies, so a
// cookie set by a sibling host or over plain http cannot stand in for a session or a form token.
import t from 'tap'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { startService } from '../helpers/service'

const ORIGIN = 'https://painel.example'
const SENHA = 'uma-senha-bem-longa'

t.test('over https: __Host- cookies, Secure, Path=/, no Domain; bare names are not read', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_DASHBOARD_URL: ORIGIN } })
  await makePerson(s, 'ana@example.com', SENHA, await makeOrg(s, 'Org'))
  const c = new DashClient(s.dashboardUrl, ORIGIN)

  const form = await c.get('/entrar')
  const pre = form.headers.getSetCookie()
  t.equal(pre.length, 1)
  t.match(pre[0], /^__Host-pm_form=[A-Za-z0-9_-]{43}; /, 'the form token cookie is prefixed')
  const ok = await c.post('/entrar', { _csrf: DashClient.token(form), email: 'ana@example.com', senha: SENHA })
  t.equal(ok.status, 303, ok.text)
  const set = ok.headers.getSetCookie()
  t.ok(
    set.some((x) => x.startsWith('__Host-pm_sessao=')),
    'the session cookie is prefixed',
  )
  for (const cookie of [...pre, ...set]) {
    t.match(cookie, /^__Host-/, cookie.split('=')[0] ?? '')
    t.match(cookie, /; Secure(;|$)/, 'Secure')
    t.match(cookie, /; Path=\/(;|$)/, 'Path=/')
    t.notMatch(cookie, /Domain=/i, 'no Domain')
    t.match(cookie, /; HttpOnly/, 'HttpOnly')
  }
  t.equal((await c.get('/apps')).status, 200, 'signed in with the prefixed cookie')

  // The same session value under the bare name (what a sibling host could set) is not a session.
  const session = c.jar.get('__Host-pm_sessao') as string
  const bare = await fetch(`${s.dashboardUrl}/apps`, { headers: { cookie: `pm_sessao=${session}` }, redirect: 'manual' })
  t.equal(bare.status, 303, 'a bare pm_sessao is ignored: sent to sign in')
  // Nor a bare form token: the sign-in form refuses it.
  const token = 'B'.repeat(43)
  const tossed = await fetch(`${s.dashboardUrl}/entrar`, {
    method: 'POST',
    headers: { cookie: `pm_form=${token}`, origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token, email: 'ana@example.com', senha: SENHA }).toString(),
    redirect: 'manual',
  })
  t.equal(tossed.status, 403, 'a bare pm_form does not pass the form check')

  const out = await c.submit('/apps', '/sair')
  t.ok(
    out.headers.getSetCookie().some((x) => /^__Host-pm_sessao=; .*Max-Age=0/.test(x)),
    'sign-out clears the prefixed cookie',
  )
})

t.test('over plain http the names stay bare and are not Secure (a browser would drop a Secure cookie there)', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const set = (await fetch(`${s.dashboardUrl}/entrar`)).headers.getSetCookie()
  t.match(set[0], /^pm_form=/)
  t.notMatch(set[0], /Secure/)
})
