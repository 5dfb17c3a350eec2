// The delivery engine's rules: pace, lanes, scheduled sends, TTL, credentials, APNs environment, quota.
import t from 'tap'
import { startDelivery } from '../helpers/delivery'
import { until } from '../helpers/until'

const spread = (ats: number[]) => Math.max(...ats) - Math.min(...ats)

t.test('pacing: rate_por_min 600 delivers about 10 per second', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp({ rate_por_min: 600 })
  await d.fcmFor(app)
  const ids: string[] = []
  for (let i = 0; i < 30; i++) ids.push(await d.device(app, `pace-${i}`))
  const accepted = Date.now()
  const row = await d.closed(await d.send(app, { include_player_ids: ids }), 20_000)
  t.equal(row.successful, 30)
  // A one-second burst (10), then 10 per second: the last of 30 devices cannot go out before ~2 s after the send was
  // accepted. Measured from acceptance, not from the first delivery: a slow first request (a new HTTP/2 session, the
  // OAuth token) on a loaded machine would shorten the spread without anything going faster.
  const ats = d.fcm.delivered.map((r) => r.at)
  const last = Math.max(...ats) - accepted
  t.ok(last >= 1_800, `the 30th delivery ${last} ms after acceptance`)
  t.ok(spread(ats) <= 3_500, `30 deliveries over ${spread(ats)} ms`)
})

t.test('lanes: a transactional send overtakes a large marketing send of the same app', async (t) => {
  const d = await startDelivery(t)
  // 10 per second: the marketing send lasts ~6 s, and the transactional one has ~2.5 s (25 positions) to get from
  // the API to the worker's actor under a loaded CI machine (at 20 per second it once needed 30 positions).
  const app = await d.s.createApp({ rate_por_min: 600 })
  await d.fcmFor(app)
  const bulk: string[] = []
  for (let i = 0; i < 60; i++) bulk.push(await d.device(app, `bulk-${i}`))
  const vip = await d.device(app, 'vip')
  const marketing = await d.send(app, { include_player_ids: bulk, priority: 'marketing' })
  await d.fcm.waitForDelivered(5)
  await d.send(app, { include_player_ids: [vip], priority: 'transactional' })
  await d.closed(marketing, 20_000)
  const order = d.fcm.delivered.map((r) => r.target)
  const at = order.indexOf('vip')
  t.ok(at >= 0 && at < 30, `the transactional device went out at position ${at} of ${order.length}`)
})

t.test('a scheduled send is delivered when it falls due, not before', async (t) => {
  const d = await startDelivery(t, { jobs: true })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const a = await d.device(app, 'later')
  const due = Date.now() + 2_000
  const sendId = await d.send(app, { include_player_ids: [a], send_after: new Date(due).toISOString() })
  // The delivery's own time shows nothing went out before send_after (no pause watching for an early one).
  await d.closed(sendId, 10_000)
  t.equal(d.fcm.delivered.length, 1)
  t.ok((d.fcm.delivered[0]?.at ?? 0) >= due - 50, 'delivered at or after send_after, not before')
})

t.test('ttl: a delivery past its deadline is not attempted', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('short-lived', 'unavailable')
  const a = await d.device(app, 'short-lived')
  // The first attempt fails; the retry falls due 1 s later, past the 1 s ttl.
  const row = await d.closed(await d.send(app, { include_player_ids: [a], ttl: 1 }), 15_000)
  t.equal(row.errored, 1)
  t.equal(d.fcm.requests.filter((r) => r.target === 'short-lived').length, 1, 'attempted once, then abandoned at the deadline')
})

t.test('deleting the credential stops that platform at once', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp({ rate_por_min: 600 })
  await d.fcmFor(app)
  const ids: string[] = []
  for (let i = 0; i < 40; i++) ids.push(await d.device(app, `del-${i}`))
  const sendId = await d.send(app, { include_player_ids: ids })
  await d.fcm.waitForDelivered(12)
  await d.creds.delete(app.id, 'fcm')
  const row = await d.closed(sendId, 20_000)
  t.ok(d.fcm.delivered.length < 30, `${d.fcm.delivered.length} delivered before the deletion took effect`)
  t.equal(Number(row.successful) + Number(row.errored), 40)
  t.match(String(row.problem), /credencial_ausente:fcm/)
})

t.test('APNs BadDeviceToken: a few are dead tokens, a majority is an environment problem', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.apnsFor(app)
  const ios = (tok: string) => d.device(app, tok, { device_type: 0, transporte: 'apns' })
  d.apns.script(/^bad-/, 'bad-device-token')
  const few = [await ios('bad-1'), await ios('good-1'), await ios('good-2'), await ios('good-3')]
  const r1 = await d.closed(await d.send(app, { include_player_ids: few }))
  t.equal(r1.failed, 1)
  // Decided when the actor finishes the send, just after its last outcome closed it.
  const invalid = await until(
    'the bad token marked dead',
    async () => (await d.s.sql('SELECT invalid_identifier FROM devices WHERE id = $1', [few[0]]))[0]?.invalid_identifier,
  )
  t.equal(invalid, true, 'one BadDeviceToken among four answers: a dead token')
  t.equal(r1.problem, null)

  const many = [await ios('bad-2'), await ios('bad-3'), await ios('bad-4'), await ios('good-4')]
  const second = await d.send(app, { include_player_ids: many })
  const r2 = await d.closed(second)
  t.equal(r2.failed, 3)
  const problem =
    r2.problem ??
    (await until(
      'the send names its problem',
      async () => (await d.s.sql('SELECT problem FROM sends WHERE id = $1', [second]))[0]?.problem,
    ))
  t.match(String(problem), /apns_ambiente_suspeito/)
  const dead = await d.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = ANY($1) AND invalid_identifier', [many])
  t.equal(dead[0]?.n, 0, 'the iOS base is not wiped over an environment problem')
})

t.test('PM_APNS_SUSPECT_PERCENT moves the share at which an environment problem is suspected', async (t) => {
  const d = await startDelivery(t, { env: { PM_APNS_SUSPECT_PERCENT: '25' } })
  const app = await d.s.createApp()
  await d.apnsFor(app)
  const ios = (tok: string) => d.device(app, tok, { device_type: 0, transporte: 'apns' })
  d.apns.script(/^bad-/, 'bad-device-token')
  // Two BadDeviceToken of eight answers (a lone one in a confirmed environment is a dead token whatever its share).
  const few = [await ios('bad-1'), await ios('bad-2')]
  for (let i = 0; i < 6; i++) few.push(await ios(`good-${i}`))
  const id = await d.send(app, { include_player_ids: few })
  t.equal((await d.closed(id)).failed, 2)
  const problem = await until(
    'the send names its problem',
    async () => (await d.s.sql('SELECT problem FROM sends WHERE id = $1', [id]))[0]?.problem,
  )
  t.match(String(problem), /apns_ambiente_suspeito/, 'two in eight is 25%: suspected (50% would call them dead)')
  const bad = few.slice(0, 2)
  const dead = await d.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = ANY($1) AND invalid_identifier', [bad])
  t.equal(dead[0]?.n, 0, 'kept')
})

t.test('a key for the other APNs environment: the reason reaches the caller, tokens are kept', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.apnsFor(app, 'sandbox') // the fake plays production
  const a = await d.device(app, 'ios-env', { device_type: 0, transporte: 'apns' })
  const sendId = await d.send(app, { include_player_ids: [a] })
  const row = await d.closed(sendId)
  t.equal(row.errored, 1)
  t.match(String(row.problem), /BadEnvironmentKey(Id)?InToken/)
  const read = await d.s.call('GET', `/api/v1/notifications/${sendId}?app_id=${app.id}`, {
    headers: { authorization: `Basic ${app.api_key}` },
  })
  t.match(read.json.pm_problema, /BadEnvironmentKey(Id)?InToken/)
  t.equal((await d.s.sql('SELECT invalid_identifier FROM devices WHERE id = $1', [a]))[0]?.invalid_identifier, false)
})

t.test('a provider 429 slows the app down without burning attempts', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('q', 'quota:1, quota:1, quota:1, ok')
  const a = await d.device(app, 'q')
  const started = Date.now()
  const row = await d.closed(await d.send(app, { include_player_ids: [a] }), 15_000)
  t.equal(row.successful, 1, 'three 429s did not exhaust the three attempts')
  t.ok(Date.now() - started >= 2_900, 'Retry-After honoured each time')
})

t.test('apps are independent: a slow, big send of one app does not hold another app back', async (t) => {
  const d = await startDelivery(t)
  const big = await d.s.createApp()
  const small = await d.s.createApp()
  await d.fcmFor(big, 'proj-big')
  await d.fcmFor(small, 'proj-small')
  d.fcm.script(/^big-/, 'slow:1500') // long enough that a loaded machine still serves the other app first
  const ids: string[] = []
  for (let i = 0; i < 100; i++) ids.push(await d.device(big, `big-${i}`))
  const bigSend = await d.send(big, { include_player_ids: ids, priority: 'marketing' })
  await d.fcm.waitForRequests(5)
  const started = Date.now()
  await d.closed(await d.send(small, { include_player_ids: [await d.device(small, 'small-1')] }), 5_000)
  t.ok(Date.now() - started < 2_000, 'the other app was served at once')
  const [row] = await d.s.sql('SELECT remaining FROM sends WHERE id = $1', [bigSend])
  t.ok(Number(row?.remaining) > 0, 'while the big send was still going')
})
