// parseSend: every row of the send error table (400/422), each refused field, each reserved key, and the field rules.
import t, { type Test } from 'tap'
import { ApiError } from '../../src/core/errors'
import { errorReply } from '../../src/http/reply'
import { SEGMENTS } from '../../src/message/types'
import { REFUSED_FIELDS, parseSend, type SendHeaders } from '../../src/sends/validate'

const APP = '7B0A8F4E-1C2D-4E5F-8A9B-0C1D2E3F4A5B'
const PID = '11111111-2222-4333-8444-555555555555'
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0) // 2026-11-26T12:00:00Z
const DAY = 86_400_000

type Body = Record<string, unknown>
const base = (extra: Body = {}): Body => ({ app_id: APP, include_player_ids: [PID], contents: { en: 'oi' }, ...extra })
const parse = (extra: Body = {}, headers: SendHeaders = {}) => parseSend(base(extra), headers, NOW)

interface Refusal {
  status: number
  key: string
  campo?: string
  explain: Record<string, unknown>
  erro: string
}

/** Runs parseSend on a body and returns the refusal as the client would see it. */
function refusal(body: Body, headers: SendHeaders = {}): Refusal {
  try {
    parseSend(body, headers, NOW)
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    const r = errorReply(e, 'req')
    const b = r.body as { errors: string[]; explain: Record<string, unknown> }
    return {
      status: r.status,
      key: e.key,
      campo: b.explain.campo as string | undefined,
      explain: b.explain,
      erro: b.errors[0] as string,
    }
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`)
}

function refused(t: Test, extra: Body, status: number, key: string, campo?: string, headers: SendHeaders = {}): Refusal {
  const r = refusal(base(extra), headers)
  t.equal(r.status, status, `${JSON.stringify(extra)} → ${status}`)
  t.equal(r.key, key, `${JSON.stringify(extra)} → ${key}`)
  if (campo !== undefined) t.equal(r.campo, campo, `names ${campo}`)
  return r
}

t.test('a minimal send gets the defaults', async (t) => {
  const s = parse()
  t.equal(s.appId, APP.toLowerCase())
  t.same(s.target, { kind: 'players', ids: [PID] })
  t.same(s.contents, { en: 'oi' })
  t.equal(s.ttlS, 259_200)
  t.equal(s.lane, 0, 'default priority is high: lane 0')
  t.equal(s.sendAfterMs, null)
  t.same(s.platforms, { ios: true, android: true, web: true })
  t.equal(s.contentAvailable, false)
  t.equal(s.mutableContent, false)
  t.equal(s.url, undefined)
  t.equal(s.collapseId, undefined)
})

t.test('each refused field is a named 400, with the replacement where the spec gives one', async (t) => {
  t.equal(REFUSED_FIELDS.length, 15)
  for (const [campo, use] of REFUSED_FIELDS) {
    const r = refused(t, { [campo]: campo === 'filters' ? [{ field: 'tag' }] : 'x' }, 400, 'REFUSED_FIELD', campo)
    t.match(r.erro, campo)
    t.equal(r.explain.use, use)
    if (use) t.match(r.erro, `use ${use}`)
  }
  t.equal(refusal(base({ custom_data: {} })).explain.use, 'data')
  t.equal(refusal(base({ existing_android_channel_id: 'c' })).explain.use, 'android_channel_id')
  t.ok(parse({ filters: null }), 'null is absent, as for every field')
  // Refused fields are checked before anything else.
  refused(t, { buttons: [], contents: 5, ttl: -1 }, 400, 'REFUSED_FIELD', 'buttons')
})

t.test('app_id missing or not a UUID → 400', async (t) => {
  for (const app_id of [undefined, null, '', 'abc', 42, `${APP}x`]) {
    const r = refusal({ ...base(), app_id })
    t.equal(r.status, 400)
    t.equal(r.key, 'APP_ID_REQUIRED')
    t.equal(r.campo, 'app_id')
  }
})

t.test('exactly one target', async (t) => {
  const all = 'include_player_ids|include_external_user_ids|included_segments'
  const none = { app_id: APP, contents: { en: 'oi' } }
  let r = refusal(none)
  t.equal(r.status, 400)
  t.equal(r.campo, all)
  r = refusal({ ...none, include_player_ids: [] })
  t.equal(r.campo, all, 'an empty list is no target')
  refused(t, { include_external_user_ids: ['u1'] }, 400, 'INVALID_FIELD', 'include_player_ids|include_external_user_ids')
  refused(t, { included_segments: ['Active Users'] }, 400, 'INVALID_FIELD', 'include_player_ids|included_segments')
  t.same(parse({ include_player_ids: [], included_segments: ['Active Users'] }).target, {
    kind: 'segments',
    names: ['Active Users'],
  })
  refused(t, { include_player_ids: PID }, 400, 'INVALID_FIELD', 'include_player_ids')
  refused(t, { include_player_ids: [PID, 7] }, 400, 'INVALID_FIELD', 'include_player_ids[1]')
  t.same(parse({ include_player_ids: ['not-a-uuid'] }).target.kind, 'players', 'malformed ids are dropped later, not refused')
  t.same(parse({ include_player_ids: undefined, include_external_user_ids: ['u1', 'u2'] }).target, {
    kind: 'users',
    ids: ['u1', 'u2'],
  })
})

t.test('lists: at most 2,000 ids', async (t) => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`)
  t.equal((parse({ include_player_ids: ids(2000) }).target as { ids: string[] }).ids.length, 2000)
  refused(t, { include_player_ids: ids(2001) }, 400, 'INVALID_FIELD', 'include_player_ids')
  t.ok(parse({ include_player_ids: undefined, include_external_user_ids: ids(2000) }))
  refused(
    t,
    { include_player_ids: undefined, include_external_user_ids: ids(2001) },
    400,
    'INVALID_FIELD',
    'include_external_user_ids',
  )
})

t.test('segments: at most 10 names as sent, duplicates removed, unknown names listed', async (t) => {
  const seg = (names: unknown[]) => ({ include_player_ids: undefined, included_segments: names })
  const ten = [...SEGMENTS, ...SEGMENTS, 'Active Users', 'Active Users']
  t.same(parse(seg(ten)).target, { kind: 'segments', names: [...SEGMENTS] })
  refused(t, seg([...ten, 'Engaged Users']), 400, 'INVALID_FIELD', 'included_segments')
  const r = refused(t, seg(['Active Users', 'Todos']), 400, 'UNKNOWN_SEGMENT', 'included_segments')
  t.same(r.explain.segmentos_validos, ['Subscribed Users', 'Total Subscriptions', 'Active Users', 'Engaged Users'])
  for (const s of SEGMENTS) t.match(r.erro, s, 'the message lists the valid names')
  refused(t, seg(['active users']), 400, 'UNKNOWN_SEGMENT')
  refused(t, seg([3]), 400, 'INVALID_FIELD', 'included_segments[0]')
})

t.test('contents: required, non-empty, every value a string; headings and subtitle the same shape', async (t) => {
  refused(t, { contents: undefined }, 400, 'INVALID_FIELD', 'contents')
  refused(t, { contents: {} }, 400, 'INVALID_FIELD', 'contents')
  refused(t, { contents: 'oi' }, 400, 'INVALID_FIELD', 'contents')
  refused(t, { contents: ['oi'] }, 400, 'INVALID_FIELD', 'contents')
  refused(t, { contents: { en: 'oi', fr: 3 } }, 400, 'INVALID_FIELD', 'contents.fr')
  refused(t, { contents: { en: null } }, 400, 'INVALID_FIELD', 'contents.en')
  refused(t, { contents: { en: 'a\u0000b' } }, 400, 'INVALID_FIELD', 'contents.en')
  for (const f of ['headings', 'subtitle']) {
    refused(t, { [f]: 'x' }, 400, 'INVALID_FIELD', f)
    refused(t, { [f]: { en: 1 } }, 400, 'INVALID_FIELD', `${f}.en`)
    t.equal((parse({ [f]: {} }) as unknown as Body)[f], undefined, `${f}: {} is absent`)
    t.same((parse({ [f]: { pt: 'olá' } }) as unknown as Body)[f], { pt: 'olá' })
  }
})

t.test('data must be an object', async (t) => {
  for (const data of [[1], 'x', 3, true]) refused(t, { data }, 400, 'INVALID_FIELD', 'data')
  t.equal(parse({ data: null }).data, undefined)
  t.same(parse({ data: { a: 1, b: { c: [1] } } }).data, { a: 1, b: { c: [1] } })
})

t.test('types: booleans are booleans, strings are strings', async (t) => {
  for (const f of ['isIos', 'isAndroid', 'isAnyWeb', 'content_available', 'mutable_content']) {
    refused(t, { [f]: 'true' }, 400, 'INVALID_FIELD', f)
    refused(t, { [f]: 1 }, 400, 'INVALID_FIELD', f)
  }
  const strings = ['small_icon', 'android_channel_id', 'ios_sound', 'android_sound', 'name', 'external_id', 'idempotency_key']
  for (const f of [
    ...strings,
    'url',
    'app_url',
    'web_url',
    'big_picture',
    'large_icon',
    'android_accent_color',
    'collapse_id',
    'send_after',
  ]) {
    refused(t, { [f]: 5 }, 400, 'INVALID_FIELD', f)
  }
  const s = parse({
    small_icon: 'ic',
    android_channel_id: 'ch',
    ios_sound: 'a.caf',
    android_sound: 'b',
    name: 'n',
    external_id: 'e',
    idempotency_key: 'k',
  })
  t.same(
    [s.smallIcon, s.androidChannelId, s.iosSound, s.androidSound, s.name, s.externalId, s.idempotencyKey],
    ['ic', 'ch', 'a.caf', 'b', 'n', 'e', 'k'],
  )
})

t.test('platform flags: absent includes, false excludes, true restricts nothing', async (t) => {
  t.same(parse({ isIos: false }).platforms, { ios: false, android: true, web: true })
  t.same(parse({ isAndroid: true, isAnyWeb: false }).platforms, { ios: true, android: true, web: false })
})

t.test('channel_for_external_user_ids accepts only push; web_buttons is accepted and ignored', async (t) => {
  t.ok(parse({ channel_for_external_user_ids: 'push' }))
  refused(t, { channel_for_external_user_ids: 'email' }, 400, 'INVALID_FIELD', 'channel_for_external_user_ids')
  refused(t, { channel_for_external_user_ids: 1 }, 400, 'INVALID_FIELD', 'channel_for_external_user_ids')
  t.ok(parse({ web_buttons: [{ id: 'x', text: 'y' }] }))
  t.ok(parse({ web_buttons: 'anything' }))
})

t.test('ttl: integer 0..2419200, default 259200', async (t) => {
  t.equal(parse({ ttl: 0 }).ttlS, 0)
  t.equal(parse({ ttl: 2_419_200 }).ttlS, 2_419_200)
  t.equal(parse({ ttl: null }).ttlS, 259_200)
  for (const ttl of [-1, 2_419_201, 1.5, '60', true]) refused(t, { ttl }, 400, 'INVALID_FIELD', 'ttl')
})

t.test('priority: number or name, the header when the body has none, body wins', async (t) => {
  t.equal(parse({ priority: 10 }).lane, 0)
  t.equal(parse({ priority: 'transactional' }).lane, 0)
  t.equal(parse({ priority: 5 }).lane, 1)
  t.equal(parse({ priority: 'marketing' }).lane, 1)
  for (const priority of ['high', 1, '10', 'Marketing', 7.5, {}]) refused(t, { priority }, 400, 'INVALID_FIELD', 'priority')
  t.equal(parse({}, { priority: 'marketing' }).lane, 1)
  t.equal(parse({}, { priority: 'transactional' }).lane, 0)
  t.equal(parse({}, { priority: '' }).lane, 0, 'an empty header is no header')
  t.equal(parse({ priority: 10 }, { priority: 'marketing' }).lane, 0, 'body wins')
  t.equal(parse({ priority: 'marketing' }, { priority: 'transactional' }).lane, 1, 'body wins')
  refused(t, {}, 400, 'INVALID_FIELD', 'X-Pm-Priority', { priority: 'urgent' })
  refused(t, { priority: 5 }, 400, 'INVALID_FIELD', 'X-Pm-Priority', { priority: '10' })
})

t.test('collapse_id: at most 64 bytes of UTF-8, not characters', async (t) => {
  t.equal(parse({ collapse_id: 'a'.repeat(64) }).collapseId, 'a'.repeat(64))
  refused(t, { collapse_id: 'a'.repeat(65) }, 400, 'INVALID_FIELD', 'collapse_id')
  t.ok(parse({ collapse_id: 'é'.repeat(32) }), '32 × 2 bytes = 64')
  refused(t, { collapse_id: `${'é'.repeat(32)}a` }, 400, 'INVALID_FIELD', 'collapse_id')
  refused(t, { collapse_id: 'é'.repeat(33) }, 400, 'INVALID_FIELD', 'collapse_id')
  t.ok(parse({ collapse_id: '🐦'.repeat(16) }), '16 × 4 bytes = 64')
  refused(t, { collapse_id: '🐦'.repeat(17) }, 400, 'INVALID_FIELD', 'collapse_id')
  t.equal(parse({ collapse_id: '' }).collapseId, undefined)
})

t.test('url, app_url, web_url: the first non-empty wins', async (t) => {
  t.equal(parse({ url: 'https://a', app_url: 'app://b', web_url: 'https://c' }).url, 'https://a')
  t.equal(parse({ url: '', app_url: 'app://b', web_url: 'https://c' }).url, 'app://b')
  t.equal(parse({ app_url: '', web_url: 'https://c' }).url, 'https://c')
  t.equal(parse({ url: null, app_url: 'app://b' }).url, 'app://b')
  t.equal(parse({ url: '', app_url: '', web_url: '' }).url, undefined)
  refused(t, { url: 'https://a', web_url: 3 }, 400, 'INVALID_FIELD', 'web_url')
})

t.test('mutable_content turns on with big_picture or ios_attachments', async (t) => {
  t.equal(parse({ big_picture: 'https://x.test/p.png' }).mutableContent, true)
  t.equal(parse({ ios_attachments: { foto: 'https://x.test/p.png' } }).mutableContent, true)
  t.equal(parse({ big_picture: 'https://x.test/p.png', mutable_content: false }).mutableContent, true)
  t.equal(parse({ large_icon: 'https://x.test/i.png' }).mutableContent, false)
  t.equal(parse({ mutable_content: true }).mutableContent, true)
  t.equal(parse({ big_picture: '' }).mutableContent, false, 'an empty big_picture names no picture')
  t.equal(parse({ ios_attachments: {} }).mutableContent, false)
})

t.test('send_after: both spellings, any offset; no offset is unreadable', async (t) => {
  const at = (send_after: string) => parse({ send_after }).sendAfterMs
  const target = Date.UTC(2026, 10, 27, 15, 0, 0) // 2026-11-27T15:00:00Z
  t.equal(at('2026-11-27T15:00:00Z'), target)
  t.equal(at('2026-11-27T15:00:00z'), target)
  t.equal(at('2026-11-27t15:00:00Z'), target)
  t.equal(at('2026-11-27T12:00:00-03:00'), target)
  t.equal(at('2026-11-27T12:00:00-0300'), target)
  t.equal(at('2026-11-27T12:00-03'), target)
  t.equal(at('2026-11-27T20:30:00+05:30'), target)
  t.equal(at('2026-11-27T15:00:00.250Z'), target + 250)
  t.equal(at('2026-11-27T15:00:00.123456+00:00'), target + 123)
  t.equal(at('2026-11-27 12:00:00 GMT-0300'), target)
  t.equal(at('2026-11-27 20:30:00 GMT+0530'), target)
  t.equal(at('2026-11-27 15:00:00 GMT+0000'), target)
  t.equal(at('2026-11-27 15:00:00 GMT-0000'), target)
  t.equal(parse({ send_after: '2026-11-27 12:00:00 GMT-0300' }).sendAfterRaw, '2026-11-27 12:00:00 GMT-0300')
  for (const bad of [
    '2026-11-27T15:00:00', // no offset
    '2026-11-27 15:00:00', // no offset
    '2026-11-27',
    '2026-11-27 12:00:00 GMT-03:00',
    '2026-11-27 12:00:00 GMT',
    '2026-11-27  12:00:00 GMT-0300',
    '2026-11-27T25:00:00Z',
    '2026-02-29T10:00:00Z', // 2026 is not a leap year
    '2026-13-01T10:00:00Z',
    '2026-11-27T15:00:60Z',
    'amanhã',
    '',
    '1764255600',
  ]) {
    refused(t, { send_after: bad }, 400, 'INVALID_FIELD', 'send_after')
  }
  t.ok(parseSend(base({ send_after: '2028-02-29T10:00:00Z' }), {}, Date.UTC(2028, 1, 20)), 'a leap day in a leap year')
})

t.test('send_after: a past date means now; more than 28 days ahead is 422', async (t) => {
  t.equal(parse({ send_after: '2020-01-01T00:00:00Z' }).sendAfterMs, null)
  t.equal(parse({ send_after: '2026-11-26T12:00:00Z' }).sendAfterMs, null, 'now is now')
  t.equal(parse({ send_after: '2026-11-26 09:00:01 GMT-0300' }).sendAfterMs, NOW + 1000)
  t.equal(parse({ send_after: '2026-12-24T12:00:00Z' }).sendAfterMs, NOW + 28 * DAY, 'exactly 28 days is allowed')
  const r = refused(t, { send_after: '2026-12-24T12:00:01Z' }, 422, 'SEND_AFTER_TOO_FAR', 'send_after')
  t.equal(r.explain.limite_dias, 28)
  refused(t, { send_after: '2026-12-24 09:00:01 GMT-0300' }, 422, 'SEND_AFTER_TOO_FAR')
})

t.test('reserved keys in data are 422 with the key named', async (t) => {
  for (const chave of [
    'pm_x',
    'pm_',
    'pm_url',
    'pmx_bloco',
    'from',
    'message_type',
    'gcm.x',
    'gcm.notification.title',
    'google.c.a',
    'aps',
    'aps.alert',
  ]) {
    const r = refused(t, { data: { ok: 1, [chave]: 'v' } }, 422, 'RESERVED_DATA_KEY', `data.${chave}`)
    t.equal(r.explain.chave, chave)
    t.match(r.erro, chave)
  }
  const allowed = {
    aps_meta: 1,
    apsx: 2,
    pm: 3,
    pmx: 4,
    fromage: 5,
    message: 6,
    gcm: 7,
    google: 8,
    PM_x: 9,
    'aps-x': 10,
    nested: { pm_x: 1 },
  }
  t.same(parse({ data: allowed }).data, allowed, 'aps_meta, apsx and near misses are free (matching is case-sensitive)')
})

t.test('media URLs: absolute http(s)', async (t) => {
  for (const campo of ['big_picture', 'large_icon']) {
    t.ok(parse({ [campo]: 'https://cdn.test/a.png' }))
    t.ok(parse({ [campo]: 'http://cdn.test/a.png?x=1' }))
    for (const bad of [
      'ftp://cdn.test/a.png',
      '/a.png',
      'cdn.test/a.png',
      'https://',
      'http:///a.png',
      'http:\\\\cdn.test/a.png',
      'https://cdn.test/a b.png',
      ' https://cdn.test/a.png',
      'javascript:alert(1)',
      'data:image/png;base64,AA',
    ]) {
      refused(t, { [campo]: bad }, 422, 'INVALID_MEDIA_URL', campo)
    }
  }
})

t.test('ios_attachments: an object of https URLs', async (t) => {
  t.same(parse({ ios_attachments: { foto: 'https://cdn.test/a.jpg' } }).iosAttachments, { foto: 'https://cdn.test/a.jpg' })
  refused(
    t,
    { ios_attachments: { ok: 'https://cdn.test/a.jpg', foto: 'http://cdn.test/a.jpg' } },
    422,
    'ATTACHMENT_NOT_HTTPS',
    'ios_attachments.foto',
  )
  refused(t, { ios_attachments: { foto: 'cdn.test/a.jpg' } }, 422, 'ATTACHMENT_NOT_HTTPS', 'ios_attachments.foto')
  refused(t, { ios_attachments: ['https://cdn.test/a.jpg'] }, 400, 'INVALID_FIELD', 'ios_attachments')
  refused(t, { ios_attachments: { foto: 1 } }, 400, 'INVALID_FIELD', 'ios_attachments.foto')
})

t.test('android_accent_color: exactly #RRGGBB', async (t) => {
  t.equal(parse({ android_accent_color: '#FF6600' }).androidAccentColor, '#FF6600')
  t.ok(parse({ android_accent_color: '#a1b2c3' }))
  for (const bad of ['FF6600', '#FFF', '#FF66001', '#FF660G', 'FFFF6600', '#FF6600 ', '']) {
    refused(t, { android_accent_color: bad }, 422, 'INVALID_ACCENT_COLOR', 'android_accent_color')
  }
  refused(t, { android_accent_color: 0xff6600 }, 400, 'INVALID_FIELD', 'android_accent_color')
})

t.test('the final payload size is checked at the door (422)', async (t) => {
  const r = refused(t, { contents: { en: 'x'.repeat(3800) } }, 422, 'PAYLOAD_TOO_LARGE')
  t.equal(r.explain.limite, 3891)
  t.equal(r.explain.bytes_injetados_pelo_servidor, 96)
  t.ok((r.explain.bytes as number) > 3891)
})

t.test('400s (shape) come before 422s (meaning)', async (t) => {
  refused(t, { data: { pm_x: 1 }, ttl: -1 }, 400, 'INVALID_FIELD', 'ttl')
  refused(t, { big_picture: 'ftp://x', large_icon: 5 }, 400, 'INVALID_FIELD', 'large_icon')
  refused(t, { android_accent_color: 'red', send_after: 'tomorrow' }, 400, 'INVALID_FIELD', 'send_after')
  refused(t, { data: { aps: 1 }, contents: { en: 'x'.repeat(5000) } }, 422, 'RESERVED_DATA_KEY')
  refused(t, { send_after: '2027-06-01T00:00:00Z', contents: { en: 'x'.repeat(5000) } }, 422, 'SEND_AFTER_TOO_FAR')
})

t.test('U+0000 is refused where Postgres would refuse it', async (t) => {
  refused(t, { name: 'a\u0000' }, 400, 'INVALID_FIELD', 'name')
  refused(t, { data: { a: 'b\u0000' } }, 400, 'INVALID_FIELD', 'data')
  refused(
    t,
    { include_player_ids: undefined, include_external_user_ids: ['u\u0000'] },
    400,
    'INVALID_FIELD',
    'include_external_user_ids[0]',
  )
})
