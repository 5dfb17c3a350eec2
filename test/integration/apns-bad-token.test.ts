// APNs BadDeviceToken judged per app over its recent APNs answers (src/delivery/bad-tokens.ts): a dead token is
// marked dead on a one-device send once the app's environment is confirmed by a success, and sandbox tokens sent
// to production (every answer BadDeviceToken) mark none and name the environment problem.
import t from 'tap'
import { type App, startDelivery } from '../helpers/delivery'
import { basic, FakeClock } from '../helpers/service'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

const ios = (d: Delivery, app: App, token: string) => d.device(app, token, { device_type: 0, transporte: 'apns' })

/** The device as the API reads it (GET /api/v1/players/{id}). */
async function readDevice(d: Delivery, app: App, id: string): Promise<Record<string, unknown>> {
  const r = await d.s.call('GET', `/api/v1/players/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (r.status !== 200) throw new Error(`read device: ${r.status} ${r.text}`)
  return r.json
}

/** The judgement runs when the actor finishes the send, just after the outcome batch closed it: poll for it. */
async function settle<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 10_000): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await read()
    if (done(v) || Date.now() > until) return v
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function problemOf(d: Delivery, sendId: string): Promise<string | null> {
  return settle(
    async () => ((await d.s.sql('SELECT problem FROM sends WHERE id = $1', [sendId]))[0]?.problem ?? null) as string | null,
    (p) => p !== null,
  )
}

/** Sends to one device and waits for the send to be closed and judged (a problem, or the device marked dead). */
async function sendOne(
  d: Delivery,
  app: App,
  id: string,
): Promise<{ row: Record<string, unknown>; invalid: boolean; problem: string | null }> {
  const sendId = await d.send(app, { include_player_ids: [id] })
  const row = await d.closed(sendId)
  const v = await settle(
    async () => ({
      invalid: (await readDevice(d, app, id)).invalid_identifier as boolean,
      problem: ((await d.s.sql('SELECT problem FROM sends WHERE id = $1', [sendId]))[0]?.problem ?? null) as string | null,
    }),
    (x) => x.invalid || x.problem !== null,
  )
  return { row, ...v }
}

t.test('a one-device send to a dead token, in an app that delivered recently, marks it dead', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.apnsFor(app)
  d.apns.script('dead-1', 'bad-device-token')
  const live = await ios(d, app, 'live-1')
  const dead = await ios(d, app, 'dead-1')
  t.equal((await d.closed(await d.send(app, { include_player_ids: [live] }))).successful, 1)

  const r = await sendOne(d, app, dead)
  t.equal(r.row.failed, 1)
  t.equal(r.invalid, true, 'one BadDeviceToken of one answer: dead, since the app was just delivered to in this environment')
  t.equal(r.problem, null, 'no environment problem named')
  t.equal((await readDevice(d, app, live)).invalid_identifier, false)
  const [dev] = await d.s.sql('SELECT invalid_reason FROM devices WHERE id = $1', [dead])
  t.equal(dev?.invalid_reason, 'BadDeviceToken')

  // Dead, it leaves every audience: the next send to it attempts nothing.
  const before = d.apns.requests.length
  t.equal((await d.closed(await d.send(app, { include_player_ids: [live, dead] }))).successful, 1)
  t.equal(d.apns.requests.filter((x, i) => i >= before && x.token === 'dead-1').length, 0, 'not attempted again')
})

t.test('sandbox tokens sent to production: every answer is BadDeviceToken, none is marked, the problem is named', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.apnsFor(app) // production, and the fake plays production
  // Another app delivers fine meanwhile: evidence is per app, it confirms nothing for this one.
  const other = await d.s.createApp()
  await d.apnsFor(other)
  const fine = await ios(d, other, 'other-live')
  t.equal((await d.closed(await d.send(other, { include_player_ids: [fine] }))).successful, 1)

  const ids: string[] = []
  for (let i = 0; i < 3; i++) {
    d.apns.registerDevice(`dev-build-${i}`, { environment: 'sandbox' }) // tokens of a build run from the IDE
    ids.push(await ios(d, app, `dev-build-${i}`))
  }
  for (const id of ids) {
    const r = await sendOne(d, app, id)
    t.equal(r.row.failed, 1)
    t.equal(r.invalid, false, 'a one-device send to a sandbox token: kept')
    t.match(
      r.problem,
      /^apns_ambiente_suspeito:BadDeviceToken em 1 de 1 respostas do envio; nas últimas 24 h o app teve 0 aceitas/,
    )
  }
  const all = await d.send(app, { include_player_ids: ids })
  t.equal((await d.closed(all)).failed, 3)
  t.match(await problemOf(d, all), /apns_ambiente_suspeito:BadDeviceToken em 3 de 3/)
  const dead = await d.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = ANY($1) AND invalid_identifier', [ids])
  t.equal(dead[0]?.n, 0, 'the iOS base is not wiped over an environment problem')
})

t.test('successes in production do not confirm a credential switched to sandbox', async (t) => {
  // Credentials re-read on every delivery: the switch is effective at the next send.
  const d = await startDelivery(t, { env: { PM_CREDENTIAL_CACHE_MS: '0' } })
  const app = await d.s.createApp()
  await d.apnsFor(app)
  d.apns.registerDevice('store-1', { environment: 'production' })
  d.apns.registerDevice('store-2', { environment: 'production' })
  const a = await ios(d, app, 'store-1')
  const b = await ios(d, app, 'store-2')
  t.equal((await d.closed(await d.send(app, { include_player_ids: [a, b] }))).successful, 2)

  // The credential is set to sandbox by mistake: the store build's tokens all answer BadDeviceToken now.
  d.apns.setEnvironment('sandbox')
  await d.apnsFor(app, 'sandbox')
  const r = await sendOne(d, app, a)
  t.equal(r.row.failed, 1)
  t.equal(r.invalid, false, "production's successes say nothing of the sandbox environment")
  t.match(r.problem, /apns_ambiente_suspeito:.*0 aceitas e 1 BadDeviceToken \(sandbox\)/)
})

t.test('no recent success: a BadDeviceToken is not enough, until successes confirm the environment', async (t) => {
  const clock = new FakeClock()
  const d = await startDelivery(t, { clock })
  const app = await d.s.createApp()
  await d.apnsFor(app)
  d.apns.script('dead-2', 'bad-device-token')
  const live = [await ios(d, app, 'live-2'), await ios(d, app, 'live-3'), await ios(d, app, 'live-4')]
  const dead = await ios(d, app, 'dead-2')
  t.equal((await d.closed(await d.send(app, { include_player_ids: live }))).successful, 3)

  clock.advance(25 * 3_600_000) // those successes are now older than the 24-hour window
  const first = await sendOne(d, app, dead)
  t.equal(first.invalid, false, 'nothing confirms the environment: kept')
  t.match(first.problem, /apns_ambiente_suspeito:.*0 aceitas e 1 BadDeviceToken \(production\)/)

  // The app delivers again: 3 accepted and 2 BadDeviceToken (the kept token's two answers) in the window, 40%.
  t.equal((await d.closed(await d.send(app, { include_player_ids: live }))).successful, 3)
  const second = await sendOne(d, app, dead)
  t.equal(second.invalid, true, 'successes within the window confirm the environment: dead')
  t.equal(second.problem, null)
})
