// The one display module (push in, description out) read against pushes the service's own FCM builder makes: the
// server-resolved texts and their language, the icon and picture, the tray tag, the tap URL, and the web
// notification built from it (the push kept in `data` for the click). Hostile pushes never throw.
import { describeNotification, resolvedLanguage, webNotification, webUrl } from '@pombo/sdk'
import fc from 'fast-check'
import t from 'tap'
import { fcmMessage } from '../../src/providers/fcm-body'
import { android, PROOF, pushFor, SEND_ID, web } from '../helpers/push'

const NOW = 1_800_000_000_000
const webData = (body: Record<string, unknown>) => fcmMessage(web('w'), pushFor(body), NOW).message.data as Record<string, string>

t.test('a web push: the resolved texts, their language, icon, image, tag and the URL the send chose', async (t) => {
  const data = webData({
    headings: { en: 'Title', pt: 'Título' },
    contents: { en: 'Hello', pt: 'Olá' },
    large_icon: 'https://exemplo.com/l.png',
    big_picture: 'https://exemplo.com/i.png',
    web_url: 'https://exemplo.com/web',
    data: { pedido: 42 },
  })
  const d = describeNotification({ data, from: '1234', fcmMessageId: 'x' })
  t.same(d, {
    notificationId: SEND_ID,
    title: 'Title',
    body: 'Hello',
    language: 'en',
    icon: 'https://exemplo.com/l.png',
    image: 'https://exemplo.com/i.png',
    tag: SEND_ID,
    url: 'https://exemplo.com/web',
    data: { pedido: '42' },
    push: data,
  })
  const w = webNotification(d as NonNullable<typeof d>, { badge: 'https://exemplo.com/b.png' })
  t.equal(w.title, 'Title')
  t.same(w.options, {
    body: 'Hello',
    icon: 'https://exemplo.com/l.png',
    image: 'https://exemplo.com/i.png',
    badge: 'https://exemplo.com/b.png',
    tag: SEND_ID,
    lang: 'en',
    dir: 'auto',
    data,
  })
  t.equal((w.options.data as Record<string, string>).pm_rcpt, PROOF, 'the proof travels with the notification, untouched')
  t.same(describeNotification(w.options.data), d, 'a click reads the same push back from notification.data')
})

t.test('the language is the one the service chose: en, else the first alphabetically; the collapse id is the tag', async (t) => {
  const pt = describeNotification(webData({ contents: { pt: 'Olá', es: 'Hola' }, collapse_id: 'pedido-42' }))
  t.match(pt, { body: 'Hola', language: 'es', tag: 'pedido-42' }, 'no en: es before pt')
  t.notOk(pt && 'title' in pt, 'no headings: no title')
  t.equal(webNotification(pt as NonNullable<typeof pt>).title, '', 'the web title is empty by default')
  t.equal(webNotification(pt as NonNullable<typeof pt>, { defaultTitle: 'Loja' }).title, 'Loja')
  t.equal(resolvedLanguage('Hello', { pt: 'Hello', en: 'Hello' }), 'en', 'the service rule first')
  t.equal(resolvedLanguage('Oi', { pt: 'Oi', en: 'Hello' }), 'pt', 'else the key that holds the text')
  t.equal(resolvedLanguage('Oi', undefined), undefined, 'no map: unknown')
  const url = describeNotification(webData({ contents: { en: 'x' }, url: 'https://a.example/u', web_url: 'https://b.example' }))
  t.equal(url?.url, 'https://a.example/u', 'url wins over web_url on the service; the device shows what came')
})

t.test('Android members for a native shell; an unknown push is not described', async (t) => {
  const data = fcmMessage(
    android('a'),
    pushFor({ small_icon: 'ic_stat', android_channel_id: 'promo', android_accent_color: '#FF0000', android_sound: 'ding' }),
    NOW,
  ).message.data
  t.match(describeNotification(data), { smallIcon: 'ic_stat', channelId: 'promo', accentColor: '#FF0000', sound: 'ding' })
  t.equal(describeNotification({ data: { title: 'not ours' } }), null)
  t.equal(describeNotification(null), null)
})

t.test('only http(s) URLs reach the browser: icons, images, badges and the click', async (t) => {
  const d = describeNotification({
    pm_msg_id: SEND_ID,
    pm_rcpt: PROOF,
    pmx_large_icon: 'javascript:alert(1)',
    pmx_big_picture: 'data:x',
  })
  const w = webNotification(d as NonNullable<typeof d>, { badge: 'file:///etc/passwd' })
  t.notOk('icon' in w.options || 'image' in w.options || 'badge' in w.options)
  t.equal(webUrl('javascript:alert(1)'), null)
  t.equal(webUrl('/promo?x=1', 'https://loja.example/app/'), 'https://loja.example/promo?x=1', 'relative to the worker scope')
  t.equal(webUrl('minhaloja://produto/1'), null, 'an app scheme is not opened by a browser')
  t.equal(webUrl('http://[bad'), null)
})

t.test('property: any input is described or refused, never thrown on', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.oneof(
            fc.anything(),
            fc.dictionary(
              fc.constantFrom('pm_msg_id', 'pm_rcpt', 'pmx_title', 'pmx_body', 'pmx_contents', 'pm_url', 'x'),
              fc.anything(),
            ),
          ),
          (v) => {
            const d = describeNotification(v)
            if (d) webNotification(d)
            return true
          },
        ),
      ),
    'no input throws',
  )
})
