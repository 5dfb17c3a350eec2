// The dashboard's public pages (GET / and the sign-in page, before any session) say nothing about the tenants:
// the same bytes before and after apps are created, no app count, no name.
import t from 'tap'
import { startService } from '../helpers/service'

t.test('GET / and /entrar answer the same whatever the tenants hold', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  // The sign-in page carries a pre-session token: the same cookie gets the same page.
  const token = 'A'.repeat(43)
  const pages = async () =>
    Promise.all(
      ['/', '/entrar'].map(async (path) => {
        const r = await fetch(`${s.dashboardUrl}${path}`, { headers: { cookie: `pm_form=${token}` }, redirect: 'manual' })
        t.equal(r.status, 200, path)
        return r.text()
      }),
    )
  const before = await pages()
  for (const nome of ['Tenant Secreto Um', 'Tenant Secreto Dois', 'Tenant Secreto Tres']) await s.createApp({ nome })
  const after = await pages()
  t.same(after, before, 'nothing on them depends on the tenants')
  for (const text of after) {
    t.notMatch(text, /Tenant Secreto/, 'no app name')
    t.notMatch(text, /apps cadastrados/i, 'no app count')
  }
  t.match(after[0], /API pública/, 'the status page still says where the API is')
})
