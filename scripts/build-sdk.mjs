// Builds the device SDK (packages/sdk → packages/sdk/dist) with the package's own build (packages/sdk/scripts/
// build.mjs: the ES modules with types, and the self-contained dist/pombo.js). Tests and the root build import
// '@pombo/sdk' through its package exports, which point at dist/ (not committed): `npm ci` builds it (the package's
// `prepare`), and `npm test`, `npm run build` and `npm run typecheck` build it again when a source is newer.
import { fileURLToPath } from 'node:url'
import { build, SDK_DIR } from '../packages/sdk/scripts/build.mjs'

export { SDK_DIR }

export function buildSdk({ force = false } = {}) {
  build({ force })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildSdk({ force: process.argv.includes('--force') })
