// The free-plan allowance cannot be spent by strangers (issue #31, point 5; docs/decisions.md "Monthly active users:
// only devices shown to be real"). Anyone may register any token to an app's public app_id; a device counts toward the
// monthly active users only once a provider accepted a push to its token or it returned a delivery receipt. A flood of
// fake registrations through the real public route then no longer blocks the organisation's sends; real devices count.
import t from 'tap'
import { measureMau } from '../../src/sends/mau'
import { startDelivery } from '../helpers/delivery'
import { basic, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type World = Awaited<ReturnType<typeof startDelivery>>
type App = Awaited<ReturnType<TestService['createApp']>>

/** Registers `n` devices through POST /api/v1/players, `width` at a time; answers their player ids. */
async function register(s: TestService, app: App, prefix: string, n: number, width = 25): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i += width) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(width, n - i) }, (_, k) =>
        s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: `${prefix}-${i + k}` } }),
      ),
    )
    for (const r of batch) {
      if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
      ids.push(r.json.id)
    }
  }
  return ids
}

const sendTo = (w: World, app: App, body: Record<string, unknown>) =>
  w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'oi' }, ...body },
    headers: basic(app.api_key),
  })

/** The periodic measurement, run now (the job's own statement; its lock would skip a second run within the period). */
async function measured(w: World, app: App): Promise<number | undefined> {
  await measureMau(w.s.svc.deps.db, new Date(w.s.svc.deps.clock()))
  w.s.svc.deps.sends.mau.forget()
  const [row] = await w.s.sql<{ mau: number }>('SELECT m.mau FROM org_mau m JOIN apps a ON a.org_id = m.org_id WHERE a.id = $1', [
    app.id,
  ])
  return row?.mau
}

t.test(
  '1,001 fake registrations do not spend the allowance: the real send goes, and a send to them proves nothing',
  async (t) => {
    const w = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0' } })
    t.equal(w.s.cfg.limits.freeMau, 1_000, "the spec's allowance")
    const app = await w.s.createApp()
    await w.fcmFor(app)
    const real = await register(w.s, app, 'real-token', 3)
    const first = await sendTo(w, app, { include_player_ids: real })
    t.equal(first.status, 200, first.text)
    await w.closed(first.json.id)

    // Anyone, from outside, with nothing but the public app_id.
    const fake = await register(w.s, app, 'fake-token', 1_001)
    t.equal(fake.length, 1_001)
    t.equal(await measured(w, app), 3, 'the organisation has 3 monthly active users, not 1,004')
    const after = await sendTo(w, app, { include_player_ids: real })
    t.equal(after.status, 200, `the real send is not refused: ${after.text}`)

    // The organisation sends to everyone: FCM refuses the fake tokens, so none of them becomes real.
    w.fcm.script(/^fake-token-/, 'unregistered')
    const all = await sendTo(w, app, { included_segments: ['Subscribed Users'] })
    t.equal(all.status, 200, all.text)
    const closed = await w.closed(all.json.id, 60_000)
    t.equal(closed.successful, 3)
    t.equal(closed.failed, 1_001)
    t.equal(await measured(w, app), 3, 'still 3')
    t.equal((await sendTo(w, app, { include_player_ids: real })).status, 200)
  },
)

t.test('real devices still count: a push a provider accepted, or a delivery receipt', async (t) => {
  const w = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0' }, service: { limits: { freeMau: 2 } } })
  const app = await w.s.createApp()
  await w.fcmFor(app)
  const [a, b, c] = await register(w.s, app, 'device', 3)
  t.equal(await measured(w, app), 0, 'registered only: nobody counts yet')

  const first = await sendTo(w, app, { include_player_ids: [a, b] })
  t.equal(first.status, 200, first.text)
  await w.closed(first.json.id)
  t.equal(await measured(w, app), 2, 'the two devices FCM accepted a push for count')
  t.equal((await sendTo(w, app, { include_player_ids: [c] })).status, 200, 'at the allowance, not above it')

  // A device known from before the mark (no accepted push on record) shows it is real with a receipt.
  const second = await sendTo(w, app, { include_player_ids: [c] })
  await w.closed(second.json.id)
  await w.s.sql('UPDATE devices SET push_accepted_at = NULL WHERE id = $1', [c])
  t.equal(await measured(w, app), 2, 'c unmarked')
  const pushed = w.fcm.delivered.find((m) => m.target === 'device-2' && m.body.message.data.pm_msg_id === second.json.id)
  const receipt = await w.s.call('POST', '/api/v1/receipts', {
    body: { app_id: app.id, notification_id: second.json.id, player_id: c, rcpt: pushed?.body.message.data.pm_rcpt },
  })
  t.equal(receipt.status, 200, receipt.text)
  await until('the receipt is written', async () => {
    const [row] = await w.s.sql<{ at: Date | null }>('SELECT last_receipt_at AS at FROM devices WHERE id = $1', [c])
    return row?.at
  })
  t.equal(await measured(w, app), 3, 'the receipt makes c count')

  const refused = await sendTo(w, app, { include_player_ids: [a] })
  t.equal(refused.status, 422, 'above the allowance: the whole send is refused')
  t.match(refused.json.explain, { mau_gratis: 2, mau: 3 })
  t.match(refused.json.errors[0], /^Plano gratuito acima de 2 usuários ativos mensais \(3 em \d{4}-\d\d\); envio recusado\.$/)
})
