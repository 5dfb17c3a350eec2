// The SDK reads pushes exactly as the service builds them: the FCM data map (Android, web, iOS through FCM) and the
// APNs payload, made here by the service's own builders, so a change on either side that breaks the other fails.
import { parsePush } from '@pombo/sdk'
import fc from 'fast-check'
import t from 'tap'
import { apnsRequest } from '../../src/providers/apns'
import { fcmMessage } from '../../src/providers/fcm-body'
import { android, ios, PROOF, pushFor, SEND_ID, web } from '../helpers/push'

const NOW = 1_800_000_000_000
const full = {
  headings: { en: 'Title', pt: 'Título' },
  subtitle: { en: 'Sub' },
  contents: { en: 'Hello', pt: 'Olá' },
  data: { pedido: 42, obj: { a: true }, s: 'x' },
  url: 'https://exemplo.com/p',
  big_picture: 'https://exemplo.com/i.png',
  large_icon: 'https://exemplo.com/l.png',
  small_icon: 'ic_stat',
  android_channel_id: 'promo',
  android_accent_color: '#FF0000',
  android_sound: 'ding',
  ios_sound: 'ding.caf',
  collapse_id: 'pedido-42',
}

t.test('Android (FCM data-only): the display block, the caller data as text, the proof untouched', async (t) => {
  const data = fcmMessage(android('a'), pushFor(full), NOW).message.data as Record<string, string>
  const p = parsePush(data)
  t.equal(p?.rcpt, PROOF)
  t.equal(p?.notificationId, SEND_ID)
  t.same(p?.display, {
    notificationId: SEND_ID,
    title: 'Title',
    body: 'Hello',
    url: 'https://exemplo.com/p',
    smallIcon: 'ic_stat',
    largeIcon: 'https://exemplo.com/l.png',
    accentColor: '#FF0000',
    sound: 'ding',
    channelId: 'promo',
    image: 'https://exemplo.com/i.png',
    tag: 'pedido-42',
    contents: { en: 'Hello', pt: 'Olá' },
    headings: { en: 'Title', pt: 'Título' },
    subtitles: { en: 'Sub' },
    data: { pedido: '42', obj: '{"a":true}', s: 'x' },
  })
  t.same(parsePush({ data }), p, 'wrapped as a Firebase message {data}')
  t.same(parsePush(new Map(Object.entries(data))), p, 'a bridged Map')
})

t.test('web (FCM webpush): no Android-only members', async (t) => {
  const data = fcmMessage(web('w'), pushFor(full), NOW).message.data as Record<string, string>
  const d = parsePush(data)?.display
  t.match(d, { title: 'Title', body: 'Hello', image: 'https://exemplo.com/i.png', tag: 'pedido-42' })
  t.notOk(d && 'channelId' in d)
  t.notOk(d && 'smallIcon' in d)
})

t.test('iOS direct (APNs payload) and iOS through FCM: texts from aps.alert, JSON data, attachments', async (t) => {
  const payload = apnsRequest({ bundleId: 'com.x' }, pushFor(full), NOW).payload
  const p = parsePush(payload)
  t.equal(p?.rcpt, PROOF)
  t.match(p?.display, {
    notificationId: SEND_ID,
    title: 'Title',
    subtitle: 'Sub',
    body: 'Hello',
    sound: 'ding.caf',
    url: 'https://exemplo.com/p',
    attachments: { big_picture: 'https://exemplo.com/i.png' },
    contents: { en: 'Hello', pt: 'Olá' },
  })
  t.same(p?.display.data, { pedido: 42, obj: { a: true }, s: 'x' })
  const viaFcm = fcmMessage(ios('i'), pushFor(full), NOW).message as {
    data: Record<string, string>
    apns: { payload: { aps: unknown } }
  }
  // What an iOS app gets from FCM: the data keys beside `aps`.
  const userInfo = { ...viaFcm.data, aps: viaFcm.apns.payload.aps }
  t.match(parsePush(userInfo), { rcpt: PROOF, display: { title: 'Title', body: 'Hello', data: { pedido: '42' } } })
})

t.test('not a Pombo push, or a malformed one: null, never a throw (property)', async (t) => {
  t.equal(parsePush({ pm_msg_id: SEND_ID }), null, 'no proof')
  t.equal(parsePush({ pm_rcpt: PROOF }), null, 'no send id')
  t.equal(parsePush({ pm_msg_id: 7, pm_rcpt: PROOF }), null)
  fc.assert(
    fc.property(fc.anything(), (x) => {
      const r = parsePush(x)
      return r === null || (typeof r.rcpt === 'string' && typeof r.notificationId === 'string')
    }),
  )
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.anything()), fc.string({ minLength: 1, maxLength: 64 }), (extra, rcpt) => {
      const r = parsePush({ ...extra, pm_msg_id: SEND_ID, pm_rcpt: rcpt })
      return r?.rcpt === rcpt && Object.keys(r.display.data).every((k) => !k.startsWith('pm_') && !k.startsWith('pmx_'))
    }),
  )
})
