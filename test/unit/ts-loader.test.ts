// The test processes' TypeScript loader (test/helpers/ts-loader.cjs), run as the tests run it, on a small program in a
// folder of its own: imported through ts-loader.mjs after another --import (as after tap's own), a .ts entry reached
// through the ESM loader and run as the main module, a `./x.js` that is a .ts file through require and through
// import() (its exports by name), a source map that puts a stack's line in the .ts file, and a compiled file kept
// until its source changes.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'

const LOADER = join(__dirname, '..', 'helpers', 'ts-loader.mjs')

function run(dir: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((done) =>
    execFile(
      process.execPath,
      ['--enable-source-maps', `--import=${join(dir, 'first.mjs')}`, `--import=${LOADER}`, join(dir, 'main.ts')],
      { cwd: dir, env: { PATH: process.env.PATH }, timeout: 30_000 },
      (e, out, err) => done({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  )
}

t.test('a .ts entry, .js names of .ts files, source maps, and a cache that follows the source', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pm-ts-loader-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'package.json'), '{"type":"commonjs"}')
  writeFileSync(join(dir, 'first.mjs'), 'globalThis.firstRan = true\n')
  writeFileSync(join(dir, 'dep.ts'), 'export const word: string = "one"\n')
  writeFileSync(join(dir, 'late.ts'), 'export const late = (n: number): number => n * 2\n')
  writeFileSync(
    join(dir, 'main.ts'),
    [
      "import { word } from './dep.js'",
      'interface Shape { n: number }',
      'const s: Shape = { n: 21 }',
      "console.log((globalThis as { firstRan?: boolean }).firstRan, word, 'main=' + (require.main === module))",
      "void import('./late.js').then((m) => {",
      '  console.log(m.late(s.n))',
      "  throw new Error('from line seven')",
      '})',
      '',
    ].join('\n'),
  )
  const first = await run(dir)
  t.equal(first.code, 1, 'the error thrown at the end ends the process')
  t.equal(
    first.out,
    'true one main=true\n42\n',
    "the --import before it ran first; the entry is require.main; ./dep.js and import('./late.js') (by name) are .ts",
  )
  t.match(
    first.err,
    new RegExp(`${join(dir, 'main.ts').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:7`),
    'the stack names main.ts, line 7',
  )

  writeFileSync(join(dir, 'dep.ts'), 'export const word: string = "two"\n')
  t.equal((await run(dir)).out, 'true two main=true\n42\n', 'a changed source is compiled again, not taken from the cache')
  writeFileSync(join(dir, 'dep.ts'), 'export const word: string = "one"\n')
  t.equal((await run(dir)).out, 'true one main=true\n42\n', 'and changed back, it runs as it reads again')
})
