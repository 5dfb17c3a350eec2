// bin/pombo runs the compiled dist/ only when it is current (or when told to), src/ through tsx otherwise: a copy of
// bin/pombo in a scratch checkout whose two entries say which one ran, with the files' times set by hand.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'

const ROOT = join(__dirname, '..', '..')
/** Says which entry ran, whether it is the main module, and its arguments. */
const ENTRY = [
  "const which = process.argv[1].endsWith('.ts') ? 'src' : 'dist'",
  "console.log([which, 'main=' + (require.main === module), ...process.argv.slice(2)].join(' '))",
].join('\n')

function checkout(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-bin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'bin'))
  for (const f of ['pombo', 'dist.cjs']) copyFileSync(join(ROOT, 'bin', f), join(dir, 'bin', f))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  mkdirSync(join(dir, 'src', 'core'), { recursive: true })
  writeFileSync(join(dir, 'src', 'main.ts'), ENTRY)
  writeFileSync(join(dir, 'src', 'core', 'a.ts'), '')
  const at = (path: string, s: number) => utimesSync(join(dir, path), s, s)
  for (const p of ['src/core/a.ts', 'src/core', 'src/main.ts', 'src']) at(p, 1000)
  const build = (s: number) => {
    mkdirSync(join(dir, 'dist', 'src'), { recursive: true })
    writeFileSync(join(dir, 'dist', 'src', 'main.js'), ENTRY)
    at('dist/src/main.js', s)
  }
  const run = (env: Record<string, string> = {}) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile(
        process.execPath,
        [join(dir, 'bin', 'pombo'), 'migrate', '--status'],
        { env: { ...process.env, PM_USE_DIST: '', NODE_ENV: '', ...env } },
        (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out: out.trim(), err }),
      ),
    )
  return { dir, at, build, run }
}

t.test('no build: src through tsx, as the main module, with the arguments', async (t) => {
  const c = checkout(t)
  t.equal((await c.run()).out, 'src main=true migrate --status')
  t.equal((await c.run({ NODE_ENV: 'production' })).out, 'src main=true migrate --status', 'nothing else to run')
  const forced = await c.run({ PM_USE_DIST: '1' })
  t.equal(forced.code, 1, 'PM_USE_DIST=1 without a build fails')
  t.match(forced.err, /^pombo: PM_USE_DIST=1 but .*dist\/src\/main\.js is missing; run `npm run build`/)
})

t.test('a build newer than every file in src/: dist', async (t) => {
  const c = checkout(t)
  c.build(2000)
  t.equal((await c.run()).out, 'dist main=true migrate --status')
  t.equal((await c.run({ PM_USE_DIST: '0' })).out.split(' ')[0], 'src', 'PM_USE_DIST=0: src all the same')
})

t.test('a file edited, added or removed after the build: src, unless told otherwise', async (t) => {
  const c = checkout(t)
  c.build(2000)
  c.at('src/core/a.ts', 3000)
  t.equal((await c.run()).out.split(' ')[0], 'src', 'an edited file')
  t.equal((await c.run({ PM_USE_DIST: '1' })).out.split(' ')[0], 'dist', 'PM_USE_DIST=1')
  t.equal((await c.run({ NODE_ENV: 'production' })).out.split(' ')[0], 'dist', 'NODE_ENV=production')
  c.at('src/core/a.ts', 1000)
  c.at('src/core', 3000)
  t.equal((await c.run()).out.split(' ')[0], 'src', 'a folder changed (a file added, removed or renamed)')
})

t.test('no src/ beside the build (the image): dist', async (t) => {
  const c = checkout(t)
  c.build(2000)
  rmSync(join(c.dir, 'src'), { recursive: true })
  t.equal((await c.run()).out, 'dist main=true migrate --status')
})
