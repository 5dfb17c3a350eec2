// `npm run fuzz`: the hostile-input fuzzer for as long as asked, against a real service started in this process
// (own Postgres schema and Redis prefix, like a test). Prints every failure with the seed and path that replay it.
//
//   npm run fuzz                             # 200 cases, random seed
//   npm run fuzz -- --minutes 10             # as many cases as fit in 10 minutes
//   npm run fuzz -- --runs 1000 --seed 42    # a fixed seed
//   npm run fuzz -- --seed 42 --path 17      # replay case 17 of seed 42 (prints its bytes and what came back)
//   npm run fuzz -- --seed 42 --routes 'GET /,POST /api/v1/devices'   # only those routes (ROUTES' names)
//   npm run fuzz -- --seed 42 --shrink       # stop at the first failure and shrink it to a smallest case
//   npm run fuzz -- --sends-model            # the model of a send's life (test/model/): 20 random sequences
//   npm run fuzz -- --sends-model --runs 50 --commands 60 --seed 42 [--path P] [--minutes 30] [--verbose] [--shrink]
//   npm run fuzz -- --receipts-model         # the receipts model (test/integration/receipts-model.test.ts): 100 sequences
//   npm run fuzz -- --webhooks-model --runs 300 --commands 40 --seed 42 [--path P] [--minutes 30] [--shrink]
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { runModelTest } from './model-tests'
import type { Failure } from './property'
import { printable } from './wire'

interface LocalServices {
  ensureTestServices(o: {
    log: (m: string) => void
  }): Promise<{ DATABASE_URL: string; REDIS_URL: string; stop: () => Promise<void> }>
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      runs: { type: 'string' },
      seed: { type: 'string' },
      path: { type: 'string' },
      routes: { type: 'string' },
      shrink: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      'sends-model': { type: 'boolean', default: false },
      commands: { type: 'string' },
      'receipts-model': { type: 'boolean', default: false },
      'webhooks-model': { type: 'boolean', default: false },
    },
  })
  const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31)
  const timeLimitMs = values.minutes !== undefined ? Number(values.minutes) * 60_000 : undefined
  const numRuns = values.runs !== undefined ? Number(values.runs) : timeLimitMs ? undefined : 200
  // These two models run as their test files, through npm test's runner (model-tests.ts).
  for (const name of ['receipts', 'webhooks'] as const) {
    if (values[`${name}-model`]) return runModelTest(name, { ...values, seed })
  }
  // The Postgres and Redis `npm test` uses (started when installed but down); DATABASE_URL / REDIS_URL win.
  const services = (await import(join(__dirname, '../../scripts/local-services.mjs'))) as LocalServices
  const local = await services.ensureTestServices({ log: (m) => console.error(`[pombo fuzz] ${m}`) })
  process.env.DATABASE_URL = local.DATABASE_URL
  process.env.REDIS_URL = local.REDIS_URL
  if (values['sends-model']) {
    const code = await model(seed, values, timeLimitMs)
    await local.stop()
    return code
  }
  // Imported only now: the test helpers read DATABASE_URL / REDIS_URL when loaded.
  const { startFuzz } = require('./harness') as typeof import('./harness')
  const { describeCase, fuzz, replayCommand, routesNamed, summarize } = require('./property') as typeof import('./property')
  const routes = values.routes?.split(',').map((r) => r.trim())
  try {
    routesNamed(routes)
  } catch (err) {
    console.error(`fuzz: ${(err as Error).message}`)
    await local.stop()
    return 2
  }
  const teardowns: Array<() => unknown> = []
  const env = await startFuzz({ teardown: (f) => teardowns.push(f) })
  console.log(
    `fuzz: seed ${seed}${values.path ? ` path ${values.path}` : ''}; service on port ${env.port}, schema ${env.s.cfg.dbSchema}`,
  )
  const printFailure = (f: Failure): void => {
    console.log(`\nFAIL [replay: ${replayCommand(f)}]\n  ${describeCase(f.result.c)}`)
    const a = f.result.answer
    console.log(`  answer: ${a.status ?? (a.hung ? 'none (hung)' : 'none (closed)')} ${printable(a.body, 200)}`)
    for (const v of f.result.violations) console.log(`  ✗ ${v.invariant}: ${v.detail}`)
  }
  let shown = 0
  const report = await fuzz(env, {
    seed,
    numRuns,
    timeLimitMs,
    path: values.path,
    routes,
    mode: values.shrink ? 'assert' : 'collect',
    onCase: (i, r) => {
      if (values.verbose || values.path !== undefined) {
        const own = r.uwsPage ? ` (the uWS build's own page)` : ''
        console.log(
          `case ${i}: ${describeCase(r.c)}\n  answer: ${r.answer.status ?? 'none'}${own} ${printable(r.answer.body, 200)}`,
        )
      }
      if (r.violations.length > 0 && values.path === undefined && !values.shrink) {
        shown++
        printFailure({ seed, path: String(i), result: r, routes })
      } else if ((i + 1) % 50 === 0) console.log(`… ${i + 1} cases`)
    },
  })
  if (values.path !== undefined) for (const f of report.failures) printFailure(f)
  const pages = Object.entries(report.uwsPages).map(([st, n]) => `${n}× ${st}`)
  console.log(
    `\nfuzz: seed ${seed}, ${report.cases} cases in ${(report.ms / 1000).toFixed(1)} s, ${report.failures.length} failing` +
      `; ${env.build}'s own pages (uws-pages.ts): ${pages.join(', ') || 'none'}`,
  )
  if (report.assertError) console.log(`\nfast-check counterexample (shrunk):\n${report.assertError}`)
  if (report.failures.length > 0) {
    console.log('\nDistinct failures (route | mutation | invariant):')
    for (const l of summarize(report.failures)) console.log(`  ${l}`)
  }
  void shown
  for (const f of teardowns.reverse()) await f()
  await local.stop()
  return report.failures.length > 0 || report.assertError ? 1 : 0
}

/** `--sends-model`: random sequences of commands against the model of a send's life, each on a fresh deployment. */
async function model(
  seed: number,
  values: { runs?: string; commands?: string; path?: string; shrink?: boolean; verbose?: boolean },
  timeLimitMs: number | undefined,
): Promise<number> {
  const { runSendsModel } = require('../model/run') as typeof import('../model/run')
  const numRuns = values.runs !== undefined ? Number(values.runs) : timeLimitMs ? 1_000_000 : 20
  const maxCommands = values.commands !== undefined ? Number(values.commands) : 40
  console.log(`model: seed ${seed}, up to ${maxCommands} commands a run${values.path ? `, path ${values.path}` : ''}`)
  const report = await runSendsModel({
    seed,
    numRuns,
    maxCommands,
    path: values.path,
    shrink: values.shrink,
    timeLimitMs,
    onRun: (r) => {
      console.log(
        `run ${r.run}: ${r.commands} commands, ${r.sends} sends, ${r.crashes} crashes, ${r.scheduledAfterRead} scheduled after a read, ` +
          `${(r.ms / 1000).toFixed(1)} s${r.error ? ' FAILED' : ''}`,
      )
      if (values.verbose || values.path !== undefined) for (const l of r.timeline) console.log(`  ${l}`)
    },
  })
  console.log(
    `\nmodel: seed ${seed}, ${report.runs} runs in ${(report.ms / 1000).toFixed(1)} s, ${report.failure ? 'FAILED' : 'every invariant held'}`,
  )
  if (report.failure) console.log(`\n${report.failure}`)
  return report.failure ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err)
    process.exit(2)
  },
)
