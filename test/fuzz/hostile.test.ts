// The seeded fuzz run of `npm test`: a fixed seed, so every run sends the same cases; 200 of them across
// every public, app-key and operator route (in-app included), with a bystander app's valid traffic alongside each. Each
// distinct failure is reported with the command that replays it (`npm run fuzz -- --seed S --path N`). The run stops at
// a time limit; on a loaded machine that can come before the seed reached every route, so the routes it missed get
// a few cases of their own (same seed, limited to them), and every route is exercised whatever the machine's speed.
import t from 'tap'
import { CURRENT_BUILD } from '../../src/http/uws'
import { ROUTES } from './arbitraries'
import { startFuzz } from './harness'
import { fuzz, summarize } from './property'

/** Cases for each route the time-limited run missed. */
const TOP_UP_PER_ROUTE = 4

const SEED = 20261126
const RUNS = 200
const TIME_LIMIT_MS = 45_000

t.test('hostile input hurts no one (seeded fuzz run)', async (t) => {
  const env = await startFuzz(t)
  const routes = new Set<string>()
  const report = await fuzz(env, {
    seed: SEED,
    numRuns: RUNS,
    timeLimitMs: TIME_LIMIT_MS,
    onCase: (_i, r) => routes.add(r.c.route),
  })
  const pages = Object.entries(report.uwsPages).map(([st, n]) => `${n}× ${st}`)
  t.comment(
    `seed ${SEED}: ${report.cases} cases in ${(report.ms / 1000).toFixed(1)} s, ${report.failures.length} failing; ` +
      `${env.build}'s own pages: ${pages.join(', ') || 'none'}`,
  )
  const missed = ROUTES.map((r) => r.name).filter((n) => !routes.has(n))
  const failures = [...report.failures]
  let cases = report.cases
  if (missed.length) {
    const topUp = await fuzz(env, {
      seed: SEED,
      numRuns: TOP_UP_PER_ROUTE * missed.length,
      routes: missed,
      onCase: (_i, r) => routes.add(r.c.route),
    })
    t.comment(`the time limit came first for ${missed.join(', ')}: ${topUp.cases} more cases on them alone`)
    failures.push(...topUp.failures)
    cases += topUp.cases
  }
  t.ok(cases >= 50, `enough cases ran (${cases})`)
  t.same(
    ROUTES.map((r) => r.name).filter((n) => !routes.has(n)),
    [],
    'every route was exercised',
  )
  // On Node 22 and 24 (npm run test:runtimes) the seed meets both pages the current build writes itself (uws-pages.ts):
  // they were recognised as that build's, so every other answer met the request-id, envelope and no-5xx checks.
  if (env.build === CURRENT_BUILD)
    t.same(Object.keys(report.uwsPages).sort(), ['431', '505'], "the current build's own 431 and 505 pages were met")
  // One line per distinct (route, mutation, invariant) failure, each with its replay command.
  t.same(summarize(failures), [], 'no invariant broken')
})
