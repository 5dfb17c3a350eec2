// POST /api/v1/players (the spec, Device (player), Devices, Device and export routes errors, Limits).
import t from 'tap'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const reg = (s: TestService, body: Record<string, unknown>) => s.call('POST', '/api/v1/players', { body })
const read = async (s: TestService, app: App, id: string) => {
  const r = await s.call('GET', `/api/v1/players/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (r.status !== 200) throw new Error(`read: ${r.status} ${r.text}`)
  return r.json
}
const row = async (s: TestService, id: string) =>
  (await s.sql('SELECT * FROM devices WHERE id = $1', [id]))[0] as Record<string, unknown>

t.test('registration answers {success, id}, 200 the first time too, idempotent per (app, token)', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await reg(s, { app_id: app.id, device_type: 1, identifier: 'tok-1' })
  t.equal(a.status, 200)
  t.same(Object.keys(a.json).sort(), ['id', 'success'])
  t.equal(a.json.success, true)
  t.match(a.json.id, /^[0-9a-f-]{36}$/)
  const b = await reg(s, { app_id: app.id, device_type: 1, identifier: 'tok-1' })
  t.equal(b.status, 200)
  t.equal(b.json.id, a.json.id, 'same token, same player_id')
  const c = await reg(s, { app_id: app.id, device_type: 1, identifier: 'tok-2' })
  t.not(c.json.id, a.json.id)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM devices'))[0]?.n, 2)
  // The same token in another app is another device.
  const other = await s.createApp()
  const d = await reg(s, { app_id: other.id, device_type: 1, identifier: 'tok-1' })
  t.not(d.json.id, a.json.id)
})

t.test('read shape: constants, tags {} never null, epoch seconds', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const before = Math.floor(Date.now() / 1000)
  const { json } = await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-tok' })
  const d = await read(s, app, json.id)
  t.same(Object.keys(d).sort(), [
    'app_version',
    'created_at',
    'device_model',
    'device_os',
    'device_type',
    'external_user_id',
    'id',
    'identifier',
    'invalid_identifier',
    'language',
    'last_active',
    'notification_types',
    'playtime',
    'session_count',
    'tags',
    'timezone',
  ])
  t.equal(d.id, json.id)
  t.equal(d.identifier, 'ios-tok')
  t.equal(d.device_type, 0)
  t.equal(d.notification_types, 1, 'born 1')
  t.equal(d.invalid_identifier, false)
  t.same(d.tags, {})
  t.equal(d.playtime, 0)
  t.equal(d.session_count, 0)
  t.equal(d.device_os, null)
  t.equal(d.external_user_id, null)
  t.equal(d.app_version, null)
  t.equal(d.language, null)
  t.equal(d.timezone, null)
  t.ok(Number.isInteger(d.last_active) && d.last_active >= before - 1 && d.last_active <= before + 5)
  t.ok(Number.isInteger(d.created_at) && d.created_at >= before - 1 && d.created_at <= before + 5)
  // device_os is a shape constant even when the device reported one.
  await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-tok', device_os: 'iOS 17.4' })
  t.equal((await read(s, app, json.id)).device_os, null)
  t.equal((await row(s, json.id)).device_os, 'iOS 17.4')
})

t.test('every accepted device_type; anything else is refused by name', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  for (const dt of [0, 1, 5, 7, 8]) {
    const r = await reg(s, { app_id: app.id, device_type: dt, identifier: `dt-${dt}` })
    t.equal(r.status, 200, `device_type ${dt}`)
    t.equal((await read(s, app, r.json.id)).device_type, dt)
  }
  for (const dt of [2, 3, 4, 6, 9, -1, 1.5, '1', true, null]) {
    const r = await reg(s, { app_id: app.id, device_type: dt, identifier: 'x' })
    t.equal(r.status, 400, `device_type ${JSON.stringify(dt)}`)
    t.equal(r.json.explain.campo, 'device_type')
    t.match(r.json.errors[0], /device_type/)
  }
  const missing = await reg(s, { app_id: app.id, identifier: 'x' })
  t.equal(missing.status, 400)
  t.equal(missing.json.explain.campo, 'device_type')
  t.equal((await s.sql("SELECT count(*)::int AS n FROM devices WHERE identifier = 'x'"))[0]?.n, 0, 'nothing written')
})

t.test('identifier: 1-194 bytes (bytes, not characters)', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ok194 = 'a'.repeat(194)
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: ok194 })).status, 200)
  const r195 = await reg(s, { app_id: app.id, device_type: 1, identifier: 'a'.repeat(195) })
  t.equal(r195.status, 400)
  t.equal(r195.json.explain.campo, 'identifier')
  // 97 two-byte characters = 194 bytes: accepted; 98 = 196 bytes: refused though only 98 characters.
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'é'.repeat(97) })).status, 200)
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'é'.repeat(98) })).status, 400)
  for (const bad of ['', null, 42, ['a'], { a: 1 }]) {
    const r = await reg(s, { app_id: app.id, device_type: 1, identifier: bad })
    t.equal(r.status, 400, `identifier ${JSON.stringify(bad)}`)
    t.equal(r.json.explain.campo, 'identifier')
  }
  t.equal((await reg(s, { app_id: app.id, device_type: 1 })).status, 400, 'missing identifier')
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'a\u0000b' })).status, 400, 'NUL refused')
})

t.test('optional identity fields: limits and types', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const base = { app_id: app.id, device_type: 1, identifier: 'f-1' }
  const cases: Array<[string, unknown, number]> = [
    ['external_user_id', 'u'.repeat(128), 200],
    ['external_user_id', 'u'.repeat(129), 400],
    ['external_user_id', 'ü'.repeat(65), 400], // 130 bytes
    ['external_user_id', 12, 400],
    ['app_version', '1.2.3', 200],
    ['app_version', 123, 400],
    ['device_model', 'Pixel 8', 200],
    ['device_model', { m: 1 }, 400],
    ['tags', { a: '1', b: 2 }, 200],
    ['tags', { big: 'x'.repeat(2040) }, 400], // > 2 KB serialized
    ['tags', ['a'], 400],
    ['tags', 'a=1', 400],
    ['language', 'pt-BR', 200],
    ['language', 'l'.repeat(32), 200],
    ['language', 'l'.repeat(33), 400],
    ['timezone', -10800, 200],
    ['timezone', 86400, 200],
    ['timezone', -86400, 200],
    ['timezone', 86401, 400],
    ['timezone', -86401, 400],
    ['timezone', 'America/Sao_Paulo', 400],
    ['timezone', 3600.5, 400],
    ['timezone', '3600', 400],
    ['transporte', 'fcm', 200],
    ['transporte', 'apns', 200],
    ['transporte', 'APNS', 400],
    ['transporte', 'hms', 400],
  ]
  for (const [field, value, status] of cases) {
    const r = await reg(s, { ...base, [field]: value })
    t.equal(r.status, status, `${field} = ${JSON.stringify(value).slice(0, 40)}`)
    if (status === 400) t.equal(r.json.explain.campo, field)
  }
  // tags exactly at 2048 bytes serialized is accepted.
  const fill = 2048 - JSON.stringify({ k: '' }).length
  t.equal((await reg(s, { ...base, tags: { k: 'x'.repeat(fill) } })).status, 200)
  t.equal((await reg(s, { ...base, tags: { k: 'x'.repeat(fill + 1) } })).status, 400)
  const tz = await reg(s, { ...base, timezone: 'America/Sao_Paulo' })
  t.match(tz.json.errors[0], /timezone/)
})

t.test('game_version is an alias of app_version; app_version wins when both are sent', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const base = { app_id: app.id, device_type: 1, identifier: 'gv' }
  const a = await reg(s, { ...base, game_version: '0.9' })
  t.equal((await read(s, app, a.json.id)).app_version, '0.9')
  await reg(s, { ...base, game_version: '0.9', app_version: '2.0' })
  t.equal((await read(s, app, a.json.id)).app_version, '2.0')
  await reg(s, { ...base, app_version: '3.0', game_version: '0.1' })
  t.equal((await read(s, app, a.json.id)).app_version, '3.0')
})

t.test('POST erases omitted identity fields; transporte and profile fields are preserved', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const base = { app_id: app.id, device_type: 1, identifier: 'erase-me' }
  const full = {
    ...base,
    external_user_id: 'user-1',
    app_version: '1.0',
    device_model: 'Pixel',
    tags: { plano: 'ouro' },
    language: 'pt',
    timezone: -10800,
    transporte: 'apns',
    device_os: 'Android 14',
    fabricante: 'Google',
    sdk_versao: '0.6.1',
    timezone_id: 'America/Sao_Paulo',
    pais: 'BR',
    net_type: 'wifi',
    carrier: 'Vivo',
    standby_bucket: 'active',
    instalacao_id: 'inst-1',
    rooted: false,
    bateria_irrestrita: true,
    sessoes: 7,
    notif_permissoes: 3,
  }
  const { json } = await reg(s, full)
  const d1 = await read(s, app, json.id)
  t.equal(d1.external_user_id, 'user-1')
  t.equal(d1.app_version, '1.0')
  t.equal(d1.device_model, 'Pixel')
  t.same(d1.tags, { plano: 'ouro' })
  t.equal(d1.language, 'pt')
  t.equal(d1.timezone, -10800)
  t.equal((await reg(s, base)).json.id, json.id)
  const d2 = await read(s, app, json.id)
  for (const f of ['external_user_id', 'app_version', 'device_model', 'language', 'timezone']) t.equal(d2[f], null, `${f} erased`)
  t.same(d2.tags, {}, 'tags erased')
  const stored = await row(s, json.id)
  t.equal(stored.transporte, 'apns', 'transporte preserved')
  const kept: Record<string, unknown> = {
    device_os: 'Android 14',
    fabricante: 'Google',
    sdk_versao: '0.6.1',
    timezone_id: 'America/Sao_Paulo',
    pais: 'BR',
    net_type: 'wifi',
    carrier: 'Vivo',
    standby_bucket: 'active',
    instalacao_id: 'inst-1',
    rooted: false,
    bateria_irrestrita: true,
    sessoes: 7,
    notif_permissoes: 3,
  }
  for (const [k, v] of Object.entries(kept)) t.same(stored[k], v, `${k} preserved`)
  // A later value replaces a profile field.
  await reg(s, { ...base, carrier: 'Claro', rooted: true })
  const s3 = await row(s, json.id)
  t.equal(s3.carrier, 'Claro')
  t.equal(s3.rooted, true)
})

t.test('transporte: new devices are fcm; an existing device keeps its value when omitted', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-new' })
  t.equal((await row(s, a.json.id)).transporte, 'fcm', 'absent: new device is fcm (even iOS)')
  await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-new', transporte: 'apns' })
  t.equal((await row(s, a.json.id)).transporte, 'apns')
  await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-new' })
  t.equal((await row(s, a.json.id)).transporte, 'apns', 'kept')
  await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-new', transporte: 'fcm' })
  t.equal((await row(s, a.json.id)).transporte, 'fcm', 'changed when sent')
  const b = await reg(s, { app_id: app.id, device_type: 0, identifier: 'ios-2', transporte: 'apns' })
  t.equal((await row(s, b.json.id)).transporte, 'apns')
})

t.test('best-effort profile fields never fail registration', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const base = { app_id: app.id, device_type: 1, identifier: 'prof' }
  // 63 ASCII bytes then a 2-byte character: cutting at 64 bytes must not split it.
  const long = `${'a'.repeat(63)}éfim`
  const r = await reg(s, { ...base, device_os: long, fabricante: 'F'.repeat(100), pais: '🇧🇷'.repeat(20), sessoes: 5 })
  t.equal(r.status, 200)
  const d = await row(s, r.json.id)
  t.equal(d.device_os, 'a'.repeat(63), 'cut before the 2-byte character')
  t.equal(d.fabricante, 'F'.repeat(64))
  t.ok(Buffer.byteLength(d.pais as string) <= 64)
  t.notMatch(d.pais as string, /\uFFFD/, 'no broken character')
  // Strange values are treated as absent: stored values stay.
  const weird = await reg(s, {
    ...base,
    device_os: 12,
    fabricante: ['x'],
    pais: null,
    sdk_versao: { v: 1 },
    timezone_id: 5,
    net_type: true,
    carrier: 1,
    standby_bucket: [],
    instalacao_id: 3,
    rooted: 'yes',
    bateria_irrestrita: 1,
    sessoes: -3,
    notif_permissoes: -1,
  })
  t.equal(weird.status, 200)
  const d2 = await row(s, r.json.id)
  t.equal(d2.device_os, 'a'.repeat(63))
  t.equal(d2.sessoes, 5, 'negative sessoes treated as absent')
  // sessoes never decreases; the highest seen is kept.
  await reg(s, { ...base, sessoes: 3 })
  t.equal((await row(s, r.json.id)).sessoes, 5)
  await reg(s, { ...base, sessoes: 9 })
  t.equal((await row(s, r.json.id)).sessoes, 9)
  await reg(s, { ...base, sessoes: 'muitas', notif_permissoes: 2.5 })
  t.equal((await row(s, r.json.id)).sessoes, 9)
  await reg(s, { ...base, notif_permissoes: 6, sessoes: 3_000_000_000 })
  const d3 = await row(s, r.json.id)
  t.equal(d3.notif_permissoes, 6)
  t.equal(d3.sessoes, 9, 'out of int range treated as absent')
})

t.test('app_id is checked before any write: missing/malformed 400, unknown 400, paused 403', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const body = { device_type: 1, identifier: 'a' }
  const missing = await reg(s, body)
  t.equal(missing.status, 400)
  t.equal(missing.json.explain.campo, 'app_id')
  t.equal((await reg(s, { ...body, app_id: 'nope' })).status, 400)
  const unknown = await reg(s, { ...body, app_id: '00000000-0000-4000-8000-000000000000' })
  t.equal(unknown.status, 400)
  t.equal(unknown.json.explain.campo, 'app_id')
  await s.svc.deps.apps.setPaused(app.id, true)
  const paused = await reg(s, { ...body, app_id: app.id })
  t.equal(paused.status, 403)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM devices'))[0]?.n, 0, 'nothing written')
  await s.svc.deps.apps.setPaused(app.id, false)
  t.equal((await reg(s, { ...body, app_id: app.id.toUpperCase() })).status, 200, 'upper-case UUID accepted')
})

t.test('invalid JSON 400, non-object 400, body over 16 KB 413', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const broken = await s.call('POST', '/api/v1/players', { raw: '{"app_id": ', headers: { 'content-type': 'application/json' } })
  t.equal(broken.status, 400)
  t.equal((await s.call('POST', '/api/v1/players', { raw: '[1,2]' })).status, 400)
  const big = await reg(s, { app_id: app.id, device_type: 1, identifier: 'big', device_model: 'x'.repeat(16 * 1024) })
  t.equal(big.status, 413)
  // Just under the cap is fine (profile text is not limited by itself).
  const under = JSON.stringify({ app_id: app.id, device_type: 1, identifier: 'ok', carrier: '' })
  const pad = 16 * 1024 - Buffer.byteLength(under)
  const r = await reg(s, { app_id: app.id, device_type: 1, identifier: 'ok', carrier: 'c'.repeat(pad) })
  t.equal(r.status, 200)
})

t.test('sandbox devices (test:) register normally', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const r = await reg(s, { app_id: app.id, device_type: 1, identifier: 'test:abc' })
  t.equal(r.status, 200)
  t.equal((await row(s, r.json.id)).sandbox, true)
  const n = await reg(s, { app_id: app.id, device_type: 1, identifier: 'abc' })
  t.equal((await row(s, n.json.id)).sandbox, false)
  t.equal((await read(s, app, r.json.id)).identifier, 'test:abc')
})

t.test('a dead token is made valid again by registering it; the invalidation reason is cleared', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const r = await reg(s, { app_id: app.id, device_type: 1, identifier: 'dead' })
  await s.sql("UPDATE devices SET invalid_identifier = true, invalid_reason = 'UNREGISTERED' WHERE id = $1", [r.json.id])
  t.equal((await read(s, app, r.json.id)).invalid_identifier, true)
  t.equal((await read(s, app, r.json.id)).notification_types, 1, 'last known value kept')
  const again = await reg(s, { app_id: app.id, device_type: 1, identifier: 'dead' })
  t.equal(again.json.id, r.json.id)
  const d = await row(s, r.json.id)
  t.equal(d.invalid_identifier, false)
  t.equal(d.invalid_reason, null)
})

t.test('instalacao_id: a new token retires the install previous tokens', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const a = await reg(s, { app_id: app.id, device_type: 1, identifier: 'old-1', instalacao_id: 'inst-A' })
  const b = await reg(s, { app_id: app.id, device_type: 1, identifier: 'old-2', instalacao_id: 'inst-A' })
  t.equal((await row(s, a.json.id)).invalid_identifier, true, 'first token retired by the second')
  const other = await reg(s, { app_id: app.id, device_type: 1, identifier: 'other', instalacao_id: 'inst-B' })
  const c = await reg(s, { app_id: app.id, device_type: 1, identifier: 'new', instalacao_id: 'inst-A' })
  t.equal((await row(s, b.json.id)).invalid_identifier, true)
  t.equal((await row(s, b.json.id)).invalid_reason, 'substituido')
  t.equal((await row(s, c.json.id)).invalid_identifier, false)
  t.equal((await row(s, other.json.id)).invalid_identifier, false, 'another install untouched')
  // Another app's install with the same id is untouched.
  const app2 = await s.createApp()
  const x = await reg(s, { app_id: app2.id, device_type: 1, identifier: 'x', instalacao_id: 'inst-A' })
  t.equal((await row(s, c.json.id)).invalid_identifier, false)
  t.equal((await row(s, x.json.id)).invalid_identifier, false)
  // Re-registering a retired token makes it the install's current token and retires the others.
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'old-2', instalacao_id: 'inst-A' })
  t.equal((await row(s, b.json.id)).invalid_identifier, false)
  t.equal((await row(s, c.json.id)).invalid_identifier, true)
  // Registering without instalacao_id keeps the stored one and retires nothing.
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'old-2' })
  t.equal((await row(s, b.json.id)).instalacao_id, 'inst-A')
})

t.test('10 devices per external_user_id at registration; the 11th is 400 naming the limit', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const ids: string[] = []
  for (let i = 0; i < 10; i++) {
    const r = await reg(s, { app_id: app.id, device_type: 1, identifier: `u-${i}`, external_user_id: 'maria' })
    t.equal(r.status, 200)
    ids.push(r.json.id)
  }
  const eleventh = await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-10', external_user_id: 'maria' })
  t.equal(eleventh.status, 400)
  t.equal(eleventh.json.explain.limite, 10)
  t.equal(eleventh.json.explain.campo, 'external_user_id')
  t.match(eleventh.json.errors[0], /10/)
  t.equal((await s.sql("SELECT count(*)::int AS n FROM devices WHERE identifier = 'u-10'"))[0]?.n, 0, 'nothing written')
  // Re-registering a device already bound is not a new binding.
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-3', external_user_id: 'maria' })).status, 200)
  // Another user, another app: unaffected.
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-10', external_user_id: 'joao' })).status, 200)
  // A device that leaves (POST without external_user_id erases the binding) frees a place.
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-0' })
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-11', external_user_id: 'maria' })).status, 200)
  // A dead token does not count toward the cap.
  await s.sql('UPDATE devices SET invalid_identifier = true WHERE id = $1', [ids[1]])
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-12', external_user_id: 'maria' })).status, 200)
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-13', external_user_id: 'maria' })).status, 400)
  // Reviving the dead token while bound to the full user would make an 11th valid device: refused.
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-1', external_user_id: 'maria' })).status, 400)
  t.equal((await s.sql('SELECT invalid_identifier FROM devices WHERE id = $1', [ids[1]]))[0]?.invalid_identifier, true)
  // Reviving it without the user is fine (the POST erases the binding).
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'u-1' })).status, 200)
  t.equal(
    (await s.sql("SELECT count(*)::int AS n FROM devices WHERE external_user_id = 'maria' AND NOT invalid_identifier"))[0]?.n,
    10,
  )
})

t.test('the cap holds under concurrency: 30 simultaneous registrations of one user bind exactly 10', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      reg(s, { app_id: app.id, device_type: 1, identifier: `c-${i}`, external_user_id: 'ana' }),
    ),
  )
  t.equal(answers.filter((a) => a.status === 200).length, 10)
  t.equal(answers.filter((a) => a.status === 400).length, 20)
  t.equal((await s.sql("SELECT count(*)::int AS n FROM devices WHERE external_user_id = 'ana'"))[0]?.n, 10)
})

t.test('per-IP limit: over the limit is 429 with Retry-After 60, counted per source IP', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 3 } })
  const app = await s.createApp()
  const body = { app_id: app.id, device_type: 1, identifier: 'ip' }
  for (let i = 0; i < 3; i++) t.equal((await reg(s, body)).status, 200)
  const r = await reg(s, body)
  t.equal(r.status, 429)
  t.equal(r.headers.get('retry-after'), '60')
  // PUT counts on the same limiter.
  const put = await s.call('PUT', '/api/v1/players/00000000-0000-4000-8000-000000000000', { body: { app_id: app.id } })
  t.equal(put.status, 429)
})

t.test('per-app registrations per hour, counted in Redis across instances; 429 without Retry-After', async (t) => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 0))
  const s = await startService(t, { clock, limits: { registrationsPerHour: 5 } })
  const s2 = await startService(t, { clock, limits: { registrationsPerHour: 5 }, shareWith: s })
  const app = await s.createApp()
  const other = await s.createApp()
  for (let i = 0; i < 3; i++) t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: `h-${i}` })).status, 200)
  for (let i = 3; i < 5; i++) t.equal((await reg(s2, { app_id: app.id, device_type: 1, identifier: `h-${i}` })).status, 200)
  const over = await reg(s2, { app_id: app.id, device_type: 1, identifier: 'h-5' })
  t.equal(over.status, 429)
  t.equal(over.headers.get('retry-after'), null)
  t.equal(over.json.explain.limite, 5)
  t.equal((await reg(s, { app_id: app.id, device_type: 1, identifier: 'h-6' })).status, 429, 'the other instance agrees')
  t.equal((await reg(s, { app_id: other.id, device_type: 1, identifier: 'h-0' })).status, 200, 'per app')
  t.equal((await s.sql(`SELECT count(*)::int AS n FROM devices WHERE app_id = $1`, [app.id]))[0]?.n, 5)
  // Concurrent takes in one turn each learn their own position.
  clock.advance(3_600_000)
  const burst = await Promise.all(
    Array.from({ length: 8 }, (_, i) => reg(s, { app_id: app.id, device_type: 1, identifier: `b-${i}` })),
  )
  t.equal(burst.filter((r) => r.status === 200).length, 5, 'next hour: a fresh allowance')
  t.equal(burst.filter((r) => r.status === 429).length, 3)
})
