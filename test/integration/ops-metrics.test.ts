// The tuning metrics of the operations port, read through GET /metrics of a real service: pacing waits of a slow
// app, the outcome writer's queue and batches beside the other writers, and each Postgres pool's share of the
// process's connection budget, in use and waiting.
import t from 'tap'
import { startDelivery } from '../helpers/delivery'
import { sample } from '../helpers/metrics'

t.test('pacing waits, the outcome writer, pools in use and their budget share', async (t) => {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0', PM_PG_POOL: '20' }, service: { dispatcher: true } })
  // 60 a minute: a burst of one, then a token a second; three devices wait twice.
  const app = await d.s.createApp({ rate_por_min: 60 })
  await d.fcmFor(app)
  const players: string[] = []
  for (let i = 0; i < 3; i++) players.push(await d.device(app, `pace-${i}-${Math.random().toString(36).slice(2)}`))
  const started = Date.now()
  await d.closed(await d.send(app, { include_player_ids: players }), 30_000)
  t.ok(Date.now() - started >= 1_500, 'the pace held the send back')
  const text = await (await fetch(`${d.s.opsUrl}/metrics`)).text()

  const waits = sample(text, 'pombo_pacing_waits_total', { cause: 'rate' }) ?? 0
  t.ok(waits >= 2, `waits for the pace counted (${waits})`)
  const waited = sample(text, 'pombo_pacing_wait_seconds_total', { cause: 'rate' }) ?? 0
  t.ok(waited >= 1.5 && waited < 10, `seconds waited (${waited})`)
  t.equal(sample(text, 'pombo_pacing_waits_total', { cause: 'retry_after' }), 0, 'no provider asked to slow down')

  t.equal(sample(text, 'pombo_group_commit_queued', { writer: 'outcomes' }), 0, "the outcome writer's queue")
  t.equal(sample(text, 'pombo_group_commit_inflight', { writer: 'outcomes' }), 0)
  const batches = sample(text, 'pombo_group_commit_batch_size_count', { writer: 'outcomes' }) ?? 0
  const rows = sample(text, 'pombo_group_commit_batch_size_sum', { writer: 'outcomes' }) ?? 0
  t.ok(batches >= 1 && rows === 3, `three outcomes in ${batches} batch(es), each counted once (${rows})`)
  t.equal(sample(text, 'pombo_group_commit_queued', { writer: 'registrations' }), 0, 'the other writers still reported')

  const mainMax = sample(text, 'pombo_pg_pool_max', { pool: 'main' }) ?? 0
  const hooksMax = sample(text, 'pombo_pg_pool_max', { pool: 'webhooks' }) ?? 0
  t.ok(mainMax > 0 && hooksMax > 0, `both pools have a share (${mainMax} + ${hooksMax})`)
  t.ok(mainMax + hooksMax <= 20, 'the shares stay inside PM_PG_POOL')
  for (const pool of ['main', 'webhooks']) {
    const open = sample(text, 'pombo_pg_pool_connections', { pool }) ?? -1
    const inUse = sample(text, 'pombo_pg_pool_in_use', { pool }) ?? -1
    const idle = sample(text, 'pombo_pg_pool_idle', { pool }) ?? -1
    t.ok(inUse >= 0 && inUse + idle === open, `${pool}: in use + idle = open (${inUse} + ${idle} = ${open})`)
    t.equal(sample(text, 'pombo_pg_pool_waiting', { pool }), 0)
  }
  t.notMatch(text, /pombo_scrape_errors_total\{/, 'every collector succeeded')
})

t.test("a provider's Retry-After is a pacing wait of its own cause", async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const token = `q-${Math.random().toString(36).slice(2)}`
  d.fcm.script(token, 'quota:1, ok')
  const a = await d.device(app, token)
  await d.closed(await d.send(app, { include_player_ids: [a] }), 15_000)
  const text = await (await fetch(`${d.s.opsUrl}/metrics`)).text()
  t.ok((sample(text, 'pombo_pacing_waits_total', { cause: 'retry_after' }) ?? 0) >= 1, 'the 429 held the app back')
  const waited = sample(text, 'pombo_pacing_wait_seconds_total', { cause: 'retry_after' }) ?? 0
  t.ok(waited > 0.5 && waited <= 1.01, `about the second asked for (${waited})`)
  t.equal(
    sample(text, 'pombo_provider_outcomes_total', { platform: 'fcm', kind: 'quota' }),
    1,
    'the provider outcome by its kind',
  )
})
