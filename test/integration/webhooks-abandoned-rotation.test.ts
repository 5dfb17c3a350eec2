// An event abandoned before the app's webhook URL or secret changed stays the app's (the spec, Events: given-up
// events are auditable, never silently discarded): the dashboard lists it and replays it, and the new destination,
// which took the queue over, delivers it with its original body, signed with the new secret. Found by the webhook
// model (test/integration/webhooks-model.test.ts): abandon, rotate the secret, replay answered 404.
import t from 'tap'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { basic, startService } from '../helpers/service'
import { until } from '../helpers/until'

t.test('an event abandoned by an earlier destination is listed and replayed to the current one', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const s = await startService(t, {
    roles: ['api', 'dashboard'],
    dispatcher: true,
    webhookCa: testCa(),
    env: { PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    webhook: { pollMs: 20, retryDelaysMs: [20], timeoutMs: 2_000, maxAttempts: 2 },
  })
  const org = await makeOrg(s, 'Loja', 'pro')
  await makePerson(s, 'ana@example.com', 'uma-senha-bem-longa', org)
  const app = await s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', 'uma-senha-bem-longa')).status, 303)
  const appPath = `/apps/${app.id}`

  const first = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url('/old'), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  t.equal(first.status, 200, first.text)
  rx.secret('/old', first.json.segredo)
  rx.fallback('/old', { status: 500 })
  const body = {
    evento: 'delivery.received',
    app_id: app.id,
    notification_id: app.id,
    player_id: app.id,
    quando: '2026-11-27T12:00:00.000+00:00',
    canal: 'webhook',
  }
  const [ev] = await s.sql<{ seq: string }>(
    "INSERT INTO events (app_id, evento, body, created_at) VALUES ($1, 'delivery.received', $2, now()) RETURNING seq",
    [app.id, body],
  )
  const seq = ev?.seq as string
  await until(
    'the event abandoned',
    async () => (await s.sql('SELECT 1 FROM webhook_abandoned WHERE event_seq = $1', [seq])).length === 1,
  )

  // The secret rotated (the same URL registered again would do as well): a new destination.
  const second = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url('/new') },
    headers: basic(app.api_key),
  })
  t.equal(second.status, 200, second.text)
  rx.secret('/new', second.json.segredo)

  const page = await c.get(appPath)
  t.match(page.text, /Eventos abandonados/)
  t.match(page.text, new RegExp(`name="seq" value="${seq}"`), 'the abandoned event is listed with its replay button')
  const replay = await c.submit(appPath, `${appPath}/webhook/reenviar`, { seq })
  t.equal(replay.status, 303, 'replayed')
  const [got] = await rx.waitFor(1, '/new')
  t.same(got?.json, body, 'the original body')
  t.ok(got?.signed, 'signed with the new secret')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM webhook_abandoned')).at(0)?.n, 0)
  t.equal((await c.submit(appPath, `${appPath}/webhook/reenviar`, { seq })).status, 404, 'a replay is not doubled')
})
