// A dispatcher killed in the middle of an attempt loses no event (the spec, Events: at-least-once, serial per
// destination): a `pombo serve --roles worker` process is SIGKILLed while the receiver holds one of its requests;
// another dispatcher takes the destination over (the victim's lease expires, no longer renewed) and redelivers
// from the last written cursor, in order.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { startPombo } from '../../bench/lib/pombo'
import { testCa, trustEnv } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { basic, startService, VAULT_KEY } from '../helpers/service'
import { until } from '../helpers/until'

const N = 60

t.test('SIGKILL mid-attempt: every event delivered at least once, in order, by the dispatcher that takes over', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const s = await startService(t) // the API alone: no dispatcher here
  const app = await s.createApp()
  const path = '/crash'
  const put = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url(path), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  rx.secret(path, put.json.segredo)
  const seqs: string[] = []
  for (let i = 0; i < N; i++) {
    const body = {
      evento: 'delivery.received',
      app_id: app.id,
      notification_id: randomUUID(),
      player_id: randomUUID(),
      quando: new Date().toISOString(),
      canal: 'webhook',
    }
    const [row] = await s.sql<{ seq: string }>(
      "INSERT INTO events (app_id, evento, body, created_at) VALUES ($1, 'delivery.received', $2, now()) RETURNING seq",
      [app.id, body],
    )
    seqs.push((row as { seq: string }).seq)
  }
  // The victim's 16th request is held open: the kill lands in the middle of that attempt.
  rx.script(
    path,
    Array.from({ length: 15 }, () => ({ delayMs: 10 })),
  )
  rx.fallback(path, { hang: true })
  const victim = await startPombo(
    0,
    {
      ...trustEnv(),
      PM_VAULT_KEY: VAULT_KEY,
      PM_WEBHOOK_ALLOW_PRIVATE: '1',
      PM_WEBHOOK_POLL_MS: '20',
      PM_WEBHOOK_TIMEOUT_MS: '30000',
    },
    'worker',
    [],
    { shared: { schema: s.cfg.dbSchema, prefix: s.cfg.redisPrefix } },
  )
  t.teardown(() => victim.stop())
  await rx.waitFor(16, path, 30_000)
  const exited = new Promise((r) => victim.child.once('exit', r))
  victim.child.kill('SIGKILL')
  await exited
  const before = rx.on(path).length
  t.equal(rx.on(path)[15]?.status, 0, 'killed while an attempt was in flight')

  rx.fallback(path, { delayMs: 2 })
  const heir = await startService(t, {
    shareWith: s,
    dispatcher: true,
    webhookCa: testCa(),
    env: { PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 2_000 },
  })
  t.ok(heir.svc.dispatcher)
  const acked = () =>
    new Set(
      rx
        .on(path)
        .filter((r) => r.status === 200)
        .map((r) => r.headers['x-pm-evento-id']),
    )
  const end = Date.now() + 30_000
  while (acked().size < N && Date.now() < end) await new Promise((r) => setTimeout(r, 50))
  t.same([...acked()].sort(), [...seqs].sort(), 'every event acknowledged at least once')

  const ids = rx.on(path).map((r) => Number(r.headers['x-pm-evento-id']))
  const a = ids.slice(0, before)
  const b = ids.slice(before)
  const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > (xs[i - 1] as number))
  t.ok(increasing(a), 'the victim delivered in order')
  t.ok(increasing(b), 'the heir delivered in order')
  t.ok(
    (b[0] as number) <= Math.max(...a),
    `the heir starts from the written cursor (${b[0]}), redelivering what was not recorded`,
  )
  t.ok(rx.on(path).every((r) => r.signed))
  // The cursor is written after each batch (up to a second after the last acknowledgement).
  const cursor = await until('the cursor reaches the last event', async () => {
    const last = (await s.sql('SELECT last_seq FROM webhook_destinations WHERE active'))[0]?.last_seq
    return last === seqs[N - 1] ? last : null
  })
  t.equal(cursor, seqs[N - 1], 'the cursor reached the last event')
})
