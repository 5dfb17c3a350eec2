// Line coverage of src/ over the whole `npm test` (both tiers and the Redis Cluster re-run), with tap's built-in
// coverage (V8 through c8). Each tap run starts by emptying .tap/coverage, so what a run recorded is moved aside
// before the next; at the end it all goes back and `tap report` checks it against the floors in package.json
// ("tap": "lines", "statements", "functions", "branches"). It runs in CI (CI=true; .ci/run sets it) and with
// PM_TEST_COVERAGE=1, not in a local `npm test`: V8's precise coverage makes the tests' own times about 16% longer.
// PM_TEST_COVERAGE=0 turns it off in CI.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO_ROOT } from './local-services.mjs'

const TAP_COVERAGE = path.join(REPO_ROOT, '.tap', 'coverage')
const KEPT = path.join(REPO_ROOT, '.tap', 'coverage-kept')

export function coverageWanted(env = process.env) {
  if (env.PM_TEST_COVERAGE === '0' || env.PM_TEST_COVERAGE === '1') return env.PM_TEST_COVERAGE === '1'
  return env.CI === 'true'
}

/** tap flags for a run that records coverage but leaves the check to checkCoverage. */
export function coverageArgs() {
  return ['--no-disable-coverage', '--allow-incomplete-coverage', '--coverage-report=none']
}

export async function resetCoverage() {
  await rm(KEPT, { recursive: true, force: true })
}

async function moveAll(from, to) {
  const names = await readdir(from).catch(() => [])
  if (names.length === 0) return
  await mkdir(to, { recursive: true })
  for (const n of names) await rename(path.join(from, n), path.join(to, n))
}

/** Moves what the last tap run recorded aside (file names are per-process UUIDs: nothing collides). */
export async function keepCoverage() {
  await moveAll(TAP_COVERAGE, KEPT)
}

/**
 * tsx's source maps carry `sourcesContent: [null]`, which v8-to-istanbul reads as an empty original (each file then
 * counts as one line, always covered): the original text is filled in from disk.
 */
async function fillSourcesContent(dir) {
  for (const name of await readdir(dir).catch(() => [])) {
    const file = path.join(dir, name)
    const cov = JSON.parse(await readFile(file, 'utf8'))
    let changed = false
    for (const { data } of Object.values(cov['source-map-cache'] ?? {})) {
      if (!data?.sourcesContent?.some((c) => c == null)) continue
      data.sourcesContent = await Promise.all(
        data.sources.map(
          (s, i) => data.sourcesContent[i] ?? readFile(s.startsWith('file:') ? fileURLToPath(s) : s, 'utf8').catch(() => ''),
        ),
      )
      changed = true
    }
    if (changed) await writeFile(file, JSON.stringify(cov))
  }
}

/** Puts every run's coverage back and answers the exit code of `tap report` against the floors. */
export async function checkCoverage(runTap) {
  await keepCoverage()
  await moveAll(KEPT, TAP_COVERAGE)
  await fillSourcesContent(TAP_COVERAGE)
  console.error('[pombo test] line coverage of src/ over the whole run (floors: package.json "tap")')
  return runTap(['report', 'text-summary'], process.env)
}
