import t from 'tap'
import { startService } from '../helpers/service'

t.test('GET / answers servico, versao and git without a credential', async (t) => {
  const s = await startService(t)
  const r = await s.call('GET', '/')
  t.equal(r.status, 200)
  t.same(Object.keys(r.json).sort(), ['git', 'servico', 'versao'])
  t.equal(r.json.servico, 'pombo')
  t.match(r.json.versao, /^\d+\.\d+\.\d+/)
  t.equal(r.json.git, 'test-commit')
  t.match(r.headers.get('x-pm-request-id'), /^[0-9a-f-]{36}$/)
})

t.test('every answer carries its own X-Pm-Request-Id, errors repeat it in explain', async (t) => {
  const s = await startService(t)
  const a = await s.call('GET', '/')
  const b = await s.call('GET', '/')
  t.not(a.headers.get('x-pm-request-id'), b.headers.get('x-pm-request-id'))
  const nf = await s.call('GET', '/api/v1/nada')
  t.equal(nf.status, 404)
  t.ok(Array.isArray(nf.json.errors) && typeof nf.json.errors[0] === 'string')
  t.equal(nf.json.explain.request_id, nf.headers.get('x-pm-request-id'))
  t.type(nf.json.explain.causa, 'string')
  t.type(nf.json.explain.como_corrigir, 'string')
})
