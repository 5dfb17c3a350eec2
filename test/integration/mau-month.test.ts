// The free-plan allowance's month turns at the business zone's midnight (src/core/business-time.ts: fixed UTC-03:00), the
// instant the statistics' days turn too (docs/decisions.md, "One business time zone").
import t, { type Test } from 'tap'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const at = (iso: string): number => Date.parse(iso)

async function register(s: TestService, app: App, identifier: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })
  if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
  // Only a device shown to be real counts (mau-proof.test.ts): marked as a provider's first acceptance would mark it.
  await s.sql('UPDATE devices SET push_accepted_at = last_active WHERE id = $1', [r.json.id])
  return r.json.id
}

const send = (s: TestService, app: App, player: string) =>
  s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'oi' }, include_player_ids: [player] },
    headers: basic(app.api_key),
  })

/** A free-plan service whose allowance is 0, so every measured device shows in the refusal's `mau`. */
async function freeService(t: Test, clock: FakeClock): Promise<{ s: TestService; app: App }> {
  const s = await startService(t, { clock, limits: { freeMau: 0 } })
  return { s, app: await s.createApp() }
}

t.test('a device active at 2026-01-31T23:30-03:00 (02:30Z on 1 February) counts in January', async (t) => {
  const clock = new FakeClock(at('2026-01-15T12:00:00-03:00'))
  const { s, app } = await freeService(t, clock)
  await register(s, app, 'mid-january')
  clock.ms = at('2026-01-31T23:30:00-03:00')
  t.equal(clock.ms, at('2026-02-01T02:30:00Z'))
  const late = await register(s, app, 'last-half-hour-of-january')

  const accepted = await send(s, app, late)
  t.equal(accepted.status, 200, 'no measurement yet: the send goes')
  const stats = await s.call(
    'GET',
    `/api/v1/notifications/stats?app_id=${app.id}&desde=2026-01-31T00:00:00-03:00&ate=2026-02-02T00:00:00-03:00`,
    {
      headers: basic(app.api_key),
    },
  )
  t.same(
    stats.json.por_dia.map((d: { dia: string }) => d.dia),
    ['2026-01-31'],
    'por_dia puts the send on 31 January',
  )

  await s.svc.deps.sends.mau.measureNow()
  const refused = await send(s, app, late)
  t.equal(refused.status, 422, refused.text)
  t.equal(refused.json.explain.mes_medido, '2026-01', 'the month measured at that instant is January')
  t.equal(refused.json.explain.mau, 2, "both of January's devices count, the late one included")
})

t.test('February starts at 2026-02-01T00:00-03:00: the last half hour of January is not in it', async (t) => {
  const clock = new FakeClock(at('2026-01-31T23:30:00-03:00'))
  const { s, app } = await freeService(t, clock)
  await register(s, app, 'last-half-hour-of-january')
  clock.ms = at('2026-02-01T00:30:00-03:00')
  const early = await register(s, app, 'first-hour-of-february')

  await s.svc.deps.sends.mau.measureNow()
  const refused = await send(s, app, early)
  t.equal(refused.status, 422, refused.text)
  t.equal(refused.json.explain.mes_medido, '2026-02')
  t.equal(refused.json.explain.mau, 1, "only February's device counts")
})
