// End to end: register, send, and read from the fake providers exactly what each device got.
import t from 'tap'
import { proof } from '../../src/message/proof'
import { startDelivery } from '../helpers/delivery'

t.test('Android, web and iOS devices each get the message through their provider; counters close the send', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  await d.apnsFor(app)
  const android = await d.device(app, 'fcm-android-1', { device_type: 1 })
  const android2 = await d.device(app, 'fcm-android-"2"', { device_type: 1 })
  const web = await d.device(app, 'fcm-web-1', { device_type: 5 })
  const ios = await d.device(app, 'apns-ios-1', { device_type: 0, transporte: 'apns' })
  const sendId = await d.send(app, {
    include_player_ids: [android, android2, web, ios],
    contents: { pt: 'Olá', en: 'Hello', de: 'Hallo' },
    headings: { pt: 'Título', es: 'Título ES' },
    data: { n: 1, obj: { a: true }, s: 'x' },
    url: 'https://exemplo.com/p',
  })
  await d.fcm.waitForDelivered(3)
  await d.apns.waitForDelivered(1)
  const key = Buffer.from(app.receipt_key, 'hex')

  const a = d.fcm.delivered.find((r) => r.target === 'fcm-android-1')?.body.message
  t.ok(a, 'the Android device was sent to')
  t.equal(a.data.pm_msg_id, sendId)
  t.equal(a.data.pm_rcpt, proof(key, sendId, android), 'a proof that verifies with the app receipt key')
  t.equal(a.data.pm_rcpt.length, 32)
  t.ok(
    Object.values(a.data).every((v) => typeof v === 'string'),
    'data values travel as strings',
  )
  t.equal(a.data.n, '1')
  t.equal(a.data.pm_url, 'https://exemplo.com/p')
  t.equal(a.data.pmx_body, 'Hello', 'en wins')
  t.notOk('notification' in a.android, 'data-only: the SDK draws it and sends the receipt')

  // Bodies of one send share a serialised template: each still carries its own token (escaped) and proof.
  const a2 = d.fcm.delivered.find((r) => r.target === 'fcm-android-"2"')?.body.message
  t.equal(a2?.token, 'fcm-android-"2"')
  t.equal(a2?.data.pm_rcpt, proof(key, sendId, android2))
  t.same(
    { ...a2, token: undefined, data: { ...a2?.data, pm_rcpt: undefined } },
    { ...a, token: undefined, data: { ...a.data, pm_rcpt: undefined } },
  )

  const w = d.fcm.delivered.find((r) => r.target === 'fcm-web-1')?.body.message
  t.ok(w?.webpush, 'web push goes in the webpush block')
  t.equal(w.data.pm_rcpt, proof(key, sendId, web))

  const i = d.apns.delivered.find((r) => r.token === 'apns-ios-1')
  t.ok(i, 'the iOS device was sent to through APNs')
  t.equal(i?.headers['apns-topic'], 'com.pombo.demo')
  t.equal(i?.body.pm_msg_id, sendId)
  t.equal(i?.body.pm_rcpt, proof(key, sendId, ios))
  t.equal(i?.body.aps.alert.body, 'Hello')

  const row = await d.closed(sendId)
  t.equal(row.successful, 4)
  t.equal(row.failed, 0)
  t.equal(row.errored, 0)
  t.equal(row.android_successful, 3)
  t.equal(row.ios_successful, 1)
  const read = await d.s.call('GET', `/api/v1/notifications/${sendId}?app_id=${app.id}`, {
    headers: { authorization: `Basic ${app.api_key}` },
  })
  t.equal(read.json.remaining, 0)
  t.ok(read.json.completed_at)
  t.ok(read.json.pm_metricas.duracao_ms >= 0)
})

t.test('dead tokens fail and leave every audience; re-registration revives them', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('dead-1', 'unregistered')
  const dead = await d.device(app, 'dead-1')
  const ok = await d.device(app, 'ok-1')
  const row = await d.closed(await d.send(app, { include_player_ids: [dead, ok] }))
  t.equal(row.successful, 1)
  t.equal(row.failed, 1)
  const [dev] = await d.s.sql('SELECT invalid_identifier FROM devices WHERE id = $1', [dead])
  t.equal(dev?.invalid_identifier, true)
  const again = await d.s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'x' }, include_player_ids: [dead] },
    headers: { authorization: `Basic ${app.api_key}` },
  })
  t.equal(again.json.id, '', 'a dead device is in no audience')
  await d.device(app, 'dead-1')
  t.equal((await d.s.sql('SELECT invalid_identifier FROM devices WHERE id = $1', [dead]))[0]?.invalid_identifier, false)
})

t.test('transient failures are retried, three attempts in all, then errored', async (t) => {
  const d = await startDelivery(t, { env: {} })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('flaky', 'unavailable, ok')
  d.fcm.script('broken', 'internal')
  const flaky = await d.device(app, 'flaky')
  const broken = await d.device(app, 'broken')
  const row = await d.closed(await d.send(app, { include_player_ids: [flaky, broken] }), 20_000)
  t.equal(row.successful, 1, 'recovered on the second attempt')
  t.equal(row.errored, 1, 'three attempts exhausted')
  t.equal(d.fcm.requests.filter((r) => r.target === 'broken').length, 3)
})

t.test('PM_DELIVERY_MAX_ATTEMPTS moves the number of attempts', async (t) => {
  const d = await startDelivery(t, { env: { PM_DELIVERY_MAX_ATTEMPTS: '2', PM_DELIVERY_RETRY_MS: '50' } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('flaky', 'unavailable, unavailable, ok')
  d.fcm.script('broken', 'internal')
  const flaky = await d.device(app, 'flaky')
  const broken = await d.device(app, 'broken')
  const row = await d.closed(await d.send(app, { include_player_ids: [flaky, broken] }), 20_000)
  t.equal(row.successful, 0, 'a third attempt would have succeeded; there is none')
  t.equal(row.errored, 2)
  t.equal(d.fcm.requests.filter((r) => r.target === 'broken').length, 2)
  t.equal(d.fcm.requests.filter((r) => r.target === 'flaky').length, 2)
})

t.test('no credential: the send still closes, successful 0, remaining 0, and says why', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  const a = await d.device(app, 'no-cred')
  const row = await d.closed(await d.send(app, { include_player_ids: [a] }))
  t.equal(row.successful, 0)
  t.equal(row.remaining, 0)
  t.match(String(row.problem), /credencial_ausente:fcm/)
  t.equal(d.fcm.requests.length, 0)
})

t.test('notification.completed is written with the closing, when the app reads by webhook', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  await d.s.sql("UPDATE apps SET confirm_mode = 'webhook'")
  const a = await d.device(app, 'ev-1')
  const sendId = await d.send(app, { include_player_ids: [a] })
  await d.closed(sendId)
  const events = await d.s.sql("SELECT evento, body FROM events WHERE evento = 'notification.completed'")
  t.equal(events.length, 1)
  t.same(
    { ...events[0]?.body, quando: undefined },
    {
      evento: 'notification.completed',
      app_id: app.id,
      notification_id: sendId,
      successful: 1,
      failed: 0,
      errored: 0,
      recipients: 1,
      quando: undefined,
      canal: 'webhook',
    },
  )
})

t.test('a segment is expanded in pages and delivered; recipients become exact at the end', async (t) => {
  const d = await startDelivery(t, { env: { PM_DELIVERY_PAGE: '7' } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  for (let i = 0; i < 30; i++) await d.device(app, `seg-${i}`)
  await d.device(app, 'test:sandbox-seg')
  const sendId = await d.send(app, { included_segments: ['Subscribed Users'] })
  const row = await d.closed(sendId)
  t.equal(row.recipients, 30)
  t.equal(row.successful, 30)
  t.equal(new Set(d.fcm.delivered.map((r) => r.target)).size, 30, 'each device once')
})

t.test('every device carries its own proof, computed ahead in batches across pages and retries', async (t) => {
  // 151 registrations from one address: the per-IP limit is not what this test is about.
  const d = await startDelivery(t, { env: { PM_DELIVERY_PAGE: '40', PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('proof-flaky', 'unavailable, ok')
  const ids = new Map<string, string>() // token → device id
  for (let i = 0; i < 150; i++) ids.set(`proof-${i}`, await d.device(app, `proof-${i}`))
  ids.set('proof-flaky', await d.device(app, 'proof-flaky'))
  const sendId = await d.send(app, { include_player_ids: [...ids.values()] })
  const row = await d.closed(sendId, 20_000)
  t.equal(row.successful, 151)
  const key = Buffer.from(app.receipt_key, 'hex')
  const attempts = d.fcm.requests.filter((r) => r.body?.message?.data?.pm_msg_id === sendId)
  t.equal(attempts.length, 152, 'one attempt a device, two for the flaky one')
  const wrong = attempts.filter((r) => r.body.message.data.pm_rcpt !== proof(key, sendId, ids.get(r.target as string) as string))
  t.same(
    wrong.map((r) => r.target),
    [],
    'each attempt carries the proof of its own device, the retry included',
  )
})

t.test('single-device sends proven together still carry each its own send and device', async (t) => {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const devices = new Map<string, string>() // token → device id
  for (let i = 0; i < 40; i++) devices.set(`one-${i}`, await d.device(app, `one-${i}`))
  // Posted together, so the worker takes many of them in one batch and their actor proves them ahead together.
  const sends = await Promise.all([...devices.values()].map((id) => d.send(app, { include_player_ids: [id] })))
  for (const id of sends) await d.closed(id, 20_000)
  const key = Buffer.from(app.receipt_key, 'hex')
  const got = d.fcm.delivered.filter((r) => sends.includes(r.body?.message?.data?.pm_msg_id))
  t.equal(got.length, 40)
  const wrong = got.filter(
    (r) => r.body.message.data.pm_rcpt !== proof(key, r.body.message.data.pm_msg_id, devices.get(r.target as string) as string),
  )
  t.same(
    wrong.map((r) => r.target),
    [],
    'each message carries the proof of its own send and device',
  )
})
