// The one rendering of a message, its size against 3,891 bytes (96 injected), and the language selection helpers.
import t from 'tap'
import { DEFAULT_LIMITS } from '../../src/core/config'
import { ApiError } from '../../src/core/errors'
import { errorReply } from '../../src/http/reply'
import { checkPayloadSize, INJECTED_BYTES, payloadBytes, pickText, pickTextIos, renderMessage } from '../../src/message/payload'
import type { SendInput } from '../../src/message/types'
import { parseSend } from '../../src/sends/validate'

const APP = '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'
const body = (extra: Record<string, unknown> = {}) => ({
  app_id: APP,
  include_player_ids: ['p1'],
  contents: { en: 'oi' },
  ...extra,
})
const NOW = Date.UTC(2026, 10, 26)
const input = (extra: Record<string, unknown> = {}): SendInput => parseSend(body(extra), {}, NOW)

/** The catalogue key of what fn throws, or 'nothing'. */
function thrownKey(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return e instanceof ApiError ? e.key : String(e)
  }
  return 'nothing'
}

t.test('constants are the spec values', async (t) => {
  t.equal(DEFAULT_LIMITS.payloadMaxBytes, 3891)
  t.equal(INJECTED_BYTES, 96)
})

t.test('the minimal rendering: fixed members, data always present, defaults written', async (t) => {
  const m = renderMessage(input())
  t.equal(
    JSON.stringify(m),
    '{"contents":{"en":"oi"},"data":{},"content_available":false,"mutable_content":false,"ttl":259200,"priority":10}',
  )
  t.equal(payloadBytes(input()), Buffer.byteLength(JSON.stringify(m)) + 96)
})

t.test('every field in its place, in the documented order', async (t) => {
  const m = renderMessage(
    input({
      contents: { pt: 'olá', en: 'hi' },
      headings: { en: 'T' },
      subtitle: { en: 'S' },
      data: { b: 1, a: { z: true, y: [2, 1] } },
      app_url: 'app://x',
      big_picture: 'https://c.test/b.png',
      large_icon: 'https://c.test/l.png',
      ios_attachments: { z: 'https://c.test/z.jpg', a: 'https://c.test/a.jpg' },
      small_icon: 'ic',
      android_channel_id: 'ch',
      android_accent_color: '#00FF00',
      ios_sound: 's.caf',
      android_sound: 's',
      collapse_id: 'c1',
      content_available: true,
      ttl: 60,
      priority: 'marketing',
      name: 'not in the payload',
      send_after: '2020-01-01T00:00:00Z',
    }),
  )
  t.same(Object.keys(m), [
    'contents',
    'headings',
    'subtitle',
    'data',
    'big_picture',
    'large_icon',
    'ios_attachments',
    'small_icon',
    'android_channel_id',
    'android_accent_color',
    'ios_sound',
    'android_sound',
    'collapse_id',
    'content_available',
    'mutable_content',
    'ttl',
    'priority',
  ])
  t.equal(JSON.stringify(m.contents), '{"en":"hi","pt":"olá"}', 'language maps sorted')
  t.equal(
    JSON.stringify(m.data),
    '{"a":{"y":[2,1],"z":true},"b":1,"pm_url":"app://x"}',
    'data sorted at every depth, pm_url inside',
  )
  t.equal(JSON.stringify(m.ios_attachments), '{"a":"https://c.test/a.jpg","z":"https://c.test/z.jpg"}')
  t.equal(m.mutable_content, true)
  t.equal(m.priority, 5)
  t.equal(m.ttl, 60)
})

t.test('the rendering does not depend on the order values arrived in', async (t) => {
  const a = input({ contents: { en: 'a', pt: 'b', '1': 'c' }, data: { x: { b: 1, a: 2 }, '2': 0 } })
  const b = input({ contents: { '1': 'c', pt: 'b', en: 'a' }, data: { '2': 0, x: { a: 2, b: 1 } } })
  t.equal(JSON.stringify(renderMessage(a)), JSON.stringify(renderMessage(b)))
  t.equal(JSON.stringify(renderMessage(a)), JSON.stringify(renderMessage(a)), 'deterministic')
})

t.test('a __proto__ key in data is carried and counted like any other', async (t) => {
  const data = JSON.parse('{"__proto__":{"x":1},"a":2}') as Record<string, unknown>
  t.equal(JSON.stringify(renderMessage(input({ data })).data), '{"__proto__":{"x":1},"a":2}')
})

/** contents.en sized so the payload is exactly `target` bytes. */
function sized(target: number, extra: Record<string, unknown> = {}): SendInput {
  const empty = payloadBytes(input({ ...extra, contents: { en: '' } }))
  return input({ ...extra, contents: { en: 'x'.repeat(target - empty) } })
}

t.test('exactly at the limit passes; one byte over is 422 with the explain fields', async (t) => {
  const at = sized(3891)
  t.equal(payloadBytes(at), 3891)
  t.equal(checkPayloadSize(at), 3891)
  const over = { ...at, contents: { en: `${at.contents.en}x` } }
  t.equal(payloadBytes(over), 3892)
  try {
    checkPayloadSize(over)
    t.fail('accepted')
  } catch (e) {
    t.ok(e instanceof ApiError)
    const r = errorReply(e as ApiError, 'r')
    const b = r.body as { errors: string[]; explain: Record<string, unknown> }
    t.equal(r.status, 422)
    t.equal((e as ApiError).key, 'PAYLOAD_TOO_LARGE')
    t.equal(b.explain.bytes, 3892)
    t.equal(b.explain.limite, 3891)
    t.equal(b.explain.bytes_injetados_pelo_servidor, 96)
    t.match(b.errors[0], '3892')
    t.match(b.errors[0], '3891')
  }
})

t.test('parseSend applies the same check: 3,891 accepted, 3,892 refused', async (t) => {
  const at = sized(3891, { data: { k: 'v' }, url: 'https://u.test' })
  t.ok(parseSend(body({ contents: at.contents, data: { k: 'v' }, url: 'https://u.test' }), {}, NOW))
  const over = body({ contents: { en: `${at.contents.en}x` }, data: { k: 'v' }, url: 'https://u.test' })
  t.equal(
    thrownKey(() => parseSend(over, {}, NOW)),
    'PAYLOAD_TOO_LARGE',
  )
})

t.test('bytes are UTF-8 bytes, not characters', async (t) => {
  const ascii = payloadBytes(input({ contents: { en: 'aa' } }))
  t.equal(payloadBytes(input({ contents: { en: 'éé' } })), ascii + 2)
  t.equal(payloadBytes(input({ contents: { en: '🐦' } })), ascii + 2)
})

t.test('each extra language adds its bytes', async (t) => {
  const one = payloadBytes(input({ contents: { en: 'hello' } }))
  const two = payloadBytes(input({ contents: { en: 'hello', pt: 'olá' } }))
  t.equal(two - one, Buffer.byteLength(',"pt":"olá"'))
  const withHeadings = payloadBytes(input({ contents: { en: 'hello' }, headings: { en: 'T', pt: 'Título' } }))
  t.equal(withHeadings - one, Buffer.byteLength(',"headings":{"en":"T","pt":"Título"}'))
  const withSubtitle = payloadBytes(input({ contents: { en: 'hello' }, subtitle: { de: 'U' } }))
  t.equal(withSubtitle - one, Buffer.byteLength(',"subtitle":{"de":"U"}'))
  // A body that fits in one language is refused once enough languages are added.
  const near = sized(3800)
  t.equal(
    thrownKey(() => checkPayloadSize({ ...near, contents: { ...near.contents, pt: 'x'.repeat(50), es: 'x'.repeat(50) } })),
    'PAYLOAD_TOO_LARGE',
  )
})

t.test('pickText: en, else the first key alphabetically', async (t) => {
  t.equal(pickText({ pt: 'olá', en: 'hi', de: 'hallo' }), 'hi')
  t.equal(pickText({ pt: 'olá', fr: 'salut', de: 'hallo' }), 'hallo')
  t.equal(pickText({ 'pt-BR': 'a', pt: 'b' }), 'b')
  t.equal(pickText({ es: 'hola' }), 'hola')
  t.equal(pickText({}), undefined)
  t.equal(pickText(undefined), undefined)
})

t.test('pickTextIos: en, then pt, then the first key alphabetically', async (t) => {
  t.equal(pickTextIos({ pt: 'olá', en: 'hi', de: 'hallo' }), 'hi')
  t.equal(pickTextIos({ pt: 'olá', fr: 'salut', de: 'hallo' }), 'olá')
  t.equal(pickTextIos({ fr: 'salut', de: 'hallo' }), 'hallo')
  t.equal(pickTextIos({}), undefined)
})
