// End to end: a real send delivered through the fake FCM closes with notification.completed; the devices' real
// receipts produce delivery.received and delivery.clicked; all three reach the webhook signed, in order.
import t from 'tap'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'

t.test('send → notification.completed; receipts → delivery.received before delivery.clicked', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const d = await startDelivery(t, {
    // The pro plan: a free-plan app gets no delivery.received (src/apps/plan.ts).
    env: { PM_LIMIT_IP_PER_MIN: '0', PM_WEBHOOK_ALLOW_PRIVATE: '1', PM_DEFAULT_PLAN: 'pro' },
    service: { webhookCa: testCa(), webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 2_000 } },
  })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const a = await d.device(app, 'wh-a')
  const b = await d.device(app, 'wh-b')
  const put = await d.s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url('/e2e'), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  t.equal(put.status, 200, put.text)
  rx.secret('/e2e', put.json.segredo)
  rx.script('/e2e', [{ status: 502 }]) // the first attempt fails: order must survive it

  const sendId = await d.send(app, { include_player_ids: [a, b] })
  await d.closed(sendId)
  const rcpt = (token: string) => d.fcm.delivered.find((r) => r.target === token)?.body.message.data.pm_rcpt
  const receipt = (player: string, token: string, evento: string) =>
    d.s.call('POST', '/api/v1/receipts', {
      body: { app_id: app.id, notification_id: sendId, player_id: player, rcpt: rcpt(token), evento },
    })
  t.equal((await receipt(a, 'wh-a', 'recebido')).status, 200)
  t.equal((await receipt(a, 'wh-a', 'clique')).status, 200)
  t.equal((await receipt(b, 'wh-b', 'clique')).status, 200, 'a click without a receipt counts as both')
  t.equal((await receipt(a, 'wh-a', 'recebido')).json.duplicado, true, 'a duplicate writes no event')

  const got = (await rx.waitFor(6, '/e2e', 20_000)).filter((r) => r.status === 200)
  t.ok(got.every((r) => r.signed))
  t.same(
    got.map((r) => [r.json.evento, r.json.player_id ?? null]),
    [
      ['notification.completed', null],
      ['delivery.received', a],
      ['delivery.clicked', a],
      ['delivery.received', b],
      ['delivery.clicked', b],
    ],
  )
  t.ok(got.every((r) => r.json.notification_id === sendId && r.json.app_id === app.id && r.json.canal === 'webhook'))
  t.equal(got[0]?.json.successful, 2)
  t.equal(got[0]?.json.recipients, 2)
  const ids = got.map((r) => Number(r.headers['x-pm-evento-id']))
  t.same(
    ids,
    [...ids].sort((x, y) => x - y),
    'in event order',
  )
  // A fixed pause on purpose: the assertion is that nothing more is delivered during it.
  await new Promise((r) => setTimeout(r, 200))
  t.equal(rx.on('/e2e').filter((r) => r.status === 200).length, 5, 'nothing more')
})
