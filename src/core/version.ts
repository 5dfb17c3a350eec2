// What GET / reports: the package version and the deployed commit (the spec, Versioning).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './root'

export const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version

/** PM_GIT_COMMIT when the deploy sets it (the Dockerfile has no .git); otherwise the work tree's HEAD. */
export function gitCommit(fromEnv: string): string {
  if (fromEnv) return fromEnv
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim()
  } catch {
    return 'desconhecido'
  }
}
