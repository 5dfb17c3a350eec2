// Where a test run's time goes, by file: reads the lines test processes append when PM_TEST_PROFILE names a file
// (test/helpers/children.mjs) and prints them heaviest first, with the totals. The suite is CPU-bound on a small
// machine, so the CPU columns (the file's own process, and the children it started: `pombo`, tsc, npm) say more about
// what a change to a test costs the whole run than its wall time, which depends on what ran beside it.
//   PM_TEST_PROFILE=/tmp/profile.jsonl npm run test:integration
//   node scripts/test-profile.mjs /tmp/profile.jsonl [--by wall|cpu|children|services] [--top N]
// It ends with the run's timeline: when each process ran, and how many ran at once (a tail with one or two processes
// left running is time the machine's cores sat idle).
import { readFileSync } from 'node:fs'

const [file, ...rest] = process.argv.slice(2)
if (!file) {
  console.error('usage: node scripts/test-profile.mjs <profile.jsonl> [--by wall|cpu|children|services] [--top N]')
  process.exit(2)
}
const opt = (name, fallback) => {
  const i = rest.indexOf(name)
  return i >= 0 && rest[i + 1] ? rest[i + 1] : fallback
}
const by = opt('--by', 'total')
const top = Number(opt('--top', '30'))
const rows = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .map((r) => ({ ...r, total: r.cpu + r.children }))
rows.sort((a, b) => b[by] - a[by])
const sum = (k) => rows.reduce((s, r) => s + r[k], 0)
const fmt = (n, w = 8) => n.toFixed(1).padStart(w)
console.log(`${'wall s'.padStart(8)}${'cpu s'.padStart(8)}${'child s'.padStart(8)}${'svc'.padStart(5)}  file`)
for (const r of rows.slice(0, top))
  console.log(`${fmt(r.wall)}${fmt(r.cpu)}${fmt(r.children)}${String(r.services).padStart(5)}  ${r.file}`)
console.log(
  `${fmt(sum('wall'))}${fmt(sum('cpu'))}${fmt(sum('children'))}${String(sum('services')).padStart(5)}  ${rows.length} files in all`,
)

// What became of the test services' schemas (test/helpers/schema-pool.ts), over every file.
const pool = { claimed: 0, pooled: 0, stamped: 0, trimmed: 0, dropped: {} }
for (const r of rows) {
  if (!r.schemas) continue
  pool.claimed += r.schemas.claimed
  pool.pooled += r.schemas.pooled
  pool.stamped += r.schemas.stamped ?? 0
  pool.trimmed += r.schemas.trimmed ?? 0
  for (const [why, n] of Object.entries(r.schemas.dropped)) pool.dropped[why] = (pool.dropped[why] ?? 0) + n
}
if (pool.claimed + pool.pooled > 0 || Object.keys(pool.dropped).length > 0) {
  console.log(
    `schemas: ${pool.claimed} taken from the run's pool, ${pool.pooled} emptied back into it (${pool.stamped} of them known unchanged by their stamp, ${pool.trimmed} after dropping partitions the service made)`,
  )
  for (const [why, n] of Object.entries(pool.dropped).sort((a, b) => b[1] - a[1])) console.log(`  ${n} dropped: ${why}`)
}

// The timeline: each process's span over the run, 60 columns wide, and how many processes ran at once per column.
const timed = rows.filter((r) => typeof r.started === 'number')
if (timed.length > 0) {
  const t0 = Math.min(...timed.map((r) => r.started))
  const t1 = Math.max(...timed.map((r) => r.started + r.wall * 1000))
  const cols = 60
  const span = Math.max(1, t1 - t0)
  const col = (ms) => Math.min(cols - 1, Math.floor(((ms - t0) / span) * cols))
  const running = new Array(cols).fill(0)
  console.log(`\ntimeline: ${(span / 1000).toFixed(0)} s, ${(span / cols / 1000).toFixed(1)} s a column`)
  for (const r of [...timed].sort((a, b) => a.started - b.started)) {
    const a = col(r.started)
    const b = col(r.started + r.wall * 1000)
    for (let i = a; i <= b; i++) running[i]++
    console.log(`${' '.repeat(a)}${'#'.repeat(b - a + 1)}${' '.repeat(cols - b - 1)}  ${r.file}`)
  }
  console.log(`${running.map((n) => (n > 9 ? '+' : String(n))).join('')}  processes at once`)
}
