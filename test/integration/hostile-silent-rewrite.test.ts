// A value the service cannot store exactly (a lone surrogate, invalid UTF-8 bytes) must be
// refused with the spec's 400/422 naming the field, never silently rewritten to U+FFFD. Two different keys or
// tokens must never collapse into one.
import t, { type Test } from 'tap'
import { exchange } from '../fuzz/wire'
import { type Answer, basic, PLATFORM_KEY, startService, type TestService } from '../helpers/service'

const json = { 'content-type': 'application/json' }

/** POST with raw body bytes (fetch would re-encode a string; a Buffer goes as it is). */
function postBytes(s: TestService, path: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return s.call('POST', path, { raw: body, headers: { ...json, ...headers } })
}

const refused = (t: Test, r: Answer, field: string, what: string) => {
  t.ok(r.status === 400 || r.status === 422, `${what}: 400 or 422 (got ${r.status} ${r.text.slice(0, 120)})`)
  t.match(r.status >= 400 ? r.text : '', field, `${what}: the refusal names ${field}`)
}

t.test('idempotency keys with lone surrogates are refused, not collapsed into one', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const player = (await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })).json
    .id
  const send = (extra: string, contents = 'oi') =>
    s.call('POST', '/api/v1/notifications', {
      raw: `{"app_id":"${app.id}","contents":{"en":"${contents}"},"include_player_ids":["${player}"],${extra}}`,
      headers: { ...basic(app.api_key), ...json },
    })
  refused(t, await send('"external_id":"ext-\\ud800"'), 'external_id', 'external_id "ext-\\ud800"')
  refused(
    t,
    await send('"external_id":"ext-\\ud801"', 'outro'),
    'external_id',
    'external_id "ext-\\ud801" (another key, another body)',
  )
  refused(t, await send('"idempotency_key":"k-\\udc00"'), 'idempotency_key', 'idempotency_key "k-\\udc00"')
  refused(t, await send('"idempotency_key":"k-\\udc01"', 'outro'), 'idempotency_key', 'idempotency_key "k-\\udc01"')
  refused(t, await send('"name":"campanha \\ud800"'), 'name', 'name with a lone surrogate')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM sends'))[0]?.n, 0, 'no send was written')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM idempotency'))[0]?.n, 0, 'no idempotency record')
})

t.test('an Idempotency-Key header with invalid UTF-8 bytes is refused (two keys must not become one)', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const player = (await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })).json
    .id
  const answers = []
  for (const [key, text] of [
    [Buffer.from([0x6b, 0x2d, 0xc3, 0x28]), 'um'],
    [Buffer.from([0x6b, 0x2d, 0xff, 0x28]), 'dois'],
  ] as const) {
    const body = Buffer.from(JSON.stringify({ app_id: app.id, contents: { en: text }, include_player_ids: [player] }))
    answers.push(
      await exchange(
        s.svc.api?.port as number,
        {
          method: 'POST',
          target: Buffer.from('/api/v1/notifications'),
          headers: [
            ['Authorization', Buffer.from(`Basic ${app.api_key}`)],
            ['Content-Type', Buffer.from('application/json')],
            ['Idempotency-Key', key],
          ],
          body,
          transfer: 'length',
        },
        5000,
      ),
    )
  }
  for (const a of answers) {
    t.ok(a.status === 400 || a.status === 422, `refused with 400/422 (got ${a.status} ${a.body.toString().slice(0, 100)})`)
    t.match(
      a.status !== null && a.status >= 400 ? a.body.toString() : '',
      /Idempotency-Key/i,
      'the refusal names Idempotency-Key',
    )
  }
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM idempotency'))[0]?.n, 0, 'no idempotency record')
})

t.test('push tokens with invalid UTF-8 are refused; two different tokens never become one device', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const body = (tail: number[]) =>
    Buffer.concat([Buffer.from(`{"app_id":"${app.id}","device_type":1,"identifier":"tok-`), Buffer.from(tail), Buffer.from('"}')])
  refused(t, await postBytes(s, '/api/v1/players', body([0xc3, 0x28])), 'identifier', 'identifier ending C3 28')
  refused(t, await postBytes(s, '/api/v1/players', body([0xff, 0x28])), 'identifier', 'identifier ending FF 28')
  const surrogate = await s.call('POST', '/api/v1/players', {
    raw: `{"app_id":"${app.id}","device_type":1,"identifier":"tok-\\ud800"}`,
    headers: json,
  })
  refused(t, surrogate, 'identifier', 'identifier with a lone surrogate')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices'))[0]?.n, 0, 'no device was written')
})

t.test('PUT external_user_id, an app nome and a webhook url with a lone surrogate are refused', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const player = (await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })).json
    .id
  const put = await s.call('PUT', `/api/v1/players/${player}`, {
    raw: `{"app_id":"${app.id}","external_user_id":"user-\\ud800"}`,
    headers: json,
  })
  refused(t, put, 'external_user_id', 'PUT external_user_id')
  const putBytes = await s.call('PUT', `/api/v1/players/${player}`, {
    raw: Buffer.concat([Buffer.from(`{"app_id":"${app.id}","external_user_id":"user-`), Buffer.from([0xff]), Buffer.from('"}')]),
    headers: json,
  })
  refused(t, putBytes, 'external_user_id', 'PUT external_user_id with byte FF')
  const stored = await s.sql<{ external_user_id: string | null }>('SELECT external_user_id FROM devices WHERE id = $1', [player])
  t.equal(stored[0]?.external_user_id, null, 'the device was not bound to a rewritten user id')

  const apps = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM apps')
  const create = await s.call('POST', '/api/v1/apps', {
    raw: '{"nome":"Meu app \\udfff"}',
    headers: { authorization: `Bearer ${PLATFORM_KEY}`, ...json },
  })
  refused(t, create, 'nome', 'app nome')
  t.same(await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM apps'), apps, 'no app was created')

  const hook = await s.call('PUT', '/api/v1/confirmacoes', {
    raw: `{"app_id":"${app.id}","url":"https://example.com/hook-\\ud800"}`,
    headers: { ...basic(app.api_key), ...json },
  })
  t.equal(hook.status, 400, `webhook url: 400 (got ${hook.status} ${hook.text.slice(0, 100)})`)
  t.match(hook.status >= 400 ? hook.text : '', 'url', 'the refusal names url')
  t.equal((await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM webhook_destinations'))[0]?.n, 0, 'no destination')
})
