// The README stays short (#30): at most 150 lines, and its first lines are the two commands a newcomer needs.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8')

t.test('at most 150 lines', async (t) => {
  const lines = readme.replace(/\n$/, '').split('\n').length
  t.ok(lines <= 150, `README.md has ${lines} lines`)
})

t.test('the first lines are npm start and npm test', async (t) => {
  const first = readme.split('\n').slice(0, 6).join('\n')
  t.match(first, /^npm start\b/m)
  t.match(first, /^npm test\b/m)
})
