// The model of a send's life and the commands that drive the real system (world.ts) in random order: sends to
// listed devices and to segments (due now, in the past, in 1-3 s, or in minutes), a worker stopped and another
// started, a second worker joining or leaving, every Redis key of the deployment deleted, a sweep run now, a device
// registered, and real time passing. After every command the invariants (invariants.ts) are checked against the
// model, through the read route and what the fake FCM accepted.
//
// There is no cancellation: the spec has no route that cancels a send (no DELETE of a notification), so no command
// cancels one.
import fc from 'fast-check'
import { checkStep } from './invariants'
import { APPS, type Behaviour, type Device, type World } from './world'

export type WhenKind = 'now' | 'past' | 'soon' | 'later'

/** When a send is due: now (no send_after), `ms` ago, or `ms` ahead. */
export interface When {
  kind: WhenKind
  ms: number
}

export interface Closed {
  completedAt: number
  successful: number
  failed: number
  errored: number
  recipients: number
}

export interface ModelSend {
  /** Its place in the run (send #n in the timeline). */
  n: number
  id: string
  app: number
  when: WhenKind
  /** Epoch ms: send_after, or when the send was made. */
  dueMs: number
  /** The devices listed (include_player_ids); null for a segment send. */
  list: Device[] | null
  segment: string | null
  /** A segment send: the app's devices when it was accepted (every one is reachable). */
  before: Device[]
  /** When the send was made (epoch ms). */
  madeAt: number
  /** A worker was stopped or Redis emptied while the send was open: a device may get it twice. */
  crashed: boolean
  /** Devices that got it twice with no such crash, judged once the run is over (settle in invariants.ts). */
  twice: string | null
  /** The read shape when the send was first seen closed; it must never change afterwards. */
  closed: Closed | null
}

export interface Model {
  sends: ModelSend[]
  workers: number
  /** Commands run so far. */
  commands: number
  /** Scheduled sends made more than 2 s after a worker last read their stream (the sweeper once skipped those
   *  forever: it took their creation for a hand-off still waiting unread). */
  scheduledAfterRead: number
  crashes: number
}

const SEGMENTS = ['Subscribed Users', 'Total Subscriptions', 'Active Users', 'Engaged Users'] as const
/** Nobody has sent a receipt in a run, so this segment reaches nobody. */
const NOBODY = 'Engaged Users'

/** A command: acts on the real system, updates the model, then checks every invariant. */
abstract class Step implements fc.AsyncCommand<Model, World> {
  check(_m: Readonly<Model>): boolean {
    return true
  }

  async run(m: Model, w: World): Promise<void> {
    w.note(this.toString())
    m.commands++
    await this.act(m, w)
    await checkStep(m, w)
  }

  abstract act(m: Model, w: World): Promise<void>
  abstract toString(): string
}

function whenText(w: When): string {
  return w.kind === 'now' ? 'now' : w.kind === 'past' ? `${w.ms} ms ago` : `in ${w.ms} ms`
}

/** Sets send_after on the body; answers when the send is due. */
function schedule(body: Record<string, unknown>, when: When, now: number): number {
  if (when.kind === 'now') return now
  const at = when.kind === 'past' ? now - when.ms : now + when.ms
  body.send_after = new Date(at).toISOString()
  return at
}

/** Every open send may now be delivered twice to a device (a crash while it was open). */
function crash(m: Model): void {
  m.crashes++
  for (const s of m.sends) if (!s.closed) s.crashed = true
}

/**
 * A scheduled send made more than 2 s (the sweeper's allowance for clock skew) after the workers last read its app's
 * stream: the sweeper of 79a0b98 took its creation for a hand-off still waiting unread, and skipped it forever.
 */
async function afterRead(w: World, app: number, when: When, madeAt: number): Promise<boolean> {
  if (when.kind !== 'soon') return false
  const last = await w.lastRead(app)
  return last > 0 && madeAt > last + 2_000
}

class ListSend extends Step {
  constructor(
    readonly app: number,
    readonly picks: number[],
    readonly when: When,
    readonly transactional: boolean,
  ) {
    super()
  }

  async act(m: Model, w: World): Promise<void> {
    const all = w.devices[this.app] as Device[]
    const list = [...new Set(this.picks.map((i) => all[i % all.length] as Device))]
    const body: Record<string, unknown> = {
      include_player_ids: list.map((d) => d.id),
      priority: this.transactional ? 'transactional' : 'marketing',
    }
    const madeAt = Date.now()
    const dueMs = schedule(body, this.when, madeAt)
    const r = await w.send(this.app, body)
    if (r.status !== 200 || typeof r.json.id !== 'string' || r.json.recipients !== list.length) {
      throw new Error(`a send to ${list.length} registered devices answered ${r.status} ${r.text}`)
    }
    if (await afterRead(w, this.app, this.when, madeAt)) m.scheduledAfterRead++
    const n = m.sends.length + 1
    m.sends.push({
      n,
      id: r.json.id,
      app: this.app,
      when: this.when.kind,
      dueMs,
      madeAt,
      list,
      segment: null,
      before: [],
      crashed: false,
      twice: null,
      closed: null,
    })
    w.note(`  send #${n} ${r.json.id} to ${list.map((d) => d.token).join(', ')}`)
  }

  toString(): string {
    return `ListSend(app ${this.app}, devices [${this.picks}], ${whenText(this.when)}, ${this.transactional ? 'transactional' : 'marketing'})`
  }
}

class SegmentSend extends Step {
  constructor(
    readonly app: number,
    readonly segment: string,
    readonly when: When,
  ) {
    super()
  }

  async act(m: Model, w: World): Promise<void> {
    const before = [...(w.devices[this.app] as Device[])]
    const body: Record<string, unknown> = { included_segments: [this.segment] }
    const madeAt = Date.now()
    const dueMs = schedule(body, this.when, madeAt)
    const r = await w.send(this.app, body)
    const expected = this.segment === NOBODY ? 0 : before.length
    if (r.status !== 200 || r.json.recipients !== expected || (expected === 0) !== (r.json.id === '')) {
      throw new Error(`a send to "${this.segment}" (${expected} reachable devices) answered ${r.status} ${r.text}`)
    }
    if (expected === 0) return // the nobody-reachable answer stores nothing
    if (await afterRead(w, this.app, this.when, madeAt)) m.scheduledAfterRead++
    const n = m.sends.length + 1
    m.sends.push({
      n,
      id: String(r.json.id),
      app: this.app,
      when: this.when.kind,
      dueMs,
      madeAt,
      list: null,
      segment: this.segment,
      before,
      crashed: false,
      twice: null,
      closed: null,
    })
    w.note(`  send #${n} ${r.json.id} to ${before.length} devices`)
  }

  toString(): string {
    return `SegmentSend(app ${this.app}, "${this.segment}", ${whenText(this.when)})`
  }
}

/** A worker stops (graceful: what is in flight finishes) and another starts, at once or after a gap. */
class KillWorker extends Step {
  constructor(
    readonly which: number,
    readonly gapMs: number,
  ) {
    super()
  }

  override check(m: Readonly<Model>): boolean {
    return m.workers >= 1
  }

  async act(m: Model, w: World): Promise<void> {
    crash(m)
    await w.stopWorker(this.which % w.workers.length)
    if (this.gapMs > 0) await sleep(this.gapMs)
    await w.startWorker()
  }

  toString(): string {
    return `KillWorker(#${this.which}, restart after ${this.gapMs} ms)`
  }
}

/** A second worker joins (partitions are shared out) or, when there are two, one of them stops. */
class SecondWorker extends Step {
  async act(m: Model, w: World): Promise<void> {
    if (m.workers === 1) {
      await w.startWorker()
      m.workers = 2
      return
    }
    crash(m)
    await w.stopWorker(0)
    m.workers = 1
  }

  toString(): string {
    return 'SecondWorker(join or leave)'
  }
}

class EmptyRedis extends Step {
  async act(m: Model, w: World): Promise<void> {
    crash(m)
    w.note(`  ${await w.emptyRedis()} keys deleted`)
  }

  toString(): string {
    return 'EmptyRedis()'
  }
}

class SweepNow extends Step {
  async act(_m: Model, w: World): Promise<void> {
    w.note(`  ${await w.sweep()} sends enqueued`)
  }

  toString(): string {
    return 'SweepNow()'
  }
}

class Wait extends Step {
  constructor(readonly ms: number) {
    super()
  }

  async act(): Promise<void> {
    await sleep(this.ms)
  }

  toString(): string {
    return `Wait(${this.ms} ms)`
  }
}

class RegisterDevice extends Step {
  constructor(
    readonly app: number,
    readonly behaviour: Behaviour,
  ) {
    super()
  }

  async act(_m: Model, w: World): Promise<void> {
    const d = await w.register(this.app, this.behaviour)
    w.note(`  ${d.token} ${d.id}`)
  }

  toString(): string {
    return `RegisterDevice(app ${this.app}, ${this.behaviour})`
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

const app = fc.nat(APPS - 1)
const when: fc.Arbitrary<When> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'now' as const, ms: 0 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 120_000 }).map((ms) => ({ kind: 'past' as const, ms })) },
  { weight: 3, arbitrary: fc.integer({ min: 1_000, max: 3_000 }).map((ms) => ({ kind: 'soon' as const, ms })) },
  { weight: 1, arbitrary: fc.integer({ min: 10 * 60_000, max: 30 * 60_000 }).map((ms) => ({ kind: 'later' as const, ms })) },
)

/** One command, weighted: sends and waits are common, crashes rarer. */
export const commandArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(app, fc.uniqueArray(fc.nat(15), { minLength: 1, maxLength: 4 }), when, fc.boolean())
      .map(([a, picks, w, tx]) => new ListSend(a, picks, w, tx)),
  },
  { weight: 3, arbitrary: fc.tuple(app, fc.constantFrom(...SEGMENTS), when).map(([a, s, w]) => new SegmentSend(a, s, w)) },
  { weight: 4, arbitrary: fc.integer({ min: 200, max: 2_000 }).map((ms) => new Wait(ms)) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(1), fc.constantFrom(0, 0, 500, 1_500)).map(([i, gap]) => new KillWorker(i, gap)) },
  { weight: 1, arbitrary: fc.constant(new SecondWorker()) },
  { weight: 1, arbitrary: fc.constant(new EmptyRedis()) },
  { weight: 1, arbitrary: fc.constant(new SweepNow()) },
  {
    weight: 1,
    arbitrary: fc.tuple(app, fc.constantFrom<Behaviour>('ok', 'ok', 'slow', 'failing')).map(([a, b]) => new RegisterDevice(a, b)),
  },
)

export function initialModel(): Model {
  return { sends: [], workers: 1, commands: 0, scheduledAfterRead: 0, crashes: 0 }
}
