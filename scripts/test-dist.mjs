// The sources compiled once for a test run, so that tests which start `pombo` as a child process (the CLI tests, the
// process-level tests) start plain JavaScript instead of transforming ~250 modules through tsx in every child: one
// esbuild bundle of src/main.ts (a second or two; packages stay external), with the SQL migrations and dashboard
// assets copied where the bundle's __dirname finds them. Types are not checked here (`npm run typecheck` does). When
// coverage is recorded the bundle carries its source map inline, so coverage taken in those children is reported
// against src/ (tap keeps a child's coverage only for scripts whose map leads into src/); otherwise the map is a file
// beside it (node --enable-source-maps still finds it), and each child reads and compiles a bundle ~3 MB smaller.
// scripts/test.mjs calls it and hands the entry to the tests as PM_TEST_DIST_MAIN; test/helpers/entry.ts falls back
// to tsx when it is unset (tap run directly).
// Each run compiles into a folder of its own, inside the checkout (src/core/root.ts finds the project root above it):
// two `npm test` runs side by side never pull a file out from under each other's children. A run removes its folder
// when it ends, and the next run removes folders whose run is gone.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { coverageWanted } from './coverage.mjs'
import { REPO_ROOT } from './local-services.mjs'
import { alive } from './process-alive.mjs'

const TEST_DIST = join(REPO_ROOT, '.cache', 'test-dist')

/** Compiles src/ into .cache/test-dist/<this process>/src; returns its main.js and a function removing it. */
export async function buildTestDist() {
  const src = join(REPO_ROOT, 'src')
  if (existsSync(TEST_DIST)) {
    for (const d of readdirSync(TEST_DIST))
      if (!alive(Number(d.split('-')[0]))) rmSync(join(TEST_DIST, d), { recursive: true, force: true })
  }
  const out = join(TEST_DIST, `${process.pid}-${Date.now()}`)
  mkdirSync(out, { recursive: true })
  await build({
    entryPoints: [join(src, 'main.ts')],
    outfile: join(out, 'src', 'main.js'),
    bundle: true,
    packages: 'external',
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: coverageWanted() ? 'inline' : 'linked',
    logLevel: 'warning',
  })
  // src/db/migrate.ts and src/dashboard/assets.ts read join(__dirname, 'migrations' | 'assets').
  cpSync(join(src, 'db', 'migrations'), join(out, 'src', 'migrations'), { recursive: true })
  cpSync(join(src, 'dashboard', 'assets'), join(out, 'src', 'assets'), { recursive: true })
  return { main: join(out, 'src', 'main.js'), remove: () => rmSync(out, { recursive: true, force: true }) }
}
