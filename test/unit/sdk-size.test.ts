// The self-contained script's size budget: dist/pombo.min.js gzipped (level 9) stays under the budget the package's
// README states, and the README's own figure is the size it has (within 5%), so neither drifts from the other.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import t from 'tap'

const SDK = join(__dirname, '..', '..', 'packages', 'sdk')

t.test('dist/pombo.min.js stays within the size budget the README states', async (t) => {
  const script = readFileSync(join(SDK, 'dist', 'pombo.min.js'))
  const gzip = gzipSync(script, { level: 9 }).length
  const readme = readFileSync(join(SDK, 'README.md'), 'utf8')
  const budget = Number(/Size budget: \*\*(\d+) bytes\*\* gzip/.exec(readme)?.[1])
  t.ok(budget > 0, 'the README states the budget')
  t.ok(gzip <= budget, `gzip ${gzip} bytes <= budget ${budget}`)
  const [, minKb, gzKb] = /(\d+(?:\.\d)?) kB minified,\s+(\d+(?:\.\d)?) kB gzip/.exec(readme) ?? []
  t.ok(minKb && gzKb, 'the README states the sizes')
  const near = (stated: number, actual: number) => Math.abs(stated * 1000 - actual) <= actual * 0.05
  t.ok(near(Number(gzKb), gzip), `README gzip ${gzKb} kB ~ ${(gzip / 1000).toFixed(1)} kB`)
  t.ok(near(Number(minKb), script.length), `README minified ${minKb} kB ~ ${(script.length / 1000).toFixed(1)} kB`)
  t.match(
    script.toString('utf8', 0, 60),
    /^\/\*! @pombo\/sdk \d+\.\d+\.\d+ \| MIT \*\//,
    'the banner names the package and its licence',
  )
})
