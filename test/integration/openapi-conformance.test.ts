// The service's real answers conform to docs/openapi.yaml: every route is exercised (success and the usual
// errors) through the real HTTP server, and each answer's status, headers and body are validated against the
// document. Every documented operation must have answered a documented success here, and every route the API
// registers must be documented, so the document cannot drift from the code in either direction.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { loadOpenApi } from '../../src/http/openapi'
import { CARD } from '../helpers/inapp'
import { OpenApiChecker } from '../helpers/openapi'
import { deliveredSend } from '../helpers/receipts'
import { type Answer, basic, type CallOptions, PLATFORM_KEY } from '../helpers/service'

t.test('every route answers as docs/openapi.yaml says', async (t) => {
  const checker = new OpenApiChecker()
  const r = await deliveredSend(t, { devices: 2 })
  const { s, app, players, sendId } = r
  const key = basic(app.api_key)
  const platform = { authorization: `Bearer ${PLATFORM_KEY}` }

  async function check(method: string, path: string, expect: number, o: CallOptions = {}): Promise<Answer> {
    const a = await s.call(method, path, o)
    t.equal(a.status, expect, `${method} ${path} → ${expect} (${a.text.slice(0, 300)})`)
    t.same(checker.problems(method, path, a), [], `${method} ${path} ${a.status} conforms`)
    return a
  }

  // Service
  await check('GET', '/', 200)
  const served = await check('GET', '/api/v1/openapi.json', 200)
  t.same(served.json, JSON.parse(JSON.stringify(loadOpenApi())), 'the served document is docs/openapi.yaml')

  // Apps (operator) and firebase_params
  const created = await check('POST', '/api/v1/apps', 201, { body: { nome: 'Outro app', sandbox: true }, headers: platform })
  const other = created.json as { id: string; api_key: string }
  await check('POST', '/api/v1/apps', 401, { body: { nome: 'x' } })
  await check('POST', '/api/v1/apps', 400, { body: { nome: '' }, headers: platform })
  await check('POST', `/api/v1/apps/${other.id}/rotate_key`, 200, { headers: platform })
  await check('POST', '/api/v1/apps/not-a-uuid/rotate_key', 400, { headers: platform })
  await check('POST', `/api/v1/apps/${randomUUID()}/rotate_key`, 404, { headers: platform })
  await check('GET', `/api/v1/apps/${app.id}/firebase_params`, 200)
  await check('GET', `/api/v1/apps/${randomUUID()}/firebase_params`, 404)
  await check('GET', '/api/v1/apps/zz/firebase_params', 400)

  // Devices
  const reg = await check('POST', '/api/v1/players', 200, {
    body: { app_id: app.id, device_type: 0, identifier: `ios-${randomUUID()}`, transporte: 'apns', tags: { a: '1' } },
  })
  const iosPlayer = reg.json.id as string
  await check('POST', '/api/v1/players', 400, { body: { app_id: app.id, device_type: 3, identifier: 'x' } })
  await check('PUT', `/api/v1/players/${iosPlayer}`, 200, { body: { app_id: app.id, external_user_id: 'user-1' } })
  await check('PUT', `/api/v1/players/${randomUUID()}`, 404, { body: { app_id: app.id } })
  await check('GET', `/api/v1/players/${iosPlayer}?app_id=${app.id}`, 200, { headers: key })
  await check('GET', `/api/v1/players/${iosPlayer}?app_id=${app.id}`, 401)
  await check('GET', `/api/v1/players/${randomUUID()}?app_id=${app.id}`, 404, { headers: key })
  const exp = await check('POST', `/api/v1/players/csv_export?app_id=${app.id}`, 200, { headers: key })
  const file = new URL(exp.json.csv_file_url as string).pathname
  for (let i = 0; ; i++) {
    const a = await s.call('GET', file)
    if (a.status === 200) {
      t.same(checker.problems('GET', file, a), [], 'the export file conforms')
      break
    }
    if (i > 200) throw new Error(`export never became ready: ${a.status}`)
    await new Promise((res) => setTimeout(res, 50))
  }
  await check('GET', `/api/v1/exports/${'0'.repeat(64)}.csv.gz`, 404)

  // Sends: the four 200 shapes and the usual refusals
  const send = (body: Record<string, unknown>, headers: Record<string, string> = {}) => ({
    body: { app_id: app.id, contents: { en: 'Hi' }, ...body },
    headers: { ...key, ...headers },
  })
  const normal = await check('POST', '/api/v1/notifications', 200, send({ include_player_ids: [players[0]] }))
  t.equal(normal.headers.get('x-pm-lane'), '0')
  await check('POST', '/api/v1/notifications', 200, send({ include_player_ids: [players[0], randomUUID(), 'nope'] }))
  await check('POST', '/api/v1/notifications', 200, send({ include_external_user_ids: ['nobody-here'] }))
  await check('POST', '/api/v1/notifications', 200, send({ included_segments: ['Subscribed Users'] }, { 'x-dry-run': 'true' }))
  const idem = send({ include_player_ids: [players[1]] }, { 'idempotency-key': `k-${randomUUID()}` })
  await check('POST', '/api/v1/notifications', 200, idem)
  const replay = await check('POST', '/api/v1/notifications', 200, idem)
  t.equal(replay.headers.get('x-idempotent-replay'), 'true')
  await check('POST', '/api/v1/notifications', 400, send({}))
  await check('POST', '/api/v1/notifications', 422, send({ include_player_ids: [players[0]], data: { pm_x: '1' } }))
  await check('POST', '/api/v1/notifications', 401, {
    body: { app_id: app.id, contents: { en: 'x' }, include_player_ids: [players[0]] },
  })
  await check('GET', `/api/v1/notifications?app_id=${app.id}&limit=5`, 200, { headers: key })
  await check('GET', `/api/v1/notifications/${sendId}?app_id=${app.id}`, 200, { headers: key })
  await check('GET', `/api/v1/notifications/${randomUUID()}?app_id=${app.id}`, 404, { headers: key })
  const desde = new Date(Date.now() - 3600_000).toISOString()
  const ate = new Date(Date.now() + 3600_000).toISOString()
  await check('GET', `/api/v1/notifications/stats?app_id=${app.id}&desde=${desde}&ate=${ate}`, 200, { headers: key })
  await check('GET', `/api/v1/notifications/stats?app_id=${app.id}&desde=${ate}&ate=${desde}`, 400, { headers: key })

  // Receipts
  await check('POST', '/api/v1/receipts', 200, { body: r.body(players[0] as string) })
  await check('POST', '/api/v1/receipts', 200, { body: r.body(players[0] as string) })
  await check('POST', '/api/v1/receipts', 200, { body: r.body(players[1] as string, { evento: 'clique' }) })
  await check('POST', '/api/v1/receipts', 403, { body: { ...r.body(players[0] as string), rcpt: 'A'.repeat(32) } })
  await check('POST', '/api/v1/receipts', 400, { body: { app_id: app.id } })

  // Confirmations, on the second app (webhook mode closes the send reads)
  const okey = basic(other.api_key)
  await check('GET', `/api/v1/confirmacoes?app_id=${other.id}`, 200, { headers: okey })
  await check('PUT', '/api/v1/confirmacoes', 200, {
    body: { app_id: other.id, url: 'https://hooks.example.com/pombo' },
    headers: okey,
  })
  await check('PUT', '/api/v1/confirmacoes', 200, { body: { app_id: other.id, modo: 'webhook' }, headers: okey })
  await check('GET', `/api/v1/notifications?app_id=${other.id}`, 403, { headers: okey })
  await check('PUT', '/api/v1/confirmacoes', 400, { body: { app_id: other.id, url: 'http://plain.example.com' }, headers: okey })
  await check('PUT', '/api/v1/confirmacoes', 401, { body: { app_id: other.id, modo: 'consulta' }, headers: key })

  // In-app: configuration, a campaign's whole life, the device routes
  const base = '/api/v1/in_app_messages'
  await check('PUT', `${base}/config`, 200, { body: { app_id: app.id, inapp_ativo: true, inapp_cap_horas: 0 }, headers: key })
  await check('PUT', `${base}/config`, 422, { body: { app_id: app.id, inapp_cap_horas: 169 }, headers: key })
  const camp = await check('POST', base, 201, { body: { app_id: app.id, nome: 'Boas-vindas', conteudo: CARD }, headers: key })
  const cid = camp.json.id as string
  await check('POST', base, 422, { body: { app_id: app.id, conteudo: { en: {} } }, headers: key })
  await check('GET', `${base}?app_id=${app.id}&limit=5`, 200, { headers: key })
  await check('GET', `${base}/${cid}?app_id=${app.id}`, 200, { headers: key })
  await check('GET', `${base}/${randomUUID()}?app_id=${app.id}`, 404, { headers: key })
  await check('GET', `${base}/not-a-uuid?app_id=${app.id}`, 400, { headers: key })
  await check('PATCH', `${base}/${cid}`, 200, { body: { app_id: app.id, nome: 'Boas-vindas 2' }, headers: key })
  await check('GET', `${base}/${cid}/alcance?app_id=${app.id}`, 200, { headers: key })
  await check('POST', `${base}/${cid}/pausar?app_id=${app.id}`, 409, { headers: key })
  await check('POST', `${base}/${cid}/publicar?app_id=${app.id}`, 200, { headers: key })
  const device = await check('POST', '/api/v1/players', 200, {
    body: { app_id: app.id, device_type: 1, identifier: `inapp-${randomUUID()}`, sdk_versao: '0.6.0' },
  })
  const pending = `/api/v1/inapp/pending?app_id=${app.id}&player_id=${device.json.id}&schema=0.6`
  const pack = await check('GET', pending, 200)
  t.equal(pack.json.messages.length, 1, 'the published campaign is in the package')
  await check('GET', pending, 304, { headers: { 'if-none-match': pack.headers.get('etag') as string } })
  await check('GET', `/api/v1/inapp/pending?app_id=${app.id}&player_id=x`, 400)
  const prova = pack.json.messages[0].prova as string
  const evento = { campanha_id: cid, prova, evento: 'impressao', ocorrencia_n: 1, em: new Date().toISOString() }
  const ev = await check('POST', '/api/v1/inapp/eventos', 200, {
    body: { app_id: app.id, player_id: device.json.id, eventos: [evento] },
  })
  t.same(ev.json.resultados, ['aceito'])
  await check('POST', '/api/v1/inapp/eventos', 403, {
    body: { app_id: app.id, player_id: device.json.id, eventos: [{ ...evento, prova: 'x.AAAA' }] },
  })
  await check('POST', '/api/v1/inapp/eventos', 400, { body: { app_id: app.id, player_id: device.json.id, eventos: [] } })
  await check('GET', `${base}/${cid}/funil?app_id=${app.id}`, 200, { headers: key })
  await check('GET', `${base}/stats?app_id=${app.id}&desde=${desde}&ate=${ate}`, 200, { headers: key })
  await check('DELETE', `${base}/${cid}?app_id=${app.id}`, 409, { headers: key })
  await check('POST', `${base}/${cid}/pausar?app_id=${app.id}`, 200, { headers: key })
  await check('POST', `${base}/${cid}/encerrar?app_id=${app.id}`, 200, { headers: key })
  await check('PATCH', `${base}/${cid}`, 409, { body: { app_id: app.id, nome: 'x' }, headers: key })
  const dup = await check('POST', `${base}/${cid}/duplicar?app_id=${app.id}`, 201, { headers: key })
  await check('DELETE', `${base}/${dup.json.id}?app_id=${app.id}`, 200, { headers: key })
  await check('DELETE', `${base}/${dup.json.id}?app_id=${app.id}`, 404, { headers: key })

  // Unknown routes are outside the document (404 in the envelope), and nothing documented went unexercised.
  t.equal((await s.call('GET', '/api/v1/nothing-here')).status, 404)
  for (const op of checker.operations) {
    const ok = [...(checker.seen.get(op.key) ?? [])].some((status) => status < 400)
    t.ok(ok, `${op.key} answered a documented success`)
  }

  // Every route the API registers is documented (uWS `:name` and OpenAPI `{name}` compared by position).
  const shape = (p: string) => p.replace(/:[^/]+|\{[^}]+\}/g, '{}')
  const documented = new Set(checker.operations.map((o) => `${o.method} ${shape(o.template)}`))
  const registered = s.svc.api?.router.routes ?? []
  t.ok(registered.length >= 30, `${registered.length} routes registered`)
  for (const route of registered)
    t.ok(documented.has(`${route.method} ${shape(route.path)}`), `${route.method} ${route.path} is documented`)
})
