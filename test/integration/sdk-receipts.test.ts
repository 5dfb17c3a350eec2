// The device SDK against a real service: devices registered by Pombo.init, pushes delivered through the fake FCM and
// APNs, and the SDK turning what each device received into the display block and the receipts. `recebidos` and
// clicks are read back from the service and must be exact.
import { Pombo } from '@pombo/sdk'
import t from 'tap'
import { Network, sdkWorld } from '../helpers/sdk'

t.test('Android, web and iOS devices registered by the SDK: every push proved once, clicks exact', async (t) => {
  const w = await sdkWorld(t)
  const [ta, tw, ti] = [w.token('and'), w.token('web'), w.token('ios')]
  const android = await w.device(ta, { deviceType: 1, language: 'pt', externalUserId: 'u-1', tags: { plano: 'ouro' } })
  const web = await w.device(tw, { deviceType: 5 })
  const ios = await w.device(ti, { deviceType: 0 })
  for (const p of [android, web, ios]) t.match(p.playerId, /^[0-9a-f-]{36}$/, 'init registered the device')

  const row = await w.deviceRow(android.playerId as string)
  t.equal(row.identifier, ta)
  t.equal(row.app_version, '1.2.3')
  t.equal(row.sdk_versao, '0.7.0')
  t.equal(row.instalacao_id, android.installId)
  t.equal(row.language, 'pt')
  t.equal(row.external_user_id, 'u-1')
  t.same(row.tags, { plano: 'ouro' })
  t.equal(row.timezone, -new Date().getTimezoneOffset() * 60)
  t.equal(row.transporte, 'fcm')
  t.equal((await w.deviceRow(ios.playerId as string)).transporte, 'apns', 'an iOS token goes through APNs')

  const sendId = await w.send(
    [android, web, ios].map((p) => p.playerId as string),
    {
      headings: { en: 'Title' },
      contents: { en: 'Hello', pt: 'Olá' },
      data: { pedido: 42 },
      url: 'https://exemplo.com/p',
    },
  )
  t.same(await w.counters(sendId), { recebidos: 0, converted: 0 }, 'the provider accepting is not arrival')

  const shown = await android.handlePush(w.pushTo(ta, sendId))
  t.match(shown, { notificationId: sendId, title: 'Title', body: 'Hello', url: 'https://exemplo.com/p', receipt: 'sent' })
  t.same(shown?.data, { pedido: '42' }, "the sender's data without the service's keys (text on the FCM path)")
  t.same(shown?.contents, { en: 'Hello', pt: 'Olá' }, 'the language maps travel')
  t.match(
    await web.handlePush({ data: w.pushTo(tw, sendId) }),
    { title: 'Title', body: 'Hello', receipt: 'sent' },
    'a web message wrapped in {data}',
  )
  const iosShown = await ios.handlePush(w.pushTo(ti, sendId))
  t.match(iosShown, { title: 'Title', body: 'Hello', receipt: 'sent' })
  t.same(iosShown?.data, { pedido: 42 }, 'APNs carries JSON values')
  t.same(await w.counters(sendId), { recebidos: 3, converted: 0 })

  t.match(await android.handlePush(w.pushTo(ta, sendId)), { receipt: 'duplicate' }, 'the same push again is harmless')
  t.same(await android.queued(), [], 'and nothing is left to retry')
  t.match(await android.handleTap(w.pushTo(ta, sendId)), {
    notificationId: sendId,
    url: 'https://exemplo.com/p',
    receipt: 'sent',
  })
  t.match(await ios.handleTap(w.pushTo(ti, sendId)), { receipt: 'sent' })
  t.match(await ios.handleTap(w.pushTo(ti, sendId)), { receipt: 'duplicate' })
  t.same(await w.counters(sendId), { recebidos: 3, converted: 2 })
})

t.test('a tap without a prior receipt counts as both', async (t) => {
  const w = await sdkWorld(t)
  const tok = w.token()
  const p = await w.device(tok)
  const sendId = await w.send([p.playerId as string])
  t.match(await p.handleTap(w.pushTo(tok, sendId)), { receipt: 'sent' })
  t.same(await w.counters(sendId), { recebidos: 1, converted: 1 })
  t.match(await p.handlePush(w.pushTo(tok, sendId)), { receipt: 'duplicate' })
  t.same(await w.counters(sendId), { recebidos: 1, converted: 1 })
})

t.test('offline: receipts are queued durably, then sent by flush, and by the next init', async (t) => {
  const w = await sdkWorld(t)
  const net = new Network()
  const storage = new (await import('@pombo/sdk')).MemoryStorage()
  const tok = w.token()
  const p = await w.device(tok, { fetch: net.fetch, storage })
  const [s1, s2, s3] = [
    await w.send([p.playerId as string]),
    await w.send([p.playerId as string]),
    await w.send([p.playerId as string]),
  ]

  net.offline = true
  const shown = await p.handlePush(w.pushTo(tok, s1))
  t.match(shown, { notificationId: s1, body: 'Hello', receipt: 'queued' }, 'the display block even offline')
  t.match(await p.handleTap(w.pushTo(tok, s1)), { receipt: 'queued' })
  t.match(await p.handlePush(w.pushTo(tok, s2)), { receipt: 'queued' })
  t.equal((await p.queued()).length, 3)
  t.ok(storage.size > 0, 'kept in the storage, not only in memory')
  t.match(await p.flush(), { sent: 0, pending: 3 }, 'still offline: nothing lost')
  t.same(await w.counters(s1), { recebidos: 0, converted: 0 })

  net.offline = false
  t.match(await p.flush(), { sent: 3, pending: 0 })
  t.same(await w.counters(s1), { recebidos: 1, converted: 1 })
  t.same(await w.counters(s2), { recebidos: 1, converted: 0 })

  // The app dies with a receipt owed; the next launch sends it.
  net.offline = true
  t.match(await p.handlePush(w.pushTo(tok, s3)), { receipt: 'queued' })
  p.close()
  net.offline = false
  const again = await Pombo.init({
    baseUrl: w.s.url,
    appId: w.app.id,
    appVersion: '1.2.3',
    deviceType: 1,
    getToken: () => tok,
    storage,
    autoRetry: false,
  })
  t.teardown(() => again.close())
  t.equal(again.playerId, p.playerId, 'same install, same token: same device')
  t.equal(again.installId, p.installId)
  t.same(await again.queued(), [])
  t.same(await w.counters(s3), { recebidos: 1, converted: 0 }, 'init resent what the last run owed')
})

t.test(
  'registration profile: sessions grow per launch, the permission bitmask is sent, only a change re-registers',
  async (t) => {
    const w = await sdkWorld(t)
    const net = new Network()
    const storage = new (await import('@pombo/sdk')).MemoryStorage()
    const tok = w.token()
    let perm = 0
    const launch = () =>
      w.device(tok, {
        storage,
        fetch: net.fetch,
        notificationPermission: () => perm,
        profile: { fabricante: 'ACME', carrier: 'Vivo' },
      })
    const first = await launch()
    const id = first.playerId as string
    let row = await w.deviceRow(id)
    t.match(row, { sessoes: 1, notif_permissoes: 0, fabricante: 'ACME', carrier: 'Vivo', sdk_versao: '0.7.0' })
    t.equal(row.timezone_id, Intl.DateTimeFormat().resolvedOptions().timeZone)
    t.ok(row.device_os, 'the platform')
    first.close()
    const registrations = () => net.seen.filter((p) => p === '/api/v1/players').length
    const before = registrations()
    const second = await launch()
    second.close()
    t.equal(registrations(), before, 'nothing changed: no registration (a woken service worker costs none)')
    perm = 3
    const third = await launch()
    t.equal(registrations(), before + 1, 'permission granted since: registered again')
    t.equal(third.playerId, id)
    row = await w.deviceRow(id)
    t.match(row, { sessoes: 3, notif_permissoes: 3 }, 'the third launch, with permission')
  },
)

t.test('iOS through FCM: the data keys beside aps, as the app receives them', async (t) => {
  const w = await sdkWorld(t)
  const tok = w.token('iosfcm')
  const p = await w.device(tok, { deviceType: 0, transporte: 'fcm' })
  t.equal((await w.deviceRow(p.playerId as string)).transporte, 'fcm')
  const sendId = await w.send([p.playerId as string], { headings: { en: 'T' }, contents: { en: 'B' } })
  const m = w.d.fcm.delivered.find((r) => r.target === tok)?.body.message
  t.ok(m?.apns?.payload?.aps, 'FCM carried an APNs block')
  const userInfo = { ...m.data, aps: m.apns.payload.aps }
  t.match(await p.handlePush(userInfo), { notificationId: sendId, title: 'T', body: 'B', receipt: 'sent' })
  t.same(await w.counters(sendId), { recebidos: 1, converted: 0 })
})
