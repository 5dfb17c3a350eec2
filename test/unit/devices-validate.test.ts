// Pure rules of the device routes: field readers, UTF-8 truncation, in-batch merge, the export's COPY text.
import t from 'tap'
import { ApiError } from '../../src/core/errors'
import { copySql } from '../../src/devices/export'
import { lockKey, type UpsertRow } from '../../src/devices/store'
import { parseRegistration, parseUpdate, type RegistrationRow, truncateUtf8 } from '../../src/devices/validate'
import { mergeRegistration } from '../../src/devices/writer'

const APP = '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e'
const base = { app_id: APP, device_type: 1, identifier: 'tok' }

/** The campo of the 400 that `f` throws, or a description of what happened instead. */
function campoOf(f: () => unknown): string {
  try {
    f()
    return '(accepted)'
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) return `(other error: ${String(err)})`
    return (err.texts().extra as { campo: string }).campo
  }
}

t.test('truncateUtf8 cuts at a character boundary', async (t) => {
  t.equal(truncateUtf8('abc', 64), 'abc')
  t.equal(truncateUtf8('a'.repeat(70), 64), 'a'.repeat(64))
  t.equal(truncateUtf8(`${'a'.repeat(63)}é`, 64), 'a'.repeat(63), '2-byte char straddling the cut is dropped')
  t.equal(truncateUtf8(`${'a'.repeat(62)}é`, 64), `${'a'.repeat(62)}é`, 'fits exactly')
  t.equal(truncateUtf8(`${'a'.repeat(61)}€x`, 64), `${'a'.repeat(61)}€`, '3-byte char')
  t.equal(truncateUtf8(`${'a'.repeat(62)}😀`, 64), 'a'.repeat(62), '4-byte char')
  for (let n = 0; n < 80; n++) {
    const s = truncateUtf8('ção😀'.repeat(20), n)
    t.ok(Buffer.byteLength(s) <= n && !s.includes('\uFFFD'), `limit ${n}`)
  }
})

t.test('parseRegistration: required fields and their values', async (t) => {
  const r = parseRegistration({ ...base, app_id: APP.toUpperCase() })
  t.equal(r.app_id, APP, 'app_id lower-cased')
  t.equal(r.transporte, null)
  t.equal(
    campoOf(() => parseRegistration({ ...base, app_id: undefined })),
    'app_id',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, app_id: 'x' })),
    'app_id',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, device_type: 2 })),
    'device_type',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, device_type: '1' })),
    'device_type',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, identifier: '' })),
    'identifier',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, identifier: 'x'.repeat(195) })),
    'identifier',
  )
  t.equal(parseRegistration({ ...base, identifier: 'x'.repeat(194) }).identifier.length, 194)
})

t.test('parseRegistration: identity fields', async (t) => {
  t.equal(parseRegistration({ ...base, external_user_id: '' }).external_user_id, null, 'empty user id binds nobody')
  t.equal(parseRegistration({ ...base, game_version: '1' }).app_version, '1')
  t.equal(parseRegistration({ ...base, game_version: '1', app_version: '2' }).app_version, '2')
  t.equal(parseRegistration({ ...base, game_version: '1', app_version: null }).app_version, '1', 'null app_version: alias used')
  t.equal(
    campoOf(() => parseRegistration({ ...base, game_version: 3 })),
    'game_version',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, tags: { k: 'a\u0000' } })),
    'tags',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, language: 'ç'.repeat(17) })),
    'language',
  )
  t.equal(parseRegistration({ ...base, language: 'ç'.repeat(16) }).language, 'ç'.repeat(16))
  t.equal(
    campoOf(() => parseRegistration({ ...base, timezone: 'UTC' })),
    'timezone',
  )
  t.equal(
    campoOf(() => parseRegistration({ ...base, timezone: Number.NaN })),
    'timezone',
  )
  t.equal(parseRegistration({ ...base, timezone: 0 }).timezone, 0)
})

t.test('parseRegistration: profile fields are best effort', async (t) => {
  const r = parseRegistration({
    ...base,
    device_os: 'x\u0000y',
    sessoes: 1.5,
    notif_permissoes: 0,
    rooted: 0,
    instalacao_id: '',
    carrier: '',
  })
  t.equal(r.device_os, null, 'a value that cannot be stored exactly is absent: neither refused nor changed')
  t.equal(r.sessoes, null)
  t.equal(r.notif_permissoes, 0, 'zero is a value')
  t.equal(r.rooted, null)
  t.equal(r.instalacao_id, null, 'an empty install id names no install')
  t.equal(r.carrier, '')
})

t.test('parseUpdate: tri-state and preserve rule', async (t) => {
  t.equal(parseUpdate({ app_id: APP }).external_user_id, undefined, 'absent: keep')
  t.equal(parseUpdate({ app_id: APP, external_user_id: null }).external_user_id, null, 'null: logout')
  t.equal(parseUpdate({ app_id: APP, external_user_id: '' }).external_user_id, null, 'empty: logout')
  t.equal(parseUpdate({ app_id: APP, external_user_id: 'u' }).external_user_id, 'u', 'login')
  const u = parseUpdate({ app_id: APP })
  t.equal(u.tags, undefined)
  t.equal(u.app_version, undefined)
  t.equal(u.transporte, undefined)
  t.equal(parseUpdate({ app_id: APP, game_version: '5' }).app_version, '5')
  t.equal(
    campoOf(() => parseUpdate({ app_id: APP, external_user_id: 'x'.repeat(129) })),
    'external_user_id',
  )
  t.equal(
    campoOf(() => parseUpdate({})),
    'app_id',
  )
})

t.test('mergeRegistration applies two registrations of one token in order', async (t) => {
  const first: UpsertRow = {
    ...parseRegistration({
      ...base,
      external_user_id: 'u1',
      tags: { a: 1 },
      transporte: 'apns',
      carrier: 'Vivo',
      sessoes: 9,
      rooted: true,
    }),
    id: 'id-1',
  }
  const second: RegistrationRow = parseRegistration({ ...base, device_type: 0, sessoes: 4, carrier: 'Claro' })
  const m = mergeRegistration(first, second)
  t.equal(m.id, 'id-1', 'keeps the id of the group')
  t.equal(m.device_type, 0)
  t.equal(m.external_user_id, null, 'POST erase rule: the later one omitted it')
  t.equal(m.tags, null)
  t.equal(m.transporte, 'apns', 'transporte kept when omitted')
  t.equal(m.carrier, 'Claro', 'profile: later value')
  t.equal(m.rooted, true, 'profile: kept when omitted')
  t.equal(m.sessoes, 9, 'sessoes: highest seen')
})

t.test('lockKey is a stable signed 64-bit integer per (app, kind, value)', async (t) => {
  const a = lockKey(APP, 'user', 'maria')
  t.equal(a, lockKey(APP, 'user', 'maria'))
  t.not(a, lockKey(APP, 'install', 'maria'))
  t.not(a, lockKey(APP, 'user', 'joao'))
  const n = BigInt(a)
  t.ok(n >= -(2n ** 63n) && n < 2n ** 63n)
})

t.test('copySql writes external_user_id as stored, excludes sandbox, refuses a non-UUID app id', async (t) => {
  const sql = copySql(APP)
  t.match(sql, /NOT sandbox/)
  t.match(sql, /FORMAT csv, HEADER/)
  t.match(sql, /SELECT id, external_user_id, notification_types,/)
  t.throws(() => copySql("x' OR '1'='1"))
})
