// One fuzz case against the running service, and the invariants it must keep:
//   - no exception escapes a uWS callback and no rejection goes unhandled (today either ends the process);
//   - never a 5xx (there is no outage during a fuzz run, so not even a 503);
//   - an answer (only absurd headers and aborted bodies may go unanswered);
//   - a valid request succeeds; a value that cannot be stored exactly is refused with a 4xx; exact statuses where
//     the spec gives one (413 over the cap, 400 outside the envelope for a malformed /apps/{id});
//   - every answer carries X-Pm-Request-Id, every 4xx is the error envelope (but that one 400);
//   - but a page the current uWebSockets.js build writes itself (uws-pages.ts: its 431 for a head over 4 KB, its 505
//     for a control byte in the request-target), recognised only for the request shapes that make it, byte for byte,
//     is no answer of Pombo's: only the invariants about everyone else (no write, still answering, the bystander) and
//     a valid request's success apply to it;
//   - a refused (or unanswered) request writes nothing: the fuzzed apps' rows are the same before and after;
//   - the process keeps answering (GET / after every case);
//   - the bystander app's valid requests made at the same time all get their 200 and their rows.
import fc from 'fast-check'
import { FRESH_CAMPAIGN, type FuzzCase, fuzzCase, ROUTES, type RouteDef } from './arbitraries'
import type { FuzzEnv } from './harness'
import { isPage, uwsPageFor } from './uws-pages'
import { exchange, headBytes, printable, type WireAnswer } from './wire'

export interface Violation {
  invariant: string
  detail: string
}

export interface CaseResult {
  c: FuzzCase
  answer: WireAnswer
  /** Set when the answer was the uWS build's own page (its status), which Pombo never wrote (uws-pages.ts). */
  uwsPage?: number
  violations: Violation[]
}

/** How long a case may wait for its answer: a hang is caught all the same, and a loaded machine's slow answer is not
 *  taken for one (2 s ran out once in a full run, beside a build). Only a failing case waits this long. */
const ANSWER_MS = 10_000
const ABSURD_MS = 1_000

/** The case as sent: a campaign made now where the target says FRESH_CAMPAIGN (its real id is in the bytes shown). */
async function materialize(env: FuzzEnv, c: FuzzCase): Promise<FuzzCase> {
  if (!c.fresh) return c
  const id = await env.freshCampaign(c.fresh)
  const target = Buffer.from(c.request.target.toString('latin1').replaceAll(FRESH_CAMPAIGN, id), 'latin1')
  return { ...c, request: { ...c.request, target } }
}

export async function runCase(env: FuzzEnv, generated: FuzzCase): Promise<CaseResult> {
  const v: Violation[] = []
  const c = await materialize(env, generated)
  const before = await env.snapshot()
  env.escapes.take()
  const bystander = env.bystander.burst()
  const answer = await exchange(env.port, c.request, c.expect.noAnswer === 'any' ? ABSURD_MS : ANSWER_MS)
  const bFailures = await bystander
  // An escaped exception or a rejection may surface a tick or two after the answer (or the hang).
  await new Promise((r) => setTimeout(r, 5))
  const root = await exchange(
    env.port,
    { method: 'GET', target: Buffer.from('/'), headers: [], body: null, transfer: 'length' },
    ANSWER_MS,
  )
  const after = await env.snapshot()
  for (const e of env.escapes.take())
    v.push({ invariant: 'escaped', detail: `${e.kind}: ${e.error} (no handler in production: the process exits)` })

  const st = answer.status
  // The build's own page for a request of the shape that makes it (the route was never called), byte for byte.
  const page = uwsPageFor(env.build, c.request)
  const own = page !== null && isPage(answer, page) ? page : null
  if (own) {
    if (c.expect.valid)
      v.push({ invariant: 'valid-succeeds', detail: `${st}: the uWS build's own page (${own.why}) for a valid request` })
  } else if (st === null) {
    const ok = c.expect.noAnswer === 'any' || (c.expect.noAnswer === 'closed' && answer.closed)
    if (!ok)
      v.push({
        invariant: 'answered',
        detail: answer.hung ? `no answer within ${ANSWER_MS} ms` : 'connection closed without an answer',
      })
  } else {
    if (st >= 500) v.push({ invariant: 'no-5xx', detail: `${st} ${printable(answer.body, 200)}` })
    if (c.expect.valid) {
      const accepted = c.expect.statuses ?? [200, 201]
      if (!accepted.includes(st)) v.push({ invariant: 'valid-succeeds', detail: `${st} ${printable(answer.body, 200)}` })
    } else if (c.expect.statuses && st < 500 && !c.expect.statuses.includes(st)) {
      v.push({ invariant: 'status', detail: `${st}, expected ${c.expect.statuses.join('/')}: ${printable(answer.body, 160)}` })
    }
    if (c.expect.mustRefuse && st < 400)
      v.push({ invariant: 'refuse-unstorable', detail: `${st}: accepted a value it cannot store exactly` })
    if (!answer.headers['x-pm-request-id']) v.push({ invariant: 'request-id', detail: `${st} without X-Pm-Request-Id` })
    if (st >= 400 && st < 500 && c.request.method !== 'HEAD') checkEnvelope(c, st, answer, v)
  }
  const refused = st === null || st >= 400
  if (refused) {
    const changed = Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k])
    if (changed.length > 0)
      v.push({ invariant: 'refusal-writes-nothing', detail: `${st ?? 'no answer'} but rows changed in: ${changed.join(', ')}` })
  }
  if (root.status !== 200)
    v.push({ invariant: 'keeps-answering', detail: `GET / then: ${root.status ?? (root.hung ? 'hung' : 'closed')}` })
  for (const f of bFailures) v.push({ invariant: 'bystander', detail: `app B ${f.op}: ${f.detail}` })
  return { c, answer, ...(own ? { uwsPage: own.status } : {}), violations: v }
}

function checkEnvelope(c: FuzzCase, st: number, a: WireAnswer, v: Violation[]): void {
  let body: unknown
  try {
    body = JSON.parse(a.body.toString('utf8'))
  } catch {
    v.push({ invariant: 'envelope', detail: `${st} with a body that is not JSON: ${printable(a.body, 120)}` })
    return
  }
  const b = body as { errors?: unknown; explain?: { request_id?: unknown }; erro?: unknown }
  if (c.expect.bareIdError && st === 400 && typeof b.erro === 'string') return
  if (!Array.isArray(b.errors) || typeof b.explain?.request_id !== 'string') {
    v.push({ invariant: 'envelope', detail: `${st} outside the error envelope: ${printable(a.body, 120)}` })
  } else if (b.explain.request_id !== a.headers['x-pm-request-id']) {
    v.push({ invariant: 'envelope', detail: 'explain.request_id differs from X-Pm-Request-Id' })
  }
}

/** The case as a reader wants it in a report: route, mutation, and the exact bytes (shortened). */
export function describeCase(c: FuzzCase): string {
  const head = printable(headBytes(c.request), 400)
  const body = c.request.body ? printable(c.request.body, 300) : ''
  return `${c.route} — ${c.mutation}\n    transfer: ${c.request.transfer}\n    head: ${head}${body ? `\n    body: ${body}` : ''}`
}

export interface FuzzOptions {
  seed: number
  /** Stop after this many cases. */
  numRuns?: number
  /** Stop after this long (the case under way finishes). */
  timeLimitMs?: number
  /** Replay: fast-check's path of one case (printed with every failure). */
  path?: string
  /**
   * 'collect': run every case, gather every failure (each with its replay path); the default.
   * 'assert': stop at the first failure and let fast-check shrink it to a smallest case.
   */
  mode?: 'collect' | 'assert'
  onCase?: (index: number, r: CaseResult) => void
  /** Only these routes (ROUTES' names); default every one. A failure's replay command names them too. */
  routes?: string[]
}

export interface Failure {
  seed: number
  path: string
  result: CaseResult
  /** The routes the run was limited to, if it was: the replay needs them to draw the same case. */
  routes?: string[]
}

/** The command that replays one failing case. */
export function replayCommand(f: Pick<Failure, 'seed' | 'path' | 'routes'>): string {
  const routes = f.routes ? ` --routes '${f.routes.join(',')}'` : ''
  return `npm run fuzz -- --seed ${f.seed} --path ${f.path}${routes}`
}

/** ROUTES limited to `names` (every one when none); an unknown name is an error that lists the known ones. */
export function routesNamed(names?: string[]): RouteDef[] {
  if (!names) return ROUTES
  const unknown = names.filter((n) => !ROUTES.some((r) => r.name === n))
  if (unknown.length) throw new Error(`unknown route ${unknown.join(', ')}; the routes: ${ROUTES.map((r) => r.name).join(', ')}`)
  return ROUTES.filter((r) => names.includes(r.name))
}

export interface FuzzReport {
  seed: number
  cases: number
  failures: Failure[]
  /** Answers that were the uWS build's own pages, by status (uws-pages.ts); empty on the Node 20 build. */
  uwsPages: Record<number, number>
  ms: number
  /** Set in 'assert' mode when fast-check found (and shrank) a counterexample. */
  assertError?: string
}

export async function fuzz(env: FuzzEnv, o: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now()
  const failures: Failure[] = []
  const uwsPages: Record<number, number> = {}
  let index = 0
  const property = fc.asyncProperty(fuzzCase(env.ctx, routesNamed(o.routes)), async (c) => {
    const i = index++
    const r = await runCase(env, c)
    if (r.uwsPage) uwsPages[r.uwsPage] = (uwsPages[r.uwsPage] ?? 0) + 1
    o.onCase?.(i, r)
    if (r.violations.length === 0) return true
    if (o.mode === 'assert') {
      throw new Error(r.violations.map((x) => `${x.invariant}: ${x.detail}`).join('\n'))
    }
    failures.push({ seed: o.seed, path: o.path ?? String(i), result: r, routes: o.routes })
    return true
  })
  const params: fc.Parameters<[FuzzCase]> = {
    seed: o.seed,
    numRuns: o.numRuns ?? (o.timeLimitMs ? Number.MAX_SAFE_INTEGER : 100),
    interruptAfterTimeLimit: o.timeLimitMs,
    markInterruptAsFailure: false,
  }
  if (o.path !== undefined) {
    // fast-check starts from the case the path names and would go on from there: one case is a replay.
    params.path = o.path
    if (o.mode !== 'assert') params.numRuns = 1
  }
  let assertError: string | undefined
  try {
    await fc.assert(property, params)
  } catch (err) {
    assertError = String(err instanceof Error ? err.message : err)
  }
  return { seed: o.seed, cases: index, failures, uwsPages, ms: Date.now() - started, assertError }
}

/** One line per distinct (route, mutation family, invariant), with the first replay path of each. */
export function summarize(failures: Failure[]): string[] {
  const seen = new Map<string, { n: number; f: Failure; v: Violation }>()
  for (const f of failures) {
    for (const v of f.result.violations) {
      const family = f.result.c.mutation.replace(/\d{3,}/g, 'N')
      const k = `${f.result.c.route} | ${family} | ${v.invariant}`
      const e = seen.get(k)
      if (e) e.n++
      else seen.set(k, { n: 1, f, v })
    }
  }
  return [...seen.entries()].map(([k, e]) => `${k} ×${e.n} — e.g. ${e.v.detail.slice(0, 160)} [replay: ${replayCommand(e.f)}]`)
}
