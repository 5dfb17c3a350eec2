// Compiles the device SDK (packages/sdk → packages/sdk/dist). Tests and the root build import '@pombo/sdk' through
// its package exports, which point at dist/ (not committed): `npm test`, `npm run build` and `npm run typecheck`
// build it first, so a fresh clone works after `npm ci`.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const SDK_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'sdk')

export function buildSdk() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', join(SDK_DIR, 'tsconfig.json')], { cwd: SDK_DIR, stdio: 'inherit' })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildSdk()
