// tap builds its Test class with the plugins package.json names ("tap"."plugin"), but a fresh install holds the
// default set, and a tap run that finds it so rebuilds it for the next run only: the run itself still starts every
// test process with the default plugins' loaders (ts-node and the mock loader, about a second a process).
// scripts/test.mjs builds the set first when it differs.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { REPO_ROOT } from './test-tiers.mjs'

const BUILT = path.join(REPO_ROOT, 'node_modules', '@tapjs', 'test', 'test-built', 'dist', 'esm', 'index.js')

/** The configured plugin set, and the one tap's Test class is built with ('' when unreadable: then it is built). */
export async function tapPlugins() {
  // tap's config parses process.argv as tap's own: npm test's flags (--unit) and files are not for it.
  const argv = process.argv
  process.argv = argv.slice(0, 2)
  let wanted
  try {
    const { TapConfig } = await import('@tapjs/config')
    wanted = (await TapConfig.load()).pluginSignature
  } finally {
    process.argv = argv
  }
  // Read from the built file, not imported: importing @tapjs/test outside a tap run can trip its module cycle.
  const text = existsSync(BUILT) ? readFileSync(BUILT, 'utf8') : ''
  const built = /^export const signature = `([^`]*)`;$/m.exec(text)?.[1] ?? ''
  return { wanted, built }
}

export async function ensureTapPlugins(log) {
  const { wanted, built } = await tapPlugins()
  if (built === wanted) return
  log("building tap's plugin set from package.json (the first run after an install)")
  const r = spawnSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'tap'), ['build'], { cwd: REPO_ROOT, stdio: 'inherit' })
  if (r.status !== 0) throw new Error(`tap build failed (${r.status ?? r.signal})`)
}
