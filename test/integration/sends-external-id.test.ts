// A send's `external_id` is "echoed in response" (the spec, Notification): the last key of each of the four 200
// shapes of POST /api/v1/notifications when the request had one, no key when it did not; the read shape (one send
// and the list) carries the stored value, null when none was sent (docs/decisions.md). Answers conform to
// docs/openapi.yaml.
import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { OpenApiChecker } from '../helpers/openapi'
import { type Answer, basic, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const checker = new OpenApiChecker()

async function device(s: TestService, app: App, identifier: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })
  if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
  return r.json.id
}

async function post(t: Test, s: TestService, app: App, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const a = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'oi' }, ...body },
    headers: { ...basic(app.api_key), ...headers },
  })
  t.equal(a.status, 200, a.status === 200 ? 'status 200' : a.text)
  t.same(checker.problems('POST', '/api/v1/notifications', a), [], 'the answer conforms to docs/openapi.yaml')
  return a
}

async function read(t: Test, s: TestService, app: App, path: string): Promise<Answer> {
  const a = await s.call('GET', `${path}${path.includes('?') ? '&' : '?'}app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(a.status, 200, a.status === 200 ? 'status 200' : a.text)
  t.same(checker.problems('GET', path.split('?')[0] as string, a), [], `GET ${path} conforms to docs/openapi.yaml`)
  return a
}

const lastKey = (o: Record<string, unknown>): string | undefined => Object.keys(o).at(-1)

t.test('the four 200 shapes end with the external_id the request had, and have none without it', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const p = await device(s, app, 'ext-a')

  const normal = await post(t, s, app, { include_player_ids: [p], external_id: 'campanha-natal-2026' })
  t.same(Object.keys(normal.json), ['id', 'recipients', 'external_id'], 'normal')
  t.equal(normal.json.external_id, 'campanha-natal-2026')

  const partial = await post(t, s, app, { include_player_ids: [p, randomUUID(), 'nope'], external_id: 'parcial' })
  t.same(Object.keys(partial.json), ['id', 'recipients', 'errors', 'external_id'], 'partial')
  t.equal(partial.json.external_id, 'parcial')

  const nobody = await post(t, s, app, { include_external_user_ids: ['ninguem'], external_id: 'ninguém 🐦' })
  t.same(nobody.json, { id: '', recipients: 0, errors: nobody.json.errors, external_id: 'ninguém 🐦' }, 'nobody reachable')
  t.equal(lastKey(nobody.json), 'external_id')

  const dry = await post(t, s, app, { include_player_ids: [p], external_id: 'ensaio' }, { 'x-dry-run': 'true' })
  t.same(dry.json, { id: '', recipients: 1, dry_run: true, external_id: 'ensaio' }, 'dry run')
  t.equal(lastKey(dry.json), 'external_id')

  const plain = await post(t, s, app, { include_player_ids: [p] })
  t.same(Object.keys(plain.json), ['id', 'recipients'], 'no external_id sent: no key')
  const nulled = await post(t, s, app, { include_player_ids: [p], external_id: null })
  t.same(Object.keys(nulled.json), ['id', 'recipients'], 'external_id null is no external_id')
  const plainDry = await post(t, s, app, { include_player_ids: [p] }, { 'x-dry-run': 'true' })
  t.same(plainDry.json, { id: '', recipients: 1, dry_run: true })
})

t.test('an idempotent repeat answers the same bytes, echo included', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const p = await device(s, app, 'ext-b')
  const body = { include_player_ids: [p], external_id: `pedido-${randomUUID()}` } // the key, as no other is given
  const first = await post(t, s, app, body)
  t.equal(first.json.external_id, body.external_id)
  const again = await post(t, s, app, body)
  t.equal(again.headers.get('x-idempotent-replay'), 'true')
  t.equal(again.text, first.text, 'byte for byte')

  const headerKey = { 'idempotency-key': `k-${randomUUID()}` }
  const keyed = await post(t, s, app, { include_player_ids: [p], external_id: 'com-chave' }, headerKey)
  const keyedAgain = await post(t, s, app, { include_player_ids: [p], external_id: 'com-chave' }, headerKey)
  t.equal(keyedAgain.headers.get('x-idempotent-replay'), 'true')
  t.equal(keyedAgain.text, keyed.text)
  t.equal(keyedAgain.json.external_id, 'com-chave')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM sends WHERE app_id = $1', [app.id]))[0]?.n, 2, 'nothing sent again')
})

t.test('the read shape carries the stored external_id, null when none was sent', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const p = await device(s, app, 'ext-c')
  const given = 'ação, "aspas" e 🐦'
  const withId = (await post(t, s, app, { include_player_ids: [p], external_id: given })).json.id
  const without = (await post(t, s, app, { include_player_ids: [p], name: 'sem external_id' })).json.id

  const one = await read(t, s, app, `/api/v1/notifications/${withId}`)
  t.equal(one.json.external_id, given)
  const other = await read(t, s, app, `/api/v1/notifications/${without}`)
  t.ok(Object.hasOwn(other.json, 'external_id'), 'the key is always there')
  t.equal(other.json.external_id, null)

  const list = await read(t, s, app, '/api/v1/notifications?limit=10')
  const byId = new Map((list.json as Array<{ id: string; external_id: string | null }>).map((x) => [x.id, x.external_id]))
  t.equal(byId.get(withId), given)
  t.equal(byId.get(without), null)
})
