// `npm run build`: the project compiled to plain JavaScript in dist/ (dist/src/main.js is the service the image
// runs; the benchmarks run their servers, baselines and fakes from dist/ too, so both sides of every ratio are
// compiled alike). The SQL migrations are copied beside their runner. Compiled output skips tsx's load-time
// transform and its per-closure naming helpers: the delivery worker used ~17% less CPU per delivery and ~35 MB
// less memory in `npm run bench -- deliver`. It compiles what dist/ runs (tsconfig.build.json: src/, bench/, examples/ and
// the test fakes and helpers bench/ imports), about two thirds of tsc's work on the whole project; `npm run typecheck`
// checks the rest.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, rmSync, utimesSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildSdk } from './build-sdk.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
buildSdk() // the tests and the example import '@pombo/sdk' from packages/sdk/dist
const started = new Date()
rmSync(join(root, 'dist'), { recursive: true, force: true })
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' })
const main = join(root, 'dist', 'src', 'main.js')
if (!existsSync(main)) throw new Error(`build: ${main} was not written`)
cpSync(join(root, 'src', 'db', 'migrations'), join(root, 'dist', 'src', 'db', 'migrations'), { recursive: true })
cpSync(join(root, 'src', 'dashboard', 'assets'), join(root, 'dist', 'src', 'dashboard', 'assets'), { recursive: true })
// bin/pombo runs dist/ only when nothing in src/ changed after this build began reading it.
utimesSync(main, started, started)
