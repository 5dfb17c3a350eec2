// Compiles the device SDK (packages/sdk → packages/sdk/dist). Tests and the root build import '@pombo/sdk' through
// its package exports, which point at dist/ (not committed): `npm test`, `npm run build` and `npm run typecheck`
// build it first, so a fresh clone works after `npm ci`. Skipped when dist/ is newer than every source file.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const SDK_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'sdk')

function newest(dir) {
  let t = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

function fresh() {
  const out = [join(SDK_DIR, 'dist', 'index.js'), join(SDK_DIR, 'dist', 'index.d.ts')]
  if (!out.every(existsSync)) return false
  const built = Math.min(...out.map((p) => statSync(p).mtimeMs))
  const sources = Math.max(newest(join(SDK_DIR, 'src')), statSync(join(SDK_DIR, 'tsconfig.json')).mtimeMs)
  return built >= sources
}

export function buildSdk({ force = false } = {}) {
  if (!force && fresh()) return
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', join(SDK_DIR, 'tsconfig.json')], { cwd: SDK_DIR, stdio: 'inherit' })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildSdk({ force: process.argv.includes('--force') })
