// The process's policy for bugs that escape every request boundary (src/main.ts): an unhandled rejection is logged
// with context and the process serves on; an uncaught exception is logged, the process drains and exits 1.
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { serveChild } from '../helpers/serve-child'

const serve = (t: Test, kind: string) =>
  serveChild(t, {
    env: { PM_TEST_MISBEHAVE: kind },
    nodeArgs: ['--import', join(__dirname, '..', 'fixtures', 'misbehave.mjs')],
  })

t.test('an unhandled rejection is logged and the process serves on', async (t) => {
  const p = await serve(t, 'rejection')
  t.ok(await p.up(), 'serving')
  for (let i = 0; i < 50 && !p.logs().includes('unhandled promise rejection'); i++) await new Promise((r) => setTimeout(r, 100))
  t.match(
    p.logs(),
    /unhandled promise rejection.*a promise nobody awaited|a promise nobody awaited.*unhandled promise rejection/s,
  )
  t.ok(await p.up(), 'still serving after it')
  t.equal(p.child.exitCode, null, 'still running')
  p.child.kill('SIGTERM')
  t.equal(await p.exited, 0)
})

t.test('an uncaught exception is logged; the process drains and exits 1 for its supervisor', async (t) => {
  const p = await serve(t, 'exception')
  t.equal(await p.exited, 1, 'exit code 1')
  t.match(p.logs(), /uncaught exception/)
  t.match(p.logs(), /a throw outside any request/)
  t.match(p.logs(), /stopping: finishing in-flight requests/, 'drained first')
})
