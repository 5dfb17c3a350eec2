// How a test starts the real `pombo` entry point as a child process. Under `npm test` the sources are compiled once
// for the run (scripts/test-dist.mjs, PM_TEST_DIST_MAIN): a child then starts in well under a second instead of
// transforming every module through tsx, which CLI tests pay dozens of times. Run through tap directly, it is tsx
// on src/main.ts, as before. Either way the child runs the working tree's sources.
import { join } from 'node:path'

const SOURCE_MAIN = join(__dirname, '..', '..', 'src', 'main.ts')

/** node's arguments for `pombo <args>`, with node flags of the caller's before the entry. */
export function pomboArgv(args: readonly string[], nodeArgs: readonly string[] = []): string[] {
  const compiled = process.env.PM_TEST_DIST_MAIN
  return compiled ? [...nodeArgs, compiled, ...args] : ['--import', 'tsx', ...nodeArgs, SOURCE_MAIN, ...args]
}
