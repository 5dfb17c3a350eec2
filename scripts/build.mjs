// `npm run build`: the project compiled to plain JavaScript in dist/ (dist/src/main.js is the service the image
// runs; the benchmarks run their servers, baselines and fakes from dist/ too, so both sides of every ratio are
// compiled alike). The SQL migrations and dashboard assets are copied beside their readers. Compiled output skips
// tsx's load-time transform and its per-closure naming helpers: the delivery worker uses less CPU per delivery and
// less memory than under tsx.
//
// Each file is transpiled on its own by esbuild (the transform tsx applies to every test run, so what is shipped is
// what is tested): src/, bench/ and examples/, and the test fakes and helpers bench/ imports. Types are not checked
// here: `npm run typecheck` does, in CI before the tests. tsc's emit did the same transform with ~25 s of CPU where
// this takes about one.
import { cpSync, existsSync, readdirSync, rmSync, utimesSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { buildSdk } from './build-sdk.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// The image's build context has only src/ (.dockerignore): the others are compiled where they are.
const DIRS = ['src', 'bench', 'examples'].filter((d) => existsSync(join(root, d)))

/** Every TypeScript source under `dir` (declarations left out). */
function sources(dir) {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name))
}

const common = { platform: 'node', target: 'node20', format: 'cjs', logLevel: 'warning', absWorkingDir: root }

/** The sources of DIRS and every project file they import (outside node_modules), found by resolving the imports. */
async function reachable() {
  const entries = DIRS.flatMap(sources)
  const { metafile } = await build({
    ...common,
    entryPoints: entries,
    bundle: true,
    packages: 'external',
    write: false,
    metafile: true,
    outdir: join(root, 'dist'),
    outbase: root,
  })
  const files = new Set(entries)
  for (const input of Object.keys(metafile.inputs))
    if (input.endsWith('.ts') && !input.split('/').includes('node_modules')) files.add(join(root, input))
  // The SDK's workspace is built by its own script (buildSdk), not here.
  return [...files].filter((f) => !relative(root, f).startsWith(`packages${sep}`))
}

buildSdk() // the tests and the example import '@pombo/sdk' from packages/sdk/dist
const started = new Date()
rmSync(join(root, 'dist'), { recursive: true, force: true })
await build({
  ...common,
  entryPoints: await reachable(),
  bundle: false,
  outdir: join(root, 'dist'),
  outbase: root,
})
const main = join(root, 'dist', 'src', 'main.js')
if (!existsSync(main)) throw new Error(`build: ${main} was not written`)
cpSync(join(root, 'src', 'db', 'migrations'), join(root, 'dist', 'src', 'db', 'migrations'), { recursive: true })
cpSync(join(root, 'src', 'dashboard', 'assets'), join(root, 'dist', 'src', 'dashboard', 'assets'), { recursive: true })
// bin/pombo runs dist/ only when nothing in src/ changed after this build began reading it.
utimesSync(main, started, started)
