// A URL change of PUT /api/v1/confirmacoes waits for a dispatcher's turn in flight on the app's webhook queue (its
// lease, src/confirmations/lease.ts) with no transaction open, pausing new turns meanwhile; it never stalls the app's
// sends, and past PM_CONFIG_LOCK_TIMEOUT_MS it answers 503, writes nothing and lifts the pause.
import t from 'tap'
import { basic, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type App = Awaited<ReturnType<TestService['createApp']>>

/** Registers a first destination, then holds its lease, as a dispatcher in the middle of a slow call does. */
async function holdLease(s: TestService, app: App): Promise<{ release: () => Promise<unknown> }> {
  const first = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: 'https://example.com/first' },
    headers: basic(app.api_key),
  })
  if (first.status !== 200) throw new Error(`PUT: ${first.status} ${first.text}`)
  await s.sql(
    `UPDATE webhook_destinations SET lease_id = gen_random_uuid(), leased_until = clock_timestamp() + interval '1 hour'
      WHERE app_id = $1 AND active`,
    [app.id],
  )
  return {
    release: () =>
      s.sql('UPDATE webhook_destinations SET lease_id = NULL, leased_until = NULL WHERE app_id = $1 AND active', [app.id]),
  }
}

const paused = async (s: TestService, app: App) =>
  (
    await s.sql<{ p: boolean }>(
      'SELECT handover_until > clock_timestamp() AS p FROM webhook_destinations WHERE app_id = $1 AND active',
      [app.id],
    )
  )[0]?.p === true

t.test('a URL change waits for the turn in flight, pausing new turns, and does not stall the app sends', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })
  t.equal(reg.status, 200)
  const lease = await holdLease(s, app)
  let answered = false
  const put = s
    .call('PUT', '/api/v1/confirmacoes', {
      body: { app_id: app.id, url: 'https://example.com/hook' },
      headers: basic(app.api_key),
    })
    .finally(() => {
      answered = true
    })
  await until('the PUT pauses new turns on the queue', () => paused(s, app))
  const started = Date.now()
  const send = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, include_player_ids: [reg.json.id], contents: { en: 'oi' } },
    headers: basic(app.api_key),
  })
  const tookMs = Date.now() - started
  t.equal(send.status, 200, send.text)
  t.equal(send.json.recipients, 1)
  t.ok(tookMs < 2_000, `the send did not wait for the URL change (${tookMs} ms)`)
  t.notOk(answered, 'the URL change still waits for the turn')
  await lease.release()
  const r = await put
  t.equal(r.status, 200, 'the URL change completes once the turn has recorded')
  t.match(r.json.segredo, /^pm_whsec_/)
  const rows = await s.sql<{ url: string; active: boolean; handover_until: Date | null }>(
    'SELECT url, active, handover_until FROM webhook_destinations WHERE app_id = $1 ORDER BY created_at, active',
    [app.id],
  )
  t.same(
    rows.map((x) => [x.url, x.active, x.handover_until]),
    [
      ['https://example.com/first', false, null],
      ['https://example.com/hook', true, null],
    ],
  )
})

t.test('the wait is bounded: past it the PUT answers 503, writes nothing and lifts the pause', async (t) => {
  const s = await startService(t, { limits: { configLockTimeoutMs: 400 } })
  const app = await s.createApp()
  const lease = await holdLease(s, app)
  t.teardown(lease.release)
  const started = Date.now()
  const r = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: 'https://example.com/hook', modo: 'webhook' },
    headers: basic(app.api_key),
  })
  t.equal(r.status, 503, r.text)
  t.equal(r.json.explain.dependencia, 'postgres', 'named')
  t.ok(Date.now() - started < 5_000, 'answered soon after the timeout')
  t.same(
    await s.sql('SELECT url FROM webhook_destinations WHERE app_id = $1', [app.id]),
    [{ url: 'https://example.com/first' }],
    'no destination written',
  )
  t.same(await s.sql('SELECT confirm_mode FROM apps WHERE id = $1', [app.id]), [{ confirm_mode: 'consulta' }], 'mode unchanged')
  t.notOk(await paused(s, app), 'turns may be claimed again at once')
})
