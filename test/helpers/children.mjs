// Preloaded into every test process (package.json "tap"."node-arg"). tap's @tapjs/processinfo adds its own
// `--import` to NODE_OPTIONS of every process a test starts, to record coverage and the process tree. That costs a
// child about a second before it runs anything (a loader thread and hooks), which tests that start `pombo` dozens of
// times pay again and again. When tap records no coverage (TAP_DISABLE_COVERAGE=1: a local `npm test`, any
// `npm run test:*`), children are started without it; with coverage on (CI) they keep it, so their coverage counts.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

if (process.env.TAP_DISABLE_COVERAGE === '1') {
  // The same instance processinfo registered its listener on (hoisted); listeners run in the order added, so this one
  // sees the options processinfo wrote and takes its import out again.
  const onSpawn = require('process-on-spawn')
  const processinfo = /"?--import=[^"\s]*@tapjs[\\/]processinfo[^"\s]*"?/g
  onSpawn.addListener((opts) => {
    const nodeOptions = opts.env?.NODE_OPTIONS
    if (nodeOptions) opts.env = { ...opts.env, NODE_OPTIONS: nodeOptions.replace(processinfo, '').trim() }
    return opts
  })
}

// PM_TEST_PROFILE=<file>: each test process appends one JSON line when it exits: its file, start (epoch ms) and wall time, its own CPU
// and the CPU of the children it waited for (/proc/self/stat), and how many test services it started
// (globalThis.__pmServiceStarts, counted by test/helpers/service.ts) and what became of their schemas
// (globalThis.__pmSchemaPool: claimed from the run's pool, emptied back into it, dropped and why). scripts/test-profile.mjs reads them into a
// table: where the suite's time goes, by file.
// A shard (test/tiers) is recorded as one file: the files it imports share its process.
if (process.env.PM_TEST_PROFILE && /\.test\.ts$|[\\/]test[\\/]tiers[\\/][a-z]+-\d+\.ts$/.test(process.argv[1] ?? '')) {
  const { appendFileSync, readFileSync } = require('node:fs')
  const started = Date.now()
  process.on('exit', () => {
    try {
      const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
      const tick = 100
      const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(f[i]) / tick)
      const line = {
        file: process.argv[1].replace(`${process.cwd()}/`, ''),
        started,
        wall: (Date.now() - started) / 1000,
        cpu: +(utime + stime).toFixed(2),
        children: +(cutime + cstime).toFixed(2),
        services: globalThis.__pmServiceStarts ?? 0,
        schemas: globalThis.__pmSchemaPool,
      }
      appendFileSync(process.env.PM_TEST_PROFILE, `${JSON.stringify(line)}\n`)
    } catch {
      // no /proc (not Linux): nothing to record
    }
  })
}

// tap's error domains on an AsyncLocalStorage (test/helpers/tap-domain.cjs says why): put in the module cache where
// @tapjs/core's require of async-hook-domain lands, before tap is loaded.
if (process.env.PM_TEST_TAP_DOMAIN !== 'package') {
  const { Module } = require('node:module')
  const { dirname, join } = require('node:path')
  const { fileURLToPath } = require('node:url')
  const target = require.resolve('async-hook-domain', { paths: [dirname(require.resolve('@tapjs/core'))] })
  const file = join(dirname(fileURLToPath(import.meta.url)), 'tap-domain.cjs')
  const m = new Module(target)
  m.filename = target
  m.loaded = true
  m.exports = require(file)
  require.cache[target] = m
}
