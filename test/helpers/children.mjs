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
