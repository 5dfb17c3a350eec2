// PM_PROVIDER_HTTP2 through the real service: with `node`, the worker's providers run on node:http2 behind the pool's
// interface and a send reaches an Android and an iOS device exactly as on our client (the default); nothing else in
// the configuration changes.
import t from 'tap'
import { startDelivery } from '../helpers/delivery'

for (const client of [undefined, 'node'] as const) {
  t.test(`PM_PROVIDER_HTTP2=${client ?? '(unset)'}: the worker's client, and a send through it`, async (t) => {
    const d = await startDelivery(t, { env: client ? { PM_PROVIDER_HTTP2: client } : {} })
    t.equal(d.s.svc.delivery?.pool.client, client ?? 'pombo', 'the pool runs the chosen client')
    const app = await d.s.createApp()
    await d.fcmFor(app)
    await d.apnsFor(app)
    const android = await d.device(app, `h2-android-${client}`, { device_type: 1 })
    const ios = await d.device(app, `h2-ios-${client}`, { device_type: 0, transporte: 'apns' })
    const sendId = await d.send(app, { include_player_ids: [android, ios], contents: { en: 'Hello' } })
    await d.fcm.waitForDelivered(1)
    await d.apns.waitForDelivered(1)
    t.equal(d.fcm.delivered.find((r) => r.target === `h2-android-${client}`)?.body.message.data.pm_msg_id, sendId)
    t.equal(d.apns.delivered.find((r) => r.token === `h2-ios-${client}`)?.body.pm_msg_id, sendId)
    t.match(await d.closed(sendId), { successful: 2, failed: 0, errored: 0 })
  })
}
