// Webhook events, model-based (the spec, Events; docs/design/webhooks.md): random sequences of events produced for
// real (sends closing: `notification.completed`; receipts: `delivery.received` / `delivery.clicked`), the customer's
// endpoint going down (5xx, no answer, connection refused) and coming back, time passing on the service's clock
// (the redelivery ladder), the destination disabled after consecutive failures and re-enabled from the dashboard,
// abandoned events replayed from the dashboard, the mode switched to `consulta` and back, the secret rotated.
//
// After every step the dispatcher is let run until it has nothing due, and the model says exactly what it did: the
// cursor, the head event's attempts, the failure streak, the disable, the abandoned events, `fila_pendente`, and
// how many requests the endpoint saw for each event. Whatever the model says, every request must verify with the
// destination's secret, carry one body and one X-PM-Evento-Id for all attempts of an event, a new X-PM-Entrega-Id
// each time, arrive in event order, one at a time, and be acknowledged at most once. At the end the endpoint comes
// back, the destination is re-enabled and every abandoned event replayed: every event produced must then have been
// acknowledged, the replayed ones with their original bodies.
//
// The ladder runs on the service's clock (a SkewedClock the model moves): its steps here are 5 min, 15 min and 1 h,
// so real time passing during a sequence never makes an attempt due by itself; attempts, timeouts aside, are as
// fast as the machine. maxAttempts 4 and disableAfter 3 stand for the spec's 30 and 20 (disable comes first).
//
// Short fixed-seed pass here; longer ones: `npm run fuzz -- --webhooks-model` (test/fuzz/README.md).
import fc from 'fast-check'
import t from 'tap'
import type { Webhook } from '../../src/core/config'
import { testCa } from '../fakes/tls'
import { type Received, WebhookReceiver } from '../fakes/webhook-receiver'
import { DashClient, makeOrg, makePerson, type Page } from '../helpers/dashboard'
import { startDelivery } from '../helpers/delivery'
import { checkModel, checkReached, fcmAccount, type ModelApp, modelApp, modelPass, SkewedClock } from '../helpers/model'
import { basic } from '../helpers/service'
import { Cut } from '../helpers/tcp-cut'

const FILE = 'test/integration/webhooks-model.test.ts'
const MIN = 60_000
const POLICY: Partial<Webhook> = {
  pollMs: 20,
  timeoutMs: 1_500,
  retryDelaysMs: [5 * MIN, 15 * MIN, 60 * MIN],
  maxAttempts: 4,
  disableAfter: 3,
}
const LADDER = POLICY.retryDelaysMs as number[]
const MAX_ATTEMPTS = POLICY.maxAttempts as number
const DISABLE_AFTER = POLICY.disableAfter as number
const DEVICES = 3
const MAX_SENDS = 3
const EMAIL = 'modelo@example.com'
const SENHA = 'uma-senha-bem-longa'

type Evento = 'recebido' | 'clique'
type Endpoint = 'up' | '5xx' | 'timeout' | 'refused'
type Delivery = Awaited<ReturnType<typeof startDelivery>>

interface World {
  d: Delivery
  clock: SkewedClock
  rx: WebhookReceiver
  /** Between the dispatcher and the receiver: cut, it refuses connections. */
  proxy: Cut
  proxyUp: boolean
  dash: DashClient
}

/** One event of the app's webhook queue, as written (seq, body) and what it reports (key). */
interface Ev {
  seq: string
  key: string
  evento: string
  body: Record<string, unknown>
}

interface SendM {
  id: string
  to: string[]
  arrived: Set<string>
  clicked: Set<string>
}

interface Model {
  w: World
  sends: SendM[]
  modo: 'webhook' | 'consulta'
  endpoint: Endpoint
  /** The app's webhook events in seq order; `cursor` indexes the next one to deliver. */
  queue: Ev[]
  cursor: number
  /** The destination's cursor before any event (a first destination starts after the app's newest event). */
  startSeq: string
  headAttempts: number
  consecutive: number
  disabled: boolean
  /** Service-clock time still to pass before the head event is due again (0: due now). */
  owedMs: number
  /** Abandoned and not replayed (the dashboard lists and replays them). */
  abandoned: Ev[]
  /** Replayed once already: a second replay is refused. */
  replayed: string[]
  /** Requests the endpoint must have seen, per X-PM-Evento-Id. */
  requests: Map<string, number>
  acked: Set<string>
  /** Every event reported, by key, produced or replayed: at the end each must have been acknowledged. */
  produced: Map<string, Ev>
  last?: { send: number; player: string; evento: Evento }
}

interface Real {
  a: ModelApp
  path: string
  appPath: string
}

type Cmd = fc.AsyncCommand<Model, Real>

const seen = new Map<string, number>()
const saw = (what: string, n = 1): void => {
  seen.set(what, (seen.get(what) ?? 0) + n)
}
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T
const delayAfter = (attempts: number): number => LADDER[Math.min(attempts, LADDER.length) - 1] as number

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await f()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Posts a form of the app page from a signed-in session, with the page's token; answers the POST (303 when done). */
async function dashAction(m: Model, r: Real, action: string, fields: Record<string, string> = {}): Promise<Page> {
  let page = await m.w.dash.get(r.appPath)
  // A session ends on the service's clock, which the model moves hours at a time: sign in again when it has.
  if (page.status === 303) {
    await signIn(m.w.dash)
    page = await m.w.dash.get(r.appPath)
  }
  return m.w.dash.post(`${r.appPath}/${action}`, { _csrf: DashClient.token(page), ...fields })
}

async function signIn(dash: DashClient): Promise<void> {
  if ((await dash.signIn(EMAIL, SENHA)).status !== 303) throw new Error('dashboard sign-in failed')
}

// ---- the model of the dispatcher -------------------------------------------------------------------------------

/** What the dispatcher must do once it is let run: deliver from the cursor while the head is due and the
 *  destination enabled (the spec's ladder: a failure waits its step; the n-th failure of an event abandons it and
 *  the next one goes at once; the k-th consecutive failure disables). */
function simulate(m: Model): void {
  while (!m.disabled && m.owedMs <= 0 && m.cursor < m.queue.length) {
    const ev = m.queue[m.cursor] as Ev
    if (m.endpoint !== 'refused') m.requests.set(ev.seq, (m.requests.get(ev.seq) ?? 0) + 1)
    if (m.endpoint === 'up') {
      m.acked.add(ev.seq)
      m.cursor++
      m.headAttempts = 0
      m.consecutive = 0
      saw('delivered')
      continue
    }
    saw(`failed (${m.endpoint})`)
    const n = m.headAttempts + 1
    m.consecutive++
    if (m.consecutive >= DISABLE_AFTER) {
      m.disabled = true
      saw('disabled')
    }
    if (n >= MAX_ATTEMPTS) {
      m.abandoned.push(ev)
      m.cursor++
      m.headAttempts = 0
      m.owedMs = 0
      saw('abandoned')
    } else {
      m.headAttempts = n
      m.owedMs = delayAfter(n)
    }
  }
}

interface DestRow {
  id: string
  last_seq: string
  head_attempts: number
  consecutive_failures: number
  next_at: Date
  disabled_at: Date | null
}

async function destination(m: Model, r: Real): Promise<DestRow> {
  const [row] = await m.w.d.s.sql<DestRow>(
    'SELECT id, last_seq, head_attempts, consecutive_failures, next_at, disabled_at FROM webhook_destinations WHERE app_id = $1 AND active',
    [r.a.app.id],
  )
  if (!row) throw new Error('no active destination')
  return row
}

/** Waits until the dispatcher has nothing due: disabled, the queue drained, or the head waiting for its time. */
async function quiet(m: Model, r: Real): Promise<DestRow> {
  return until('the dispatcher to have nothing due', async () => {
    const row = await destination(m, r)
    const [mx] = await m.w.d.s.sql<{ s: string }>(
      "SELECT COALESCE(max(seq), 0)::text AS s FROM events WHERE app_id = $1 AND canal = 'webhook'",
      [r.a.app.id],
    )
    const idle = row.disabled_at !== null || row.last_seq === mx?.s || row.next_at.getTime() > m.w.clock.now()
    return idle ? row : null
  })
}

function requestsOf(m: Model, r: Real): Received[] {
  return m.w.rx.on(r.path)
}

/** What holds of the requests whatever the model says. */
function checkRequests(m: Model, r: Real): void {
  const reqs = requestsOf(m, r)
  const bodyOf = new Map<string, string>()
  const entregas = new Set<string>()
  const acked = new Set<string>()
  let previous = 0n
  for (const q of reqs) {
    const id = q.headers['x-pm-evento-id'] as string
    const tag = `request for event ${id}`
    if (!q.signed) throw new Error(`${tag}: X-PM-Assinatura does not verify with the destination's secret`)
    const text = `${q.headers['x-pm-evento']} ${q.raw.toString()}`
    if ((bodyOf.get(id) ?? text) !== text) throw new Error(`${tag}: another body or X-PM-Evento than its earlier attempts`)
    bodyOf.set(id, text)
    if (q.headers['x-pm-canal'] !== 'webhook' || q.json?.canal !== 'webhook') throw new Error(`${tag}: canal is not webhook`)
    const entrega = q.headers['x-pm-entrega-id'] as string
    if (entregas.has(entrega)) throw new Error(`${tag}: X-PM-Entrega-Id ${entrega} used twice`)
    entregas.add(entrega)
    if (BigInt(id) < previous) throw new Error(`${tag}: arrived after event ${previous} (out of order)`)
    previous = BigInt(id)
    if (q.status === 200) {
      if (acked.has(id)) throw new Error(`${tag}: acknowledged twice`)
      acked.add(id)
    }
  }
  if (m.w.rx.maxInflight(r.path) > 1) throw new Error('two requests in flight at once for one destination')
}

/** After every step: let the dispatcher run, then compare it with the model. */
async function settle(m: Model, r: Real): Promise<void> {
  simulate(m)
  const row = await quiet(m, r)
  const want = {
    last_seq: m.cursor === 0 ? m.startSeq : (m.queue[m.cursor - 1] as Ev).seq,
    head_attempts: m.headAttempts,
    consecutive_failures: m.consecutive,
    disabled: m.disabled,
    waiting: m.owedMs > 0 && m.cursor < m.queue.length,
  }
  const got = {
    last_seq: row.last_seq,
    head_attempts: row.head_attempts,
    consecutive_failures: row.consecutive_failures,
    disabled: row.disabled_at !== null,
    waiting: row.next_at.getTime() > m.w.clock.now() && m.cursor < m.queue.length,
  }
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`destination: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`)
  }
  // The head's wait is exactly its ladder step after its last failed attempt.
  if (m.headAttempts > 0) {
    const head = (m.queue[m.cursor] as Ev).seq
    const [a] = await m.w.d.s.sql<{ n: number; at: Date; next_at: Date }>(
      'SELECT n, at, next_at FROM webhook_attempts WHERE destination_id = $1 AND event_seq = $2 ORDER BY n DESC LIMIT 1',
      [row.id, head],
    )
    if (!a || a.n !== m.headAttempts) throw new Error(`attempts of event ${head}: expected ${m.headAttempts}, got ${a?.n}`)
    const step = a.next_at.getTime() - a.at.getTime()
    if (step !== delayAfter(a.n)) throw new Error(`event ${head}: waits ${step} ms after attempt ${a.n}, not ${delayAfter(a.n)}`)
  }
  checkRequests(m, r)
  const perEvent = new Map<string, number>()
  for (const q of requestsOf(m, r))
    perEvent.set(q.headers['x-pm-evento-id'] as string, (perEvent.get(q.headers['x-pm-evento-id'] as string) ?? 0) + 1)
  const norm = (x: Map<string, number>) => JSON.stringify([...x].sort(([a], [b]) => Number(a) - Number(b)))
  if (norm(perEvent) !== norm(m.requests)) {
    throw new Error(`requests per event: expected ${norm(m.requests)}, got ${norm(perEvent)}`)
  }
  const acked = requestsOf(m, r)
    .filter((q) => q.status === 200)
    .map((q) => q.headers['x-pm-evento-id'] as string)
  if (acked.sort().join() !== [...m.acked].sort().join()) throw new Error(`acknowledged: expected ${[...m.acked]}, got ${acked}`)
  const ab = await m.w.d.s.sql<{ event_seq: string; attempts: number }>(
    'SELECT event_seq, attempts FROM webhook_abandoned WHERE app_id = $1 ORDER BY event_seq',
    [r.a.app.id],
  )
  const wantAb = m.abandoned.map((e) => e.seq).sort((x, y) => Number(x) - Number(y))
  if (ab.map((x) => x.event_seq).join() !== wantAb.join() || ab.some((x) => x.attempts !== MAX_ATTEMPTS)) {
    throw new Error(`abandoned: expected ${wantAb} (after ${MAX_ATTEMPTS} attempts), got ${JSON.stringify(ab)}`)
  }
  const conf = await m.w.d.s.call('GET', `/api/v1/confirmacoes?app_id=${r.a.app.id}`, { headers: basic(r.a.app.api_key) })
  const fila = m.queue.length - m.cursor
  if (conf.status !== 200 || conf.json.modo !== m.modo || conf.json.fila_pendente !== fila) {
    throw new Error(`GET /confirmacoes: expected modo ${m.modo}, fila_pendente ${fila}; got ${conf.status} ${conf.text}`)
  }
}

// ---- producing events ------------------------------------------------------------------------------------------

/** Reads the events written since the model's last one and checks they are exactly the expected ones, in order. */
async function learn(
  m: Model,
  r: Real,
  expected: Array<{ key: string; body: Record<string, unknown> }>,
  what: string,
): Promise<Ev[]> {
  const after = m.queue.length > 0 ? (m.queue[m.queue.length - 1] as Ev).seq : m.startSeq
  const rows = await m.w.d.s.sql<{ seq: string; evento: string; body: Record<string, unknown> }>(
    "SELECT seq, evento, body FROM events WHERE app_id = $1 AND canal = 'webhook' AND seq > $2 ORDER BY seq",
    [r.a.app.id, after],
  )
  const got = rows.map((x) => ({ seq: x.seq, key: keyOf(x.body), evento: x.evento, body: x.body }))
  const same = got.length === expected.length && got.every((g, i) => g.key === expected[i]?.key)
  if (!same) throw new Error(`${what}: expected events [${expected.map((e) => e.key)}], got [${got.map((g) => g.key)}]`)
  for (const [i, g] of got.entries()) {
    const e = expected[i] as { body: Record<string, unknown> }
    const { quando, ...rest } = g.body
    if (typeof quando !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/.test(quando))
      throw new Error(`${what}: quando ${quando}`)
    if (JSON.stringify(sorted(rest)) !== JSON.stringify(sorted(e.body))) {
      throw new Error(`${what}: body ${JSON.stringify(g.body)}, expected ${JSON.stringify(e.body)} (with quando)`)
    }
    if (g.evento !== g.body.evento) throw new Error(`${what}: evento column ${g.evento}, body ${g.body.evento}`)
  }
  m.queue.push(...got)
  return got
}

function sorted(o: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(o).sort(([a], [b]) => a.localeCompare(b))
}

function keyOf(body: Record<string, unknown>): string {
  return [body.evento, body.notification_id, body.player_id ?? ''].join(' ')
}

function deliveryEvent(r: Real, s: SendM, player: string, evento: string): { key: string; body: Record<string, unknown> } {
  const body = { evento, app_id: r.a.app.id, notification_id: s.id, player_id: player, canal: 'webhook' }
  return { key: keyOf(body), body }
}

async function receipt(m: Model, r: Real, si: number, player: string, evento: Evento): Promise<void> {
  const s = m.sends[si] as SendM
  const rcpt = r.a.proof(s.id, player)
  const a = await m.w.d.s.call('POST', '/api/v1/receipts', {
    body: { app_id: r.a.app.id, notification_id: s.id, player_id: player, rcpt, evento },
  })
  const expected: Array<{ key: string; body: Record<string, unknown> }> = []
  if (!s.arrived.has(player)) expected.push(deliveryEvent(r, s, player, 'delivery.received'))
  if (evento === 'clique' && !s.clicked.has(player)) expected.push(deliveryEvent(r, s, player, 'delivery.clicked'))
  const want = expected.length > 0 ? { ok: true } : { ok: true, duplicado: true }
  if (a.status !== 200 || JSON.stringify(a.json) !== JSON.stringify(want)) {
    throw new Error(`receipt ${evento}: expected ${JSON.stringify(want)}, got ${a.status} ${a.text}`)
  }
  s.arrived.add(player)
  if (evento === 'clique') s.clicked.add(player)
  m.last = { send: si, player, evento }
  for (const e of await learn(m, r, m.modo === 'webhook' ? expected : [], `receipt ${evento}`)) m.produced.set(e.key, e)
}

// ---- commands ----------------------------------------------------------------------------------------------------

function command(name: string, check: (m: Readonly<Model>) => boolean, run: (m: Model, r: Real) => Promise<void>): Cmd {
  return {
    check,
    async run(m, r) {
      saw(`command ${name.split('(')[0]}`)
      await run(m, r)
      await settle(m, r)
    },
    toString: () => name,
  }
}

const sendCmd = fc.integer({ min: 1, max: 2 ** DEVICES - 1 }).map((mask) =>
  command(
    `Send(${mask.toString(2).padStart(DEVICES, '0')})`,
    (m) => m.sends.length < MAX_SENDS,
    async (m, r) => {
      const to = r.a.players.filter((_, i) => mask & (1 << i))
      const { id } = await r.a.send(to)
      const s: SendM = { id, to, arrived: new Set(), clicked: new Set() }
      m.sends.push(s)
      const n = to.length
      const body = {
        evento: 'notification.completed',
        app_id: r.a.app.id,
        notification_id: id,
        successful: n,
        failed: 0,
        errored: 0,
        recipients: n,
        canal: 'webhook',
      }
      for (const e of await learn(m, r, m.modo === 'webhook' ? [{ key: keyOf(body), body }] : [], 'a send closing'))
        m.produced.set(e.key, e)
    },
  ),
)

const receiptCmd = fc.tuple(fc.nat(11), fc.nat(11), fc.constantFrom<Evento>('recebido', 'clique')).map(([si, di, evento]) =>
  command(
    `Receipt(send ${si}, device ${di}, ${evento})`,
    (m) => m.sends.length > 0,
    async (m, r) => {
      const k = si % m.sends.length
      await receipt(m, r, k, pick((m.sends[k] as SendM).to, di), evento)
    },
  ),
)

const sameAgainCmd = fc.constant(
  command(
    'SameReceiptAgain',
    (m) => m.last !== undefined,
    async (m, r) => {
      const l = m.last as NonNullable<Model['last']>
      await receipt(m, r, l.send, l.player, l.evento)
    },
  ),
)

async function setEndpoint(m: Model, r: Real, e: Endpoint, status = 500): Promise<void> {
  const w = m.w
  if (e === 'refused') {
    if (w.proxyUp) await w.proxy.cut()
    w.proxyUp = false
  } else {
    if (!w.proxyUp) await w.proxy.open()
    w.proxyUp = true
    w.rx.fallback(r.path, e === 'up' ? { status: 200 } : e === 'timeout' ? { hang: true } : { status })
  }
  m.endpoint = e
}

const downCmd = fc
  .tuple(fc.constantFrom<Endpoint>('5xx', '5xx', 'refused', 'refused', 'timeout'), fc.constantFrom(500, 502, 503))
  .map(([e, status]) =>
    command(
      e === '5xx' ? `EndpointDown(${status})` : `EndpointDown(${e})`,
      (m) => m.endpoint !== e,
      (m, r) => setEndpoint(m, r, e, status),
    ),
  )

const upCmd = fc.constant(
  command(
    'EndpointUp',
    (m) => m.endpoint !== 'up',
    (m, r) => setEndpoint(m, r, 'up'),
  ),
)

const advanceCmd = fc.constantFrom(5 * MIN, 15 * MIN, 60 * MIN).map((ms) =>
  command(
    `Advance(${ms / MIN} min)`,
    () => true,
    async (m) => {
      m.w.clock.advance(ms)
      m.owedMs = Math.max(0, m.owedMs - ms)
    },
  ),
)

async function enable(m: Model, r: Real): Promise<void> {
  const res = await dashAction(m, r, 'webhook/reativar')
  if (res.status !== 303) throw new Error(`re-enable: ${res.status} ${res.text.slice(0, 300)}`)
  m.disabled = false
  m.consecutive = 0
  m.owedMs = 0
}

const enableCmd = fc.constant(command('ReEnable', () => true, enable))

async function replay(m: Model, r: Real, ev: Ev): Promise<void> {
  const res = await dashAction(m, r, 'webhook/reenviar', { seq: ev.seq })
  if (res.status !== 303) throw new Error(`replay of ${ev.seq}: ${res.status} ${res.text.slice(0, 300)}`)
  m.abandoned = m.abandoned.filter((e) => e !== ev)
  m.replayed.push(ev.seq)
  saw('replayed')
  const { quando: _q, ...body } = ev.body
  const [again] = await learn(m, r, [{ key: ev.key, body }], `replay of ${ev.seq}`)
  if (JSON.stringify(again?.body) !== JSON.stringify(ev.body))
    throw new Error(`replay of ${ev.seq}: another body ${JSON.stringify(again?.body)}`)
}

const replayCmd = fc.nat(11).map((i) =>
  command(
    `Replay(abandoned ${i})`,
    (m) => m.abandoned.length > 0,
    (m, r) => replay(m, r, pick(m.abandoned, i)),
  ),
)

const replayAgainCmd = fc.nat(11).map((i) =>
  command(
    `ReplayAgain(${i})`,
    (m) => m.replayed.length > 0,
    async (m, r) => {
      const seq = pick(m.replayed, i)
      const res = await dashAction(m, r, 'webhook/reenviar', { seq })
      if (res.status !== 404) throw new Error(`a second replay of ${seq}: ${res.status}, expected 404`)
      await learn(m, r, [], `a second replay of ${seq}`)
    },
  ),
)

const modeCmd = fc.constantFrom<Model['modo']>('consulta', 'webhook').map((modo) =>
  command(
    `Mode(${modo})`,
    (m) => m.modo !== modo,
    async (m, r) => {
      const res = await m.w.d.s.call('PUT', '/api/v1/confirmacoes', {
        body: { app_id: r.a.app.id, modo },
        headers: basic(r.a.app.api_key),
      })
      if (res.status !== 200 || res.json.modo !== modo || res.json.segredo !== null)
        throw new Error(`PUT modo ${modo}: ${res.status} ${res.text}`)
      m.modo = modo
    },
  ),
)

/** A new secret (the same URL registered again): the new destination takes the queue over, head attempts included;
 *  its failure streak starts at 0 and it is due at once. */
const rotateCmd = fc.constant(
  command(
    'RotateSecret',
    () => true,
    async (m, r) => {
      const url = `https://127.0.0.1:${m.w.proxy.port}${r.path}`
      const res = await m.w.d.s.call('PUT', '/api/v1/confirmacoes', {
        body: { app_id: r.a.app.id, url },
        headers: basic(r.a.app.api_key),
      })
      if (res.status !== 200 || typeof res.json.segredo !== 'string') throw new Error(`PUT url: ${res.status} ${res.text}`)
      m.w.rx.secret(r.path, res.json.segredo)
      m.consecutive = 0
      m.disabled = false
      m.owedMs = 0
    },
  ),
)

/** The end of a sequence: the endpoint back, the destination re-enabled, every abandoned event replayed; then every
 *  event reported must have been acknowledged (its replay's acknowledgement counts for an abandoned one). */
async function drain(m: Model, r: Real): Promise<void> {
  await setEndpoint(m, r, 'up')
  await enable(m, r)
  await settle(m, r)
  while (m.abandoned.length > 0) {
    await replay(m, r, m.abandoned[0] as Ev)
    await settle(m, r)
  }
  const got = new Set(
    requestsOf(m, r)
      .filter((q) => q.status === 200)
      .map((q) => keyOf(q.json)),
  )
  const lost = [...m.produced.keys()].filter((k) => !got.has(k))
  if (lost.length > 0) throw new Error(`never acknowledged: ${lost.join('; ')}`)
  if (m.cursor !== m.queue.length) throw new Error(`the queue did not drain: ${m.queue.length - m.cursor} left`)
}

t.test('webhook events: random sequences against the model of the dispatcher', async (t) => {
  const pass = modelPass({ seed: 20261202, runs: 10, commands: 30 })
  const clock = new SkewedClock()
  const rx = await WebhookReceiver.start(t)
  const proxy = new Cut('127.0.0.1', rx.port)
  await proxy.open()
  t.teardown(() => proxy.cut())
  const d = await startDelivery(t, {
    clock,
    env: { PM_LIMIT_IP_PER_MIN: '0', PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    service: { roles: ['api', 'worker', 'dashboard'], webhookCa: testCa(), webhook: POLICY },
  })
  const org = await makeOrg(d.s, 'Modelo', 'pro')
  await makePerson(d.s, EMAIL, SENHA, org)
  const dash = new DashClient(d.s.dashboardUrl)
  await signIn(dash)
  const w: World = { d, clock, rx, proxy, proxyUp: true, dash }
  const fcm = fcmAccount(d)
  let run = 0

  const cmds = fc.commands(
    // Weighted by repetition: events, outages and time passing most; the operator's and the customer's moves less.
    [
      ...[sendCmd, sendCmd, receiptCmd, receiptCmd, receiptCmd, sameAgainCmd, downCmd, downCmd, upCmd, advanceCmd, advanceCmd],
      ...[enableCmd, replayCmd, replayAgainCmd, modeCmd, rotateCmd],
    ],
    { maxCommands: pass.maxCommands, size: 'max', replayPath: pass.replayPath },
  )
  const prop = fc.asyncProperty(cmds, async (seq) => {
    const n = run++
    if (!w.proxyUp) {
      await proxy.open()
      w.proxyUp = true
    }
    const app = await d.s.svc.deps.apps.create({ name: `Modelo ${n}`, orgId: org })
    const a = await modelApp(d, app, fcm, DEVICES, `wm${n}-${Math.random().toString(36).slice(2, 8)}`)
    const path = `/wm${n}-${Math.random().toString(36).slice(2, 8)}`
    const put = await d.s.call('PUT', '/api/v1/confirmacoes', {
      body: { app_id: app.id, url: `https://127.0.0.1:${proxy.port}${path}`, modo: 'webhook' },
      headers: basic(app.api_key),
    })
    if (put.status !== 200) throw new Error(`PUT: ${put.status} ${put.text}`)
    rx.secret(path, put.json.segredo)
    const real: Real = { a, path, appPath: `/apps/${app.id}` }
    const model: Model = {
      w,
      sends: [],
      modo: 'webhook',
      endpoint: 'up',
      queue: [],
      cursor: 0,
      startSeq: (await destination({ w } as Model, real)).last_seq,
      headAttempts: 0,
      consecutive: 0,
      disabled: false,
      owedMs: 0,
      abandoned: [],
      replayed: [],
      requests: new Map(),
      acked: new Set(),
      produced: new Map(),
    }
    await fc.asyncModelRun(() => ({ model, real }), seq)
    await drain(model, real)
  })
  if (await checkModel(t, FILE, pass, prop)) {
    checkReached(t, pass, seen, [
      ...['delivered', 'failed (5xx)', 'failed (refused)', 'failed (timeout)', 'disabled', 'abandoned', 'replayed'],
      ...['command ReplayAgain', 'command RotateSecret', 'command Mode', 'command SameReceiptAgain'],
    ])
  }
})
