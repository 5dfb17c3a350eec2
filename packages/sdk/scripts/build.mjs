// Builds @pombo/sdk into dist/: the ES modules with their type declarations (tsc, one file per module: the `.` and
// `./sw` entries) and dist/pombo.min.js, the self-contained script for `<script>` tags and `importScripts` (esbuild: one
// minified IIFE defining the global `Pombo`, src/browser.ts).
//
//   node scripts/build.mjs               builds unless dist/ is newer than every source (the package's `prepare`)
//   node scripts/build.mjs --force       empties dist/ and builds (the package's `prepack`: what is packed is fresh)
//   build({ ifPossible: true })          as the first, but a copy without src/ or without the build tools (npm ci
//   (--if-possible)                      --omit=dev) is left as it is, with one line saying so, instead of failing
//                                        the install. The package's `prepare` calls it only where this file exists:
//                                        a Docker layer that copied only package.json (the repository's Dockerfile)
//                                        runs `npm ci` with no sources at all.
//
// The tools are the repository's development dependencies (typescript; esbuild, which tsx brings), found from here.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const SDK_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
const SRC = join(SDK_DIR, 'src')
const DIST = join(SDK_DIR, 'dist')
/** What a build must produce; missing or older than a source means building. */
export const OUTPUTS = ['index.js', 'index.d.ts', 'sw.js', 'sw.d.ts', 'pombo.min.js'].map((f) => join(DIST, f))
/** The self-contained script. */
export const SCRIPT = join(DIST, 'pombo.min.js')

const require = createRequire(import.meta.url)

function newest(dir) {
  let t = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

export function fresh() {
  if (!OUTPUTS.every(existsSync)) return false
  const built = Math.min(...OUTPUTS.map((p) => statSync(p).mtimeMs))
  const inputs = [join(SDK_DIR, 'tsconfig.json'), join(SDK_DIR, 'package.json'), fileURLToPath(import.meta.url)]
  return built >= Math.max(newest(SRC), ...inputs.map((p) => statSync(p).mtimeMs))
}

function tool(name) {
  try {
    return require.resolve(name)
  } catch {
    return null
  }
}

/** Builds dist/; answers what it did: 'built', 'fresh' (nothing to do) or 'skipped' (--if-possible and no sources or tools). */
export function build({ force = false, ifPossible = false, log = (m) => console.error(`[@pombo/sdk] ${m}`) } = {}) {
  if (!existsSync(SRC)) {
    if (ifPossible) {
      log('no src/ here: nothing to build')
      return 'skipped'
    }
    throw new Error(`@pombo/sdk: no sources in ${SRC}`)
  }
  const tsc = tool('typescript/bin/tsc')
  const esbuildPath = tool('esbuild')
  if (!tsc || !esbuildPath) {
    const what = !tsc ? 'typescript' : 'esbuild'
    if (ifPossible) {
      log(`${what} is not installed (a production install): dist/ not built`)
      return 'skipped'
    }
    throw new Error(`@pombo/sdk: ${what} is not installed: run npm ci in the repository first`)
  }
  if (!force && fresh()) return 'fresh'
  if (force) rmSync(DIST, { recursive: true, force: true })
  execFileSync(process.execPath, [tsc, '-p', join(SDK_DIR, 'tsconfig.json')], { cwd: SDK_DIR, stdio: 'inherit' })
  const { version, license } = JSON.parse(readFileSync(join(SDK_DIR, 'package.json'), 'utf8'))
  require(esbuildPath).buildSync({
    entryPoints: [join(SRC, 'browser.ts')],
    outfile: SCRIPT,
    bundle: true,
    format: 'iife',
    globalName: 'Pombo',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    banner: { js: `/*! @pombo/sdk ${version} | ${license} */` },
    logLevel: 'warning',
  })
  return 'built'
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    build({ force: process.argv.includes('--force'), ifPossible: process.argv.includes('--if-possible') })
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
