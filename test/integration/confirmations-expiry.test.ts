// Nothing disappears silently (issue 32.4): stream confirmations no stream has read are kept PM_STREAM_KEEP_DAYS;
// within PM_STREAM_WARN_H of the first one going, the app's `pm_problema` (GET /api/v1/confirmacoes) and the
// pombo_confirmations_expiring gauge say so; their deletion is counted in pombo_confirmations_expired_total. An app
// whose stream was seen recently keeps them and is not warned.
import t from 'tap'
import { sample } from '../helpers/metrics'
import { basic, startService, type TestService } from '../helpers/service'

async function streamEvents(s: TestService, appId: string, n: number, ageH: number): Promise<void> {
  await s.sql(
    `INSERT INTO events (seq, app_id, evento, body, created_at, canal)
     SELECT i, $1, 'delivery.received', '{}', now() - $3 * interval '1 hour', 'grpc' FROM generate_series(1, $2) i`,
    [appId, n, ageH],
  )
}

t.test('unread stream confirmations: warned before they go, counted when they go', async (t) => {
  const s = await startService(t, { dispatcher: true, env: { PM_STREAM_KEEP_DAYS: '7', PM_STREAM_WARN_H: '24' } })
  const a = await s.createApp()
  const read = await s.createApp()
  for (const app of [a, read]) {
    const put = await s.call('PUT', '/api/v1/confirmacoes', {
      body: { app_id: app.id, modo: 'grpc' },
      headers: basic(app.api_key),
    })
    t.equal(put.status, 200)
  }
  const state = async (app: { id: string; api_key: string }) =>
    (await s.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`, { headers: basic(app.api_key) })).json
  const metrics = async () => (await fetch(`${s.opsUrl}/metrics`)).text()
  const dispatcher = s.svc.dispatcher
  if (!dispatcher) throw new Error('no dispatcher')

  await streamEvents(s, a.id, 3, 24 * 5) // 5 days old: 2 days before they go
  t.match(await state(a), { modo: 'grpc', pm_problema: null }, 'two days ahead: no warning yet')
  await dispatcher.pruneNow(30, 7, 7)
  t.equal(sample(await metrics(), 'pombo_confirmations_expiring'), 0)

  await s.sql(`UPDATE events SET created_at = now() - interval '6 days 12 hours' WHERE app_id = $1`, [a.id])
  const warned = await state(a)
  t.match(warned.pm_problema, /^confirmacoes_a_expirar:3:\d{4}-\d\d-\d\dT/, 'within 24 hours: how many, and when')
  const when = Date.parse((warned.pm_problema as string).split(':').slice(2).join(':'))
  t.ok(Math.abs(when - (Date.now() + 12 * 3_600_000)) < 60_000, 'the first goes 7 days after it was made')
  t.same((await dispatcher.pruneNow(30, 7, 7)).events, 0, 'nothing is deleted before its time')
  t.equal(sample(await metrics(), 'pombo_confirmations_expiring'), 3, 'the gauge counts them')

  // The other app's stream was seen an hour ago and read nothing: its old confirmations are kept, no warning.
  await streamEvents(s, read.id, 2, 24 * 10)
  await s.sql(
    `INSERT INTO event_streams (id, app_id, last_seq, opened_at, seen_at)
     VALUES (gen_random_uuid(), $1, 0, now() - interval '2 hours', now() - interval '1 hour')`,
    [read.id],
  )
  t.match(await state(read), { pm_problema: null }, 'a reader seen recently: no warning')

  await s.sql(`UPDATE events SET created_at = now() - interval '8 days' WHERE app_id = $1`, [a.id])
  t.same(await dispatcher.pruneNow(30, 7, 7), { attempts: 0, events: 3 }, 'past 7 days without a reader they go')
  const text = await metrics()
  t.equal(sample(text, 'pombo_confirmations_expired_total'), 3, 'and their deletion is counted')
  t.equal(sample(text, 'pombo_confirmations_expiring'), 0)
  t.match(await state(a), { pm_problema: null }, 'nothing left to warn of')
  t.equal(
    (await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE app_id = $1', [read.id]))[0]?.n,
    2,
    'the app with a recent reader keeps its own however old',
  )
  t.ok(
    s.logs.some(
      (l) => l.msg === 'stream confirmations deleted unread (no reader within PM_STREAM_KEEP_DAYS)' && l.confirmations === 3,
    ),
    'and logged',
  )
})
