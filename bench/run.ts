// `npm run bench -- <scenario>`: runs one named load scenario (or `all`) and prints figures beside same-run baselines.
// After each scenario that completes, the figures it recorded replace its rows in bench/README.md's generated block
// (bench/lib/figures.ts), dated and attributed to the commit measured, and README.md's copies of them follow.
// BENCH_FIGURES_TO names another file to write the block to (README.md is then left alone); `none` writes nothing.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { dashboardBench } from './dashboard'
import { deliver } from './deliver'
import { grpcBench } from './grpc'
import { h2client } from './h2client'
import { measuredCommit, startScenario, takeRecorded, writeFigures } from './lib/figures'
import { runChildrenCompiled } from './lib/pombo'
import { http } from './http'
import { inapp } from './inapp'
import { receipts } from './receipts'
import { register } from './register'
import { retentionBench } from './retention'
import { send } from './send'
import { sendE2e } from './send-e2e'
import { slices } from './slices'
import { webhooks } from './webhooks'

const SCENARIOS: Record<string, () => Promise<void>> = {
  http,
  register,
  send,
  'send-e2e': sendE2e,
  deliver,
  slices,
  receipts,
  webhooks,
  inapp,
  grpc: grpcBench,
  h2client,
  dashboard: dashboardBench,
  retention: retentionBench,
}

const ROOT = join(__dirname, '..')

/** Where the figures go: bench/README.md and README.md's copies, another file alone, or nowhere. */
function figuresTarget(): { benchReadme: string; readme?: string } | null {
  const to = process.env.BENCH_FIGURES_TO
  if (to === 'none') return null
  if (to) return { benchReadme: to }
  return { benchReadme: join(ROOT, 'bench', 'README.md'), readme: join(ROOT, 'README.md') }
}

async function main(): Promise<void> {
  // The service under load is the compiled one (dist/), as the image runs it: built fresh, so it is this checkout.
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' })
  runChildrenCompiled()
  const commit = measuredCommit(ROOT)
  const target = figuresTarget()
  const name = process.argv[2] ?? 'all'
  const names = name === 'all' ? Object.keys(SCENARIOS) : [name]
  for (const n of names) {
    const run = SCENARIOS[n]
    if (!run) {
      console.error(`unknown scenario "${n}"; known: ${Object.keys(SCENARIOS).join(', ')}, all`)
      process.exit(2)
    }
    startScenario(n)
    await run()
    const figures = takeRecorded(new Date().toISOString().slice(0, 10), commit)
    if (target && figures.length > 0) {
      writeFigures(figures, target.benchReadme, target.readme)
      console.log(
        `${n}: ${figures.length} figure(s) written to ${target.benchReadme}${target.readme ? ' (and the copies in README.md)' : ''}`,
      )
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
