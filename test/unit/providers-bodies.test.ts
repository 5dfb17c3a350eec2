// What FCM and APNs are given for one device, built from the real validation + rendering: texts by the language
// rules, data as strings (FCM) or JSON (APNs), pm_msg_id/pm_rcpt/pm_url, the language maps when they fit.
import t from 'tap'
import { apnsRequest } from '../../src/providers/apns'
import { apnsExpiration, asText, FCM_DATA_LIMIT_BYTES, fcmMessage } from '../../src/providers/fcm-body'
import { android, ios, PROOF, pushFor, SEND_ID, web } from '../helpers/push'

const NOW = Date.UTC(2026, 10, 26, 3, 0, 0)
const NOW_S = Math.floor(NOW / 1000)

const rich = {
  contents: { pt: 'Olá', en: 'Hello', de: 'Hallo' },
  headings: { fr: 'Bonjour', es: 'Hola' },
  data: { n: 1, obj: { b: [1, 2], a: null }, s: 'x', yes: true },
  url: 'https://example.com/p?q=1',
  small_icon: 'ic_stat',
  large_icon: 'https://img.example.com/icon.png',
  android_accent_color: '#FF0000',
  android_sound: 'ping',
  android_channel_id: 'promo',
  big_picture: 'https://img.example.com/x.png',
  collapse_id: 'c1',
  ttl: 3600,
}
const richData = {
  n: '1',
  obj: '{"a":null,"b":[1,2]}',
  s: 'x',
  yes: 'true',
  pm_url: 'https://example.com/p?q=1',
  pm_msg_id: SEND_ID,
  pm_rcpt: PROOF,
  pmx_contents: '{"de":"Hallo","en":"Hello","pt":"Olá"}',
  pmx_headings: '{"es":"Hola","fr":"Bonjour"}',
}

t.test('FCM data values are text', async (t) => {
  t.equal(asText('a'), 'a')
  t.equal(asText(1.5), '1.5')
  t.equal(asText(false), 'false')
  t.equal(asText(null), 'null')
  t.equal(asText({ k: [1, 'x'] }), '{"k":[1,"x"]}')
})

/** The display block the SDK draws on Android (rich above; no `en` heading: first alphabetical, es < fr). */
const androidDisplay = {
  pmx_title: 'Hola',
  pmx_body: 'Hello',
  pmx_small_icon: 'ic_stat',
  pmx_large_icon: 'https://img.example.com/icon.png',
  pmx_accent_color: '#FF0000',
  pmx_sound: 'ping',
  pmx_channel_id: 'promo',
  pmx_big_picture: 'https://img.example.com/x.png',
  pmx_collapse_id: 'c1',
}

t.test('FCM Android: a data-only message the SDK draws (display block in data), HIGH for transactional', async (t) => {
  const m = fcmMessage(android('tok-a'), pushFor({ ...rich, priority: 10 }), NOW)
  const { pmx_contents, pmx_headings, ...head } = richData
  t.strictSame(m, {
    message: {
      token: 'tok-a',
      data: { ...head, ...androidDisplay, pmx_contents, pmx_headings },
      android: { priority: 'HIGH', ttl: '3600s', collapse_key: 'c1' },
    },
  })
  t.notOk('notification' in m.message, 'no notification block: the OS would draw it and the SDK would never see it')
  t.strictSame(
    Object.keys(m.message.data as object).slice(-11, -2),
    Object.keys(androidDisplay),
    'display block after pm_rcpt, before the maps',
  )
  const plain = fcmMessage(
    android('tok-b'),
    pushFor({ contents: { pt: 'Olá', de: 'Hallo' }, priority: 'marketing', ttl: 0 }),
    NOW,
  )
  t.strictSame(plain.message.android, { priority: 'NORMAL', ttl: '0s' })
  t.strictSame(plain.message.data, {
    pm_msg_id: SEND_ID,
    pm_rcpt: PROOF,
    pmx_body: 'Hallo',
    pmx_contents: '{"de":"Hallo","pt":"Olá"}',
  })
})

t.test('FCM web (5, 7, 8): webpush headers, a data-only message the service worker draws', async (t) => {
  const { pmx_contents, pmx_headings, ...head } = richData
  for (const type of [5, 7, 8]) {
    const m = fcmMessage(web('tok-w', type), pushFor({ ...rich, priority: 5 }), NOW)
    t.strictSame(
      m,
      {
        message: {
          token: 'tok-w',
          data: {
            ...head,
            pmx_title: 'Hola',
            pmx_body: 'Hello',
            pmx_large_icon: 'https://img.example.com/icon.png',
            pmx_big_picture: 'https://img.example.com/x.png',
            pmx_collapse_id: 'c1',
            pmx_contents,
            pmx_headings,
          },
          webpush: { headers: { TTL: '3600', Urgency: 'normal', Topic: 'c1' } },
        },
      },
      `device_type ${type}: Android-only members (small icon, colour, sound, channel) stay out`,
    )
  }
  const m = fcmMessage(web('tok-w'), pushFor({ url: 'http://plain.example.com', collapse_id: 'has space', priority: 10 }), NOW)
  t.strictSame(m.message.webpush, { headers: { TTL: '259200', Urgency: 'high' } }, 'no Topic for an invalid one')
  t.match(m.message.data, { pm_url: 'http://plain.example.com', pmx_body: 'oi', pmx_collapse_id: 'has space' })
})

t.test('FCM iOS through FCM: an apns block', async (t) => {
  const m = fcmMessage(
    ios('tok-i'),
    pushFor({
      contents: { en: 'Hi' },
      subtitle: { en: 'Sub' },
      ios_sound: 'chime.caf',
      big_picture: 'https://img.example.com/x.png',
      collapse_id: 'c1',
      ttl: 60,
    }),
    NOW,
  )
  t.strictSame(m.message.apns, {
    headers: {
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-expiration': String(NOW_S + 60),
      'apns-collapse-id': 'c1',
    },
    payload: { aps: { alert: { body: 'Hi', subtitle: 'Sub' }, sound: 'chime.caf', 'mutable-content': 1 } },
    fcm_options: { image: 'https://img.example.com/x.png' },
  })
})

t.test('FCM: the language maps are left out when they would pass 4,096 bytes', async (t) => {
  const long = 'x'.repeat(2500)
  const m = fcmMessage(android('tok'), pushFor({ contents: { en: long, pt: 'curto' } }), NOW)
  const data = m.message.data as Record<string, string>
  t.strictSame(Object.keys(data).sort(), ['pm_msg_id', 'pm_rcpt', 'pmx_body'])
  t.equal(data.pmx_body, long, 'the resolved text always travels')
  let bytes = 0
  for (const [k, v] of Object.entries(data)) bytes += Buffer.byteLength(k) + Buffer.byteLength(v)
  t.ok(bytes <= FCM_DATA_LIMIT_BYTES)
  const ios = fcmMessage({ deviceId: 'd', token: 'tok-i', deviceType: 0 }, pushFor({ contents: { en: long, pt: 'curto' } }), NOW)
  t.strictSame(
    Object.keys(ios.message.data as object).sort(),
    ['pm_msg_id', 'pm_rcpt'],
    'iOS via FCM: the alert carries the text',
  )
})

/** The bytes FCM counts of a data block: keys and values, UTF-8. */
function dataBytes(data: Record<string, string>): number {
  let bytes = 0
  for (const [k, v] of Object.entries(data)) bytes += Buffer.byteLength(k) + Buffer.byteLength(v)
  return bytes
}

t.test('FCM: the language maps travel up to exactly 4,096 bytes, and not one byte past', async (t) => {
  // The shown text (`en`) is in pmx_body and pmx_contents: two bytes a character; `pt` only in pmx_contents.
  const texts = (en: string, pt: string) =>
    fcmMessage(android('tok'), pushFor({ contents: { en, pt } }), NOW).message.data as Record<string, string>
  const room = FCM_DATA_LIMIT_BYTES - dataBytes(texts('', ''))
  const sized = (n: number) => texts('x'.repeat(Math.floor(n / 2)), 'y'.repeat(n % 2))
  const fits = sized(room)
  t.equal(dataBytes(fits), FCM_DATA_LIMIT_BYTES)
  t.ok('pmx_contents' in fits, 'exactly 4,096 bytes: the maps travel')
  const over = sized(room + 1)
  t.notOk('pmx_contents' in over, '4,097 bytes: they are left out')
  t.equal(over.pmx_body, 'x'.repeat(Math.floor((room + 1) / 2)), 'the shown text still travels')
  // Two bytes a character: more characters than a third of the budget, fewer bytes than all of it. Counted in
  // bytes, not guessed from the characters.
  const accented = texts('é'.repeat(Math.floor(room / 4)), '')
  t.ok(3 * JSON.stringify(accented).length > FCM_DATA_LIMIT_BYTES)
  t.ok(dataBytes(accented) <= FCM_DATA_LIMIT_BYTES)
  t.ok('pmx_contents' in accented, 'multi-byte text that fits travels')
})

t.test('FCM: a data key named __proto__ travels as an ordinary key', async (t) => {
  const m = fcmMessage(android('tok'), pushFor(JSON.parse('{"contents":{"en":"x"},"data":{"__proto__":{"a":1},"b":2}}')), NOW)
  const data = m.message.data as Record<string, string>
  t.equal(Object.getOwnPropertyDescriptor(data, '__proto__')?.value, '{"a":1}')
  t.equal(JSON.parse(JSON.stringify(m)).message.data.b, '2')
  t.match(JSON.stringify(m), /"__proto__":"\{\\"a\\":1\}"/)
})

t.test('APNs: headers and payload of an alert, iOS language rule', async (t) => {
  const push = pushFor({
    contents: { de: 'Hallo', pt: 'Olá' },
    headings: { es: 'Hola', pt: 'Oi' },
    subtitle: { fr: 'Sous' },
    ios_sound: 'chime.caf',
    ios_attachments: { img: 'https://img.example.com/a.png' },
    data: { n: 1, obj: { a: [true] } },
    url: 'myapp://open',
    collapse_id: 'c1',
    ttl: 600,
    priority: 10,
  })
  const r = apnsRequest({ bundleId: 'com.example.app' }, push, NOW)
  t.strictSame(
    { headers: r.headers, payload: JSON.parse(JSON.stringify(r.payload)) },
    {
      // as it goes on the wire
      headers: {
        'apns-topic': 'com.example.app',
        'apns-push-type': 'alert',
        'apns-priority': '10',
        'apns-expiration': String(NOW_S + 600),
        'apns-collapse-id': 'c1',
      },
      payload: {
        aps: { alert: { title: 'Oi', subtitle: 'Sous', body: 'Olá' }, sound: 'chime.caf', 'mutable-content': 1 },
        n: 1,
        obj: { a: [true] },
        pm_url: 'myapp://open',
        pm_msg_id: SEND_ID,
        pm_rcpt: PROOF,
        pm_att: { img: 'https://img.example.com/a.png' },
        pmx_contents: { de: 'Hallo', pt: 'Olá' },
        pmx_headings: { es: 'Hola', pt: 'Oi' },
        pmx_subtitle: { fr: 'Sous' },
      },
    },
  )
})

t.test('APNs: marketing is priority 5, ttl 0 expires at once, big_picture becomes the attachment', async (t) => {
  const r = apnsRequest(
    { bundleId: 'com.example.app' },
    pushFor({ priority: 'marketing', ttl: 0, big_picture: 'https://img.example.com/x.png', content_available: true }),
    NOW,
  )
  t.strictSame(r.headers, {
    'apns-topic': 'com.example.app',
    'apns-push-type': 'alert',
    'apns-priority': '5',
    'apns-expiration': '0',
  })
  t.strictSame(r.payload.aps, { alert: { body: 'oi' }, 'mutable-content': 1, 'content-available': 1 })
  t.strictSame(r.payload.pm_att, { big_picture: 'https://img.example.com/x.png' })
  t.equal(apnsExpiration(0, NOW), 0)
  t.equal(apnsExpiration(1, NOW), NOW_S + 1)
})

t.test('APNs: content_available without text is a background push at priority 5', async (t) => {
  const r = apnsRequest(
    { bundleId: 'com.example.app' },
    pushFor({ contents: { en: '' }, content_available: true, ios_sound: 'x', priority: 10 }),
    NOW,
  )
  t.equal(r.headers['apns-push-type'], 'background')
  t.equal(r.headers['apns-priority'], '5', 'Apple: background pushes must use 5')
  t.strictSame(r.payload.aps, { 'content-available': 1 })
})

t.test('APNs: the language maps are left out when the payload would pass 4,096 bytes', async (t) => {
  const r = apnsRequest({ bundleId: 'b.c' }, pushFor({ contents: { en: 'y'.repeat(3000) } }), NOW)
  t.notOk('pmx_contents' in r.payload)
  t.ok(Buffer.byteLength(JSON.stringify(r.payload)) <= 4096)
})
