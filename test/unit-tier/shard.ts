// The unit tier runs its files in a few long-lived processes instead of one process per file: a unit file's own
// work is small, and most of a per-file process was spent starting Node, tap's hooks and the TypeScript loader and
// compiling the same src/ modules again (52 files: 105 s one process each, 21 s in one process, same machine).
// Each shard imports its share of test/unit in name order; every file's top-level tests join this process's root,
// so a unit test must leave no global state behind (env, timers, monkey-patches) — the files also run alone with
// `npm test -- test/unit/<file>`, which is how a failure is best read.
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const UNIT_DIR = path.resolve(__dirname, '..', 'unit')

/** The unit files shard `index` of `count` runs: every count-th file of the sorted list. */
export function shardFiles(index: number, count: number): string[] {
  return readdirSync(UNIT_DIR)
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .filter((_, i) => i % count === index)
}

export async function runShard(index: number, count: number): Promise<void> {
  for (const f of shardFiles(index, count)) await import(pathToFileURL(path.join(UNIT_DIR, f)).href)
}
