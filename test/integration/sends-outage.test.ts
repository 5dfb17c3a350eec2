// the spec, Send errors 503: database unavailable, nothing written; retry with the same Idempotency-Key.
import t from 'tap'
import { basic, DATABASE_URL, startService } from '../helpers/service'
import { until } from '../helpers/until'
import { postgresBehindCut } from '../helpers/tcp-cut'

t.test('Postgres unreachable: 503 naming postgres, nothing written; the retry with the same key sends once', async (t) => {
  const { proxy, url } = await postgresBehindCut(t, DATABASE_URL)
  const s = await startService(t, { env: { DATABASE_URL: url } })
  const app = await s.createApp()
  const dev = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok' } })
  const body = { app_id: app.id, contents: { en: 'oi' }, include_player_ids: [dev.json.id] }
  const headers = { ...basic(app.api_key), 'Idempotency-Key': 'retry-me' }
  t.equal((await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, { headers })).status, 200, 'key cached while up')

  await proxy.cut()
  const r = await s.call('POST', '/api/v1/notifications', { body, headers })
  t.equal(r.status, 503)
  t.equal(r.json.explain.dependencia, 'postgres')
  const read = await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, { headers })
  t.equal(read.status, 503)

  await proxy.open()
  // The pool reconnects on its own; the same key now creates the send, once.
  const again = await until('the send is accepted again', async () => {
    const r = await s.call('POST', '/api/v1/notifications', { body, headers })
    return r.status === 503 ? null : r
  })
  t.equal(again.status, 200)
  t.equal(again.json.recipients, 1)
  const replay = await s.call('POST', '/api/v1/notifications', { body, headers })
  t.equal(replay.headers.get('x-idempotent-replay'), 'true')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM sends'))[0]?.n, 1)
})
