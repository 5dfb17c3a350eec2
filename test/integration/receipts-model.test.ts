// Receipts, model-based (the spec, Receipts and Errors Receipts; docs/design/receipts.md): random sequences of sends
// really delivered to devices (fake FCM), receipts (`recebido`, `clique`) from devices that got them, the same
// receipt again, the clock jumping days ahead (the 90-day acceptance window, and its exact edge), the archival job
// folding old days (`tardio`), forged proofs, devices that were not in the send, plan changes and pauses. After every
// step the real read route (GET /api/v1/notifications/{id}) must agree with the model: each device counted at most
// once as received and once as clicked, never more than delivered, refusals and duplicates changing nothing.
//
// Short fixed-seed pass here; longer ones: `npm run fuzz -- --receipts-model` (test/fuzz/README.md).
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { DAY_MS } from '../../src/core/time'
import { startDelivery } from '../helpers/delivery'
import { checkModel, checkReached, fcmAccount, type ModelApp, modelApp, modelPass, SkewedClock } from '../helpers/model'
import { type Answer, basic } from '../helpers/service'

const FILE = 'test/integration/receipts-model.test.ts'
/** the spec, Limits: receipt acceptance window. */
const WINDOW_MS = 90 * DAY_MS
/** The archival job's production horizon (PM_RECEIPT_ARCHIVE_DAYS). */
const ARCHIVE_DAYS = 30
const DEVICES = 4
const MAX_SENDS = 4
/** Near the window's edge the writer's clock reads a little later than the model's: either answer is right there. */
const EDGE_SLACK_MS = 5_000

type Evento = 'recebido' | 'clique'
type Plan = 'free' | 'pro'
type Delivery = Awaited<ReturnType<typeof startDelivery>>

interface SendM {
  id: string
  to: string[]
  dueMs: number
  arrived: Set<string>
  clicked: Set<string>
}

interface World {
  d: Delivery
  clock: SkewedClock
  /** receipt_archive_state.archived_before: days before it are archived ('' while none is). Schema-wide. */
  watermark: string
}

interface Model {
  w: World
  sends: SendM[]
  plan: Plan
  paused: boolean
  last?: { send: number; player: string; evento: Evento }
  /** The send the step was about (read alone after it). */
  touched?: number
}

interface Real {
  a: ModelApp
}

type Cmd = fc.AsyncCommand<Model, Real>

/** What the pass exercised (answers by kind), printed at the end: a pass that never reached `tardio` or the window's
 *  edge proves little. */
const seen = new Map<string, number>()
const saw = (what: string): void => {
  seen.set(what, (seen.get(what) ?? 0) + 1)
}

const ymd = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T

function post(w: World, body: Record<string, unknown>): Promise<Answer> {
  return w.d.s.call('POST', '/api/v1/receipts', { body })
}

function receiptBody(r: Real, s: SendM, player: string, rcpt: string, evento: Evento): Record<string, unknown> {
  return { app_id: r.a.app.id, notification_id: s.id, player_id: player, rcpt, evento }
}

function proofOf(r: Real, s: SendM, player: string): string {
  const p = r.a.proof(s.id, player)
  if (!p) throw new Error(`the fake FCM delivered no proof of ${s.id} to ${player}`)
  return p
}

function assertRefused(a: Answer, what: string, paused: boolean): void {
  if (a.status !== 403) throw new Error(`${what}: expected 403, got ${a.status} ${a.text}`)
  const text = paused ? 'App pausado.' : 'Prova de recebimento inválida.'
  if (a.json?.errors?.[0] !== text) throw new Error(`${what}: expected "${text}", got ${a.text}`)
  const keys = Object.keys(a.json.explain ?? {})
    .sort()
    .join(',')
  if (keys !== 'causa,como_corrigir,request_id') throw new Error(`${what}: the 403 says more than the one wording: ${keys}`)
}

function same(a: Answer, want: Record<string, unknown>, what: string): void {
  if (a.status !== 200 || JSON.stringify(a.json) !== JSON.stringify(want)) {
    throw new Error(`${what}: expected 200 ${JSON.stringify(want)}, got ${a.status} ${a.text}`)
  }
}

/** A receipt whose proof is the device's own: the model says what it must answer, and counts it. */
async function presentReceipt(m: Model, r: Real, si: number, player: string, evento: Evento, what: string): Promise<void> {
  const s = m.sends[si] as SendM
  m.touched = si
  const age = m.w.clock.now() - s.dueMs
  const a = await post(m.w, receiptBody(r, s, player, proofOf(r, s, player), evento))
  if (m.paused) {
    saw('403 paused')
    return assertRefused(a, what, true)
  }
  const outside = age > WINDOW_MS
  const edge = !outside && age > WINDOW_MS - EDGE_SLACK_MS
  if (outside || (edge && a.status === 403)) {
    saw('403 outside the window')
    return assertRefused(a, `${what} (${(age / DAY_MS).toFixed(4)} days old)`, false)
  }
  const fresh = !s.arrived.has(player) || (evento === 'clique' && !s.clicked.has(player))
  const want: { ok: boolean; duplicado?: boolean; tardio?: boolean } = !fresh
    ? { ok: true, duplicado: true }
    : ymd(s.dueMs) < m.w.watermark
      ? { ok: true, tardio: true }
      : { ok: true }
  saw(want.duplicado ? 'duplicado' : want.tardio ? `tardio ${evento}` : `counted ${evento}`)
  same(a, want, `${what} (${(age / DAY_MS).toFixed(4)} days old, day ${ymd(s.dueMs)}, archived before ${m.w.watermark || '-'})`)
  s.arrived.add(player)
  if (evento === 'clique') s.clicked.add(player)
  m.last = { send: si, player, evento }
}

/** One send's read shape against the model. */
function compareShape(
  m: Model,
  s: SendM,
  j: Record<string, unknown> & { pm_metricas?: Record<string, unknown> },
  route: string,
): void {
  const delivered = s.to.length
  const want = {
    successful: delivered,
    failed: 0,
    errored: 0,
    remaining: 0,
    converted: s.clicked.size,
    recebidos: m.plan === 'free' ? null : s.arrived.size,
    cobertura: m.plan === 'free' ? null : Math.round((s.arrived.size / delivered) * 1000) / 10,
    gate: m.plan === 'free',
  }
  const got = {
    successful: j.successful,
    failed: j.failed,
    errored: j.errored,
    remaining: j.remaining,
    converted: j.converted,
    recebidos: j.recebidos,
    cobertura: j.pm_metricas?.cobertura_recibo_pct,
    gate: j.recebidos_gate !== undefined,
  }
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${route} ${s.id}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`)
  }
  // The invariants themselves, whatever the model says: nobody counted twice, never more than delivered.
  const converted = j.converted as number
  const recebidos = j.recebidos as number | null
  if (converted > delivered || (recebidos !== null && (recebidos > delivered || converted > recebidos))) {
    throw new Error(`${route} ${s.id}: counters beyond what was delivered: ${JSON.stringify(j)}`)
  }
}

/** After every step, through the real read routes: every send of the sequence in the list, and the send the step
 *  was about (else the newest) read alone. */
async function checkReads(m: Model, r: Real): Promise<void> {
  if (m.sends.length === 0) return
  const auth = { headers: basic(r.a.app.api_key) }
  const one = m.sends[m.touched ?? m.sends.length - 1] as SendM
  const [list, res] = await Promise.all([
    m.w.d.s.call('GET', `/api/v1/notifications?app_id=${r.a.app.id}&limit=50`, auth),
    m.w.d.s.call('GET', `/api/v1/notifications/${one.id}?app_id=${r.a.app.id}`, auth),
  ])
  m.touched = undefined
  for (const a of [list, res]) {
    if (m.paused && (a.status !== 403 || a.json?.errors?.[0] !== 'App pausado.'))
      throw new Error(`read of a paused app: ${a.status} ${a.text}`)
    if (!m.paused && a.status !== 200) throw new Error(`read: ${a.status} ${a.text}`)
  }
  if (m.paused) return
  compareShape(m, one, res.json, 'GET /notifications/{id}')
  const byId = new Map<string, Record<string, unknown>>(list.json.map((x: { id: string }) => [x.id, x]))
  if (byId.size !== m.sends.length) throw new Error(`GET /notifications: ${byId.size} sends, the sequence made ${m.sends.length}`)
  for (const s of m.sends) compareShape(m, s, byId.get(s.id) ?? {}, 'GET /notifications')
}

function command(name: string, check: (m: Readonly<Model>) => boolean, run: (m: Model, r: Real) => Promise<void>): Cmd {
  return {
    check,
    async run(m, r) {
      saw(`command ${name.split('(')[0]}`)
      await run(m, r)
      await checkReads(m, r)
    },
    toString: () => name,
  }
}

const hasSends = (m: Readonly<Model>): boolean => m.sends.length > 0

const sendCmd = fc.integer({ min: 1, max: 2 ** DEVICES - 1 }).map((mask) =>
  command(
    `Send(${mask.toString(2).padStart(DEVICES, '0')})`,
    (m) => m.sends.length < MAX_SENDS,
    async (m, r) => {
      const to = r.a.players.filter((_, i) => mask & (1 << i))
      const { id, dueMs } = await r.a.send(to)
      for (const p of to) if (!r.a.proof(id, p)) throw new Error(`send ${id}: the fake FCM got nothing for ${p}`)
      m.sends.push({ id, to, dueMs, arrived: new Set(), clicked: new Set() })
    },
  ),
)

const eventoArb = fc.constantFrom<Evento>('recebido', 'clique')

const receiptCmd = fc.tuple(fc.nat(11), fc.nat(11), eventoArb).map(([si, di, evento]) =>
  command(`Receipt(send ${si}, device ${di}, ${evento})`, hasSends, async (m, r) => {
    const k = si % m.sends.length
    const s = m.sends[k] as SendM
    await presentReceipt(m, r, k, pick(s.to, di), evento, 'receipt')
  }),
)

const duplicateCmd = fc.constant(
  command(
    'SameReceiptAgain',
    (m) => m.last !== undefined,
    async (m, r) => {
      const l = m.last as NonNullable<Model['last']>
      await presentReceipt(m, r, l.send, l.player, l.evento, 'the same receipt again')
    },
  ),
)

const advanceCmd = fc.constantFrom(1, 12, 31, 45).map((days) =>
  command(
    `Advance(${days} days)`,
    () => true,
    async (m) => {
      m.w.clock.advance(days * DAY_MS)
    },
  ),
)

/** The clock to just inside (a minute left) or just past (by a second) one send's window, and a receipt for it at
 *  once: accepted inside, the one 403 past (forward only: the clock never goes back). */
const edgeCmd = fc.tuple(fc.nat(11), fc.nat(11), fc.constantFrom('inside', 'past'), eventoArb).map(([si, di, side, evento]) => {
  const target = (m: Readonly<Model>): number => {
    const s = m.sends[si % m.sends.length] as SendM
    return s.dueMs + WINDOW_MS + (side === 'inside' ? -60_000 : 1_000)
  }
  return command(
    `EdgeOfWindow(send ${si}, device ${di}, ${side}, ${evento})`,
    (m) => hasSends(m) && target(m) > m.w.clock.now() + 1_000,
    async (m, r) => {
      m.w.clock.advance(target(m) - m.w.clock.now())
      const k = si % m.sends.length
      saw(`edge of the window (${side})`)
      await presentReceipt(m, r, k, pick((m.sends[k] as SendM).to, di), evento, `a receipt ${side} the window's edge`)
    },
  )
})

/** A send of the sequence whose day the job would fold now (the job creates and drops partitions: DDL, the
 *  slowest step of all, so it runs only when it changes something the model can see). */
const archivable = (m: Readonly<Model>): boolean => {
  const horizon = ymd(m.w.clock.now() - ARCHIVE_DAYS * DAY_MS)
  return m.sends.some((s) => ymd(s.dueMs) >= m.w.watermark && ymd(s.dueMs) < horizon)
}

const archiveCmd = fc.constant(
  command('ArchiveJob', archivable, async (m) => {
    const res = await m.w.d.s.svc.deps.receipts.archiveNow(ARCHIVE_DAYS)
    const want = ymd(m.w.clock.now() - ARCHIVE_DAYS * DAY_MS)
    // The watermark is the horizon's day, or a later one left by an earlier pass (it never moves back).
    if (res.before < want && res.before !== m.w.watermark) throw new Error(`archive: watermark ${res.before}, expected ${want}`)
    if (res.before < m.w.watermark) throw new Error(`archive: the watermark moved back from ${m.w.watermark} to ${res.before}`)
    m.w.watermark = res.before
  }),
)

type Forgery = 'flipped' | 'another device' | 'another send' | 'unknown send' | 'random'

const forgedCmd = fc
  .tuple(
    fc.nat(11),
    fc.nat(11),
    fc.constantFrom<Forgery>('flipped', 'another device', 'another send', 'unknown send', 'random'),
    eventoArb,
  )
  .map(([si, di, how, evento]) =>
    command(`Forged(send ${si}, device ${di}, ${how}, ${evento})`, hasSends, async (m, r) => {
      const s = pick(m.sends, si)
      m.touched = m.sends.indexOf(s)
      const player = pick(s.to, di)
      const own = proofOf(r, s, player)
      const body = receiptBody(r, s, player, own, evento)
      if (how === 'flipped') body.rcpt = `${own.slice(0, -1)}${own.endsWith('A') ? 'B' : 'A'}`
      else if (how === 'random') body.rcpt = 'x'.repeat(32)
      else if (how === 'unknown send') body.notification_id = randomUUID()
      else if (how === 'another device') {
        // Someone else's proof for the same send (or, alone in it, this proof presented as another device).
        const other = s.to.find((p) => p !== player)
        if (other) body.rcpt = proofOf(r, s, other)
        else
          body.player_id = pick(
            r.a.players.filter((p) => p !== player),
            di,
          )
      } else {
        // The device's own proof of one send presented for another send.
        const other = m.sends.find((x) => x !== s && x.to.includes(player))
        if (other) body.notification_id = other.id
        else body.rcpt = own.toLowerCase() === own ? own.toUpperCase() : own.toLowerCase()
      }
      saw(`403 forged (${how})`)
      assertRefused(await post(m.w, body), `forged (${how})`, m.paused)
    }),
  )

/** A device that was not in the send: it holds no proof of it, only its proofs of other sends or others' proofs. */
const notInSendCmd = fc.tuple(fc.nat(11), fc.nat(11), eventoArb).map(([si, di, evento]) => {
  return command(
    `NotInSend(send ${si}, device ${di}, ${evento})`,
    (m) => m.sends.some((s) => s.to.length < DEVICES),
    async (m, r) => {
      const open = m.sends.filter((s) => s.to.length < DEVICES)
      const s = pick(open, si)
      m.touched = m.sends.indexOf(s)
      const player = pick(
        r.a.players.filter((p) => !s.to.includes(p)),
        di,
      )
      const elsewhere = m.sends.find((x) => x.to.includes(player))
      const rcpt = elsewhere ? proofOf(r, elsewhere, player) : proofOf(r, s, pick(s.to, di))
      saw('403 not in the send')
      assertRefused(await post(m.w, receiptBody(r, s, player, rcpt, evento)), 'a device not in the send', m.paused)
    },
  )
})

const planCmd = fc.constantFrom<Plan>('free', 'pro').map((plan) =>
  command(
    `Plan(${plan})`,
    (m) => m.plan !== plan,
    async (m, r) => {
      await m.w.d.s.svc.deps.apps.setPlan(r.a.app.id, plan)
      m.plan = plan
    },
  ),
)

/** The app paused for one receipt (403 `App pausado.`, the reads too; nothing counted), then resumed: a pause left
 *  on would stall the rest of the sequence. */
const pauseCmd = fc.tuple(fc.nat(11), fc.nat(11), eventoArb).map(([si, di, evento]) =>
  command(`PausedFor(send ${si}, device ${di}, ${evento})`, hasSends, async (m, r) => {
    const k = si % m.sends.length
    await m.w.d.s.svc.deps.apps.setPaused(r.a.app.id, true)
    m.paused = true
    await presentReceipt(m, r, k, pick((m.sends[k] as SendM).to, di), evento, 'a receipt while the app is paused')
    await checkReads(m, r)
    await m.w.d.s.svc.deps.apps.setPaused(r.a.app.id, false)
    m.paused = false
  }),
)

t.test('receipts: random sequences against the model, checked through the read route after every step', async (t) => {
  const pass = modelPass({ seed: 20261207, runs: 12, commands: 30 })
  const clock = new SkewedClock()
  // Reads are not cached (PM_READ_CACHE_MS=0: the spec lets a repeat read within a second be stale); no per-IP limit.
  const d = await startDelivery(t, { clock, env: { PM_LIMIT_IP_PER_MIN: '0', PM_READ_CACHE_MS: '0' } })
  const [st] = await d.s.sql<{ b: string | null }>('SELECT archived_before::text AS b FROM receipt_archive_state')
  const w: World = { d, clock, watermark: st?.b ?? '' }
  const fcm = fcmAccount(d)
  let run = 0

  const cmds = fc.commands(
    // Weighted by repetition: receipts are what the model is about; the rest sets the stage for them.
    [
      ...[sendCmd, sendCmd, receiptCmd, receiptCmd, receiptCmd, receiptCmd, receiptCmd, duplicateCmd],
      ...[advanceCmd, advanceCmd, edgeCmd, archiveCmd, archiveCmd, forgedCmd, notInSendCmd, planCmd, pauseCmd],
    ],
    { maxCommands: pass.maxCommands, size: 'max', replayPath: pass.replayPath },
  )
  const prop = fc.asyncProperty(cmds, async (seq) => {
    const n = run++
    const app = await d.s.createApp()
    await d.s.svc.deps.apps.setPlan(app.id, 'pro')
    const a = await modelApp(d, app, fcm, DEVICES, `rm${n}-${Math.random().toString(36).slice(2, 8)}`)
    await fc.asyncModelRun(() => ({ model: { w, sends: [], plan: 'pro', paused: false } as Model, real: { a } }), seq)
  })
  if (await checkModel(t, FILE, pass, prop)) {
    checkReached(t, pass, seen, [
      ...['counted recebido', 'counted clique', 'duplicado', 'tardio', '403 outside the window', '403 forged'],
      ...['403 not in the send', '403 paused', 'edge of the window (inside)', 'edge of the window (past)'],
    ])
  }
})
