import t from 'tap'
import { sha256 } from '../../src/apps/key-format'
import { receiptKeyAad } from '../../src/apps/service'
import { Vault } from '../../src/core/vault'
import { FakeClock, PLATFORM_KEY, startService, VAULT_KEY } from '../helpers/service'

const platform = { authorization: `Bearer ${PLATFORM_KEY}` }
const ISO_OFFSET = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/

t.test('POST /api/v1/apps creates an app: 201 with exactly the spec fields', async (t) => {
  const s = await startService(t)
  const r = await s.call('POST', '/api/v1/apps', { body: { nome: '  Loja  ' }, headers: platform })
  t.equal(r.status, 201)
  t.same(Object.keys(r.json).sort(), ['api_key', 'criado_em', 'id', 'kid', 'nome', 'rate_por_min', 'receipt_key'])
  t.match(r.json.id, /^[0-9a-f-]{36}$/)
  t.equal(r.json.nome, 'Loja', 'trimmed')
  t.equal(r.json.rate_por_min, 60000, 'default pace')
  t.match(r.json.api_key, /^pm_live_[a-z0-9]{8}_[A-Za-z0-9]{43}$/)
  t.equal(r.json.kid, r.json.api_key.slice(8, 16))
  t.match(r.json.receipt_key, /^[0-9a-f]{64}$/)
  t.match(r.json.criado_em, ISO_OFFSET)
  t.ok(r.headers.get('x-pm-request-id'))

  const sb = await s.call('POST', '/api/v1/apps', {
    body: { nome: 'Teste', sandbox: true, rate_por_min: 600 },
    headers: platform,
  })
  t.equal(sb.status, 201)
  t.match(sb.json.api_key, /^pm_test_/)
  t.equal(sb.json.rate_por_min, 600)
})

t.test('only the sha256 of the key is stored; the receipt key is sealed with the vault', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const [key] = await s.sql('SELECT key_hash, sandbox, expires_at FROM app_keys WHERE kid = $1', [app.kid])
  t.same(key?.key_hash, sha256(app.api_key))
  const [row] = await s.sql('SELECT receipt_key_enc FROM apps WHERE id = $1', [app.id])
  t.equal(new Vault(Buffer.from(VAULT_KEY, 'hex')).open(row?.receipt_key_enc, receiptKeyAad(app.id)).toString(), app.receipt_key)
  const dump = JSON.stringify(await s.sql('SELECT a.*, k.* FROM apps a JOIN app_keys k ON k.app_id = a.id'))
  t.notOk(dump.includes(app.api_key), 'the key text is nowhere in the database')
  t.notOk(dump.includes(app.api_key.slice(17)), 'nor its secret part')
  t.notOk(dump.includes(app.receipt_key), 'nor the receipt key')
  const [org] = await s.sql('SELECT o.plan FROM orgs o JOIN apps a ON a.org_id = o.id WHERE a.id = $1', [app.id])
  t.equal(org?.plan, 'free', 'each app belongs to an organisation on the default plan')
})

t.test('the platform credential is checked before the body', async (t) => {
  const s = await startService(t)
  const attempts: Array<Record<string, string>> = [
    {},
    { authorization: 'Bearer wrong' },
    { authorization: `Basic ${PLATFORM_KEY}` },
  ]
  for (const headers of attempts) {
    const r = await s.call('POST', '/api/v1/apps', { raw: '{broken', headers })
    t.equal(r.status, 401, JSON.stringify(headers))
    t.ok(r.json.errors[0])
  }
  const ok = await s.call('POST', '/api/v1/apps', { raw: '{broken', headers: platform })
  t.equal(ok.status, 400, 'with the credential the broken JSON is the problem')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0, 'nothing written')
})

t.test('rejected attempts are audited without the attempted key', async (t) => {
  const s = await startService(t)
  const attempted = 'pm_live_abcd1234_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
  await s.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: { authorization: `Bearer ${attempted}` } })
  await s.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: { authorization: 'Bearer not-even-a-key' } })
  const audit = s.logs.filter((l) => l.evento === 'auth_rejeitada')
  t.equal(audit.length, 2)
  t.equal(audit[0]?.kid, 'abcd1234', 'at most the kid')
  t.equal(audit[1]?.kid, undefined)
  const all = JSON.stringify(s.logs)
  t.notOk(all.includes('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'))
  t.notOk(all.includes('not-even-a-key'))
  t.equal(audit[0]?.rota, 'POST /api/v1/apps')
  t.equal(audit[0]?.ip, '127.0.0.1')
})

t.test('400s of app creation name the field and write nothing', async (t) => {
  const s = await startService(t)
  const cases: Array<[unknown, string]> = [
    [{}, 'nome'],
    [{ nome: '' }, 'nome'],
    [{ nome: '   ' }, 'nome'],
    [{ nome: 7 }, 'nome'],
    [{ nome: 'a', rate_por_min: 0 }, 'rate_por_min'],
    [{ nome: 'a', rate_por_min: -5 }, 'rate_por_min'],
    [{ nome: 'a', rate_por_min: 1.5 }, 'rate_por_min'],
    [{ nome: 'a', rate_por_min: '60' }, 'rate_por_min'],
    [{ nome: 'a', sandbox: 'sim' }, 'sandbox'],
  ]
  for (const [body, campo] of cases) {
    const r = await s.call('POST', '/api/v1/apps', { body, headers: platform })
    t.equal(r.status, 400, JSON.stringify(body))
    t.equal(r.json.explain.campo, campo)
    t.match(r.json.errors[0], campo)
  }
  for (const raw of ['{"nome":', '[1,2]', 'null', '"x"']) {
    const r = await s.call('POST', '/api/v1/apps', { raw, headers: platform })
    t.equal(r.status, 400, raw)
    t.equal(r.json.explain.request_id, r.headers.get('x-pm-request-id'))
  }
  t.equal((await s.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0)
})

t.test('503 when the platform key or the vault is not configured', async (t) => {
  const noPlatform = await startService(t, { env: { PM_PLATFORM_KEY: '' } })
  const a = await noPlatform.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: platform })
  t.equal(a.status, 503)
  t.equal(a.json.explain.dependencia, 'PM_PLATFORM_KEY')
  const r = await noPlatform.call('POST', '/api/v1/apps/00000000-0000-4000-8000-000000000000/rotate_key', { headers: platform })
  t.equal(r.status, 503)

  const noVault = await startService(t, { env: { PM_VAULT_KEY: '' } })
  const b = await noVault.call('POST', '/api/v1/apps', { body: { nome: 'x' }, headers: platform })
  t.equal(b.status, 503)
  t.equal(b.json.explain.dependencia, 'PM_VAULT_KEY')
  t.equal((await noVault.sql('SELECT count(*)::int AS n FROM apps'))[0]?.n, 0)
})

t.test('rotate_key: new key, previous on the 24 h clock, environment kept unless asked', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const r = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: platform })
  t.equal(r.status, 200)
  t.same(Object.keys(r.json).sort(), ['anterior_expira_em', 'api_key', 'id', 'kid'])
  t.equal(r.json.id, app.id)
  t.match(r.json.api_key, /^pm_live_/)
  t.not(r.json.api_key, app.api_key)
  t.equal(Date.parse(r.json.anterior_expira_em), clock.ms + 24 * 3600_000)
  t.match(r.json.anterior_expira_em, ISO_OFFSET)

  const sb = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { body: { sandbox: true }, headers: platform })
  t.equal(sb.status, 200)
  t.match(sb.json.api_key, /^pm_test_/)
  const again = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: platform })
  t.match(again.json.api_key, /^pm_test_/, 'no body keeps the current environment')
  const keys = await s.sql('SELECT kid, expires_at FROM app_keys WHERE app_id = $1 ORDER BY created_at, kid', [app.id])
  t.equal(keys.length, 4)
  t.equal(keys.filter((k) => k.expires_at === null).length, 1, 'exactly one current key')
})

t.test('rotate_key: anterior_expira_em is null when there was no previous key', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  await s.svc.deps.apps.revokeKeys(app.id)
  const r = await s.call('POST', `/api/v1/apps/${app.id}/rotate_key`, { headers: platform })
  t.equal(r.status, 200)
  t.equal(r.json.anterior_expira_em, null)
})

t.test('rotate_key: malformed id is 400 outside the envelope; unknown app 404; 401 before anything', async (t) => {
  const s = await startService(t)
  const bad = await s.call('POST', '/api/v1/apps/not-a-uuid/rotate_key', { headers: platform })
  t.equal(bad.status, 400)
  t.equal(bad.json.errors, undefined, 'not the envelope')
  t.equal(bad.json.explain, undefined)
  t.ok(bad.headers.get('x-pm-request-id'), 'still carries the request id')
  const missing = await s.call('POST', '/api/v1/apps/00000000-0000-4000-8000-000000000000/rotate_key', { headers: platform })
  t.equal(missing.status, 404)
  t.ok(missing.json.errors[0])
  const noAuth = await s.call('POST', '/api/v1/apps/00000000-0000-4000-8000-000000000000/rotate_key')
  t.equal(noAuth.status, 401)
  const brokenBody = await s.call('POST', '/api/v1/apps/00000000-0000-4000-8000-000000000000/rotate_key', {
    raw: '{x',
    headers: platform,
  })
  t.equal(brokenBody.status, 400)
})

t.test('firebase_params: public, null until configured, 404 unknown, 403 paused', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const r = await s.call('GET', `/api/v1/apps/${app.id}/firebase_params`)
  t.equal(r.status, 200)
  t.same(r.json, { android: null, ios: null })

  const params = { project_id: 'p', sender_id: '123', app_id: '1:123:android:abc', api_key: 'AIza', package_name: 'com.x' }
  await s.sql('UPDATE apps SET firebase_params = $2 WHERE id = $1', [app.id, params])
  await s.svc.deps.dir.invalidate(app.id)
  t.same((await s.call('GET', `/api/v1/apps/${app.id}/firebase_params`)).json, { android: params, ios: null })

  const unknown = await s.call('GET', '/api/v1/apps/00000000-0000-4000-8000-000000000000/firebase_params')
  t.equal(unknown.status, 404)
  t.ok(unknown.json.explain.request_id)
  const bad = await s.call('GET', '/api/v1/apps/123/firebase_params')
  t.equal(bad.status, 400)
  t.equal(bad.json.errors, undefined)

  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await s.call('GET', `/api/v1/apps/${app.id}/firebase_params`)).status, 403)
  await s.svc.deps.apps.setPaused(app.id, false)
  t.equal((await s.call('GET', `/api/v1/apps/${app.id}/firebase_params`)).status, 200)
})

t.test('firebase_params: fixed 60-second window per IP, 429 with Retry-After: 60', async (t) => {
  const clock = new FakeClock(Math.floor(Date.now() / 60_000) * 60_000 + 500)
  const s = await startService(t, { clock, limits: { ipPerMin: 3 } })
  const app = await s.createApp()
  const path = `/api/v1/apps/${app.id}/firebase_params`
  for (let i = 0; i < 3; i++) t.equal((await s.call('GET', path)).status, 200)
  const limited = await s.call('GET', path)
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('retry-after'), '60')
  t.ok(limited.json.errors[0])
  clock.advance(59_000)
  t.equal((await s.call('GET', path)).status, 429, 'same window')
  clock.advance(1_000)
  t.equal((await s.call('GET', path)).status, 200, 'a fixed window: the next minute starts afresh')
})
