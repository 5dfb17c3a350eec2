// The pombo CLI (docs/spec/contract.md): the same results as the routes, printed as JSON; bad input exits non-zero with a
// one-line reason and writes nothing. Runs the real entry point as a child process against the test's namespace.
import t from 'tap'
import { allRefused, oneLineFailure, pombo } from '../helpers/cli'
import { startService, type TestService } from '../helpers/service'

const apps = async (s: TestService) => (await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n

t.test('app create prints the same answer as POST /api/v1/apps', async (t) => {
  const s = await startService(t)
  const r = await pombo(s, ['app', 'create', '--nome', 'Loja CLI', '--sandbox', '--rate-por-min', '600'])
  t.equal(r.code, 0, r.stderr)
  const app = JSON.parse(r.stdout)
  t.same(Object.keys(app).sort(), ['api_key', 'criado_em', 'id', 'kid', 'nome', 'rate_por_min', 'receipt_key'])
  t.match(app.api_key, /^pm_test_/)
  t.equal(app.rate_por_min, 600)
  t.equal(app.nome, 'Loja CLI')
  // The key it printed works on the running service.
  const probe = await s.call('GET', `/api/v1/players/00000000-0000-4000-8000-000000000000?app_id=${app.id}`, {
    headers: { authorization: `Bearer ${app.api_key}` },
  })
  t.equal(probe.status, 404, 'authenticated; the player simply does not exist')
})

t.test('bad input: one line, non-zero, nothing written', async (t) => {
  const s = await startService(t)
  await allRefused(t, [
    [pombo(s, ['app', 'create']), /--nome/],
    [pombo(s, ['app', 'create', '--nome', '  ']), /--nome/],
    [pombo(s, ['app', 'create', '--nome', 'x', '--rate-por-min', '0']), /rate-por-min/],
    [pombo(s, ['app', 'create', '--nome', 'x', '--bogus']), /bogus/],
    [pombo(s, ['app', 'create', '--nome', 'x'], { PM_VAULT_KEY: '' }), /PM_VAULT_KEY|[Cc]ofre/],
    [pombo(s, ['app', 'create', '--nome', 'x'], { PM_VAULT_KEY: 'short' }), /PM_VAULT_KEY/],
    [pombo(s, ['app', 'pause', 'not-a-uuid']), /APP_ID/],
    [pombo(s, ['app', 'pause', '00000000-0000-4000-8000-000000000000']), /App não encontrado/],
    [pombo(s, ['frobnicate']), /unknown command/],
  ])
  t.equal(await apps(s), 0)
})

t.test('pause, resume and plan act on the running service at once', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const fb = `/api/v1/apps/${app.id}/firebase_params`
  t.equal((await s.call('GET', fb)).status, 200)
  t.equal((await pombo(s, ['app', 'pause', app.id])).code, 0)
  t.equal((await s.call('GET', fb)).status, 403, 'the cache was invalidated through Redis')
  t.equal((await pombo(s, ['app', 'resume', app.id])).code, 0)
  t.equal((await s.call('GET', fb)).status, 200)
  const plan = await pombo(s, ['app', 'plan', app.id, 'pro'])
  t.equal(plan.code, 0)
  t.same(JSON.parse(plan.stdout), { id: app.id, plano: 'pro' })
  t.equal((await s.sql('SELECT o.plan FROM orgs o JOIN apps a ON a.org_id = o.id'))[0]?.plan, 'pro')
  oneLineFailure(t, await pombo(s, ['app', 'plan', app.id, 'gold']), /free or pro/)
})

t.test('key revoke and rotate-key', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const path = `/api/v1/players/00000000-0000-4000-8000-000000000000?app_id=${app.id}`
  const auth = (k: string) => ({ headers: { authorization: `Bearer ${k}` } })
  t.equal((await s.call('GET', path, auth(app.api_key))).status, 404)
  const rot = await pombo(s, ['app', 'rotate-key', app.id])
  t.equal(rot.code, 0)
  const fresh = JSON.parse(rot.stdout)
  t.match(fresh.anterior_expira_em, /\+00:00$/)
  const rev = await pombo(s, ['key', 'revoke', app.id, '--kid', app.kid])
  t.same(JSON.parse(rev.stdout), { id: app.id, revogadas: 1 })
  t.equal((await s.call('GET', path, auth(app.api_key))).status, 401, 'revoked at once')
  t.equal((await s.call('GET', path, auth(fresh.api_key))).status, 404, 'the new key still works')
})

t.test('migrate is idempotent', async (t) => {
  const s = await startService(t)
  const r = await pombo(s, ['migrate'])
  t.equal(r.code, 0)
  const out = JSON.parse(r.stdout)
  t.same(out.aplicadas, [], 'the service already applied everything')
  t.ok(out.total >= 3)
})
