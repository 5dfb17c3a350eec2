// The import-boundary checker run by `npm run lint` (scripts/check-layers.mjs): it passes on src/ as it is, and fails,
// naming the import, on an upward import, a folder cycle, and a folder that is in no layer.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import { check } from '../../scripts/check-layers.mjs'

function tree(files: Record<string, string>): string {
  const root = join(mkdtempSync(join(tmpdir(), 'layers-')), 'src')
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true })
    writeFileSync(join(root, p), text)
  }
  return root
}

t.test('src/ as it is: every import points down or across, no folder cycle', async (t) => {
  t.same(check().breaches, [])
})

t.test('an upward import is named with its file, its import and both layers', async (t) => {
  const { breaches } = check(
    tree({ 'core/time.ts': "import { x } from '../sends/store'\n", 'sends/store.ts': 'export const x = 1\n' }),
  )
  t.equal(breaches.length, 1)
  t.match(breaches[0], /core\/time\.ts imports \.\.\/sends\/store: core \(core\) may not import from features \(sends\)/)
})

t.test('type-only imports count', async (t) => {
  const { breaches } = check(
    tree({ 'db/pool.ts': "import type { X } from '../delivery/actor'\n", 'delivery/actor.ts': 'export type X = 1\n' }),
  )
  t.equal(breaches.length, 1)
})

t.test('a cycle between two folders of one layer is named with both imports', async (t) => {
  const { breaches } = check(
    tree({
      'sends/a.ts': "import { b } from '../delivery/b'\nexport const a = 1\n",
      'delivery/b.ts': "import { a } from '../sends/a'\nexport const b = 1\n",
    }),
  )
  t.equal(breaches.length, 1)
  t.match(breaches[0], /folder cycle (sends → delivery → sends|delivery → sends → delivery)/)
  t.match(breaches[0], /sends\/a\.ts → \.\.\/delivery\/b/)
  t.match(breaches[0], /delivery\/b\.ts → \.\.\/sends\/a/)
})

t.test('a folder in no layer is refused; downward and same-folder imports pass', async (t) => {
  const { breaches } = check(
    tree({
      'misc/x.ts': 'export const x = 1\n',
      'sends/a.ts': "import { c } from '../core/c'\nimport { d } from './d'\n",
      'sends/d.ts': 'export const d = 1\n',
      'core/c.ts': 'export const c = 1\n',
    }),
  )
  t.equal(breaches.length, 1)
  t.match(breaches[0], /folder "misc" is in no layer/)
})
