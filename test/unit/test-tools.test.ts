// scripts/test-tools.mjs: which programs a run's test files drive, read from the files themselves.
import t from 'tap'
import { ensureTestTools, TOOLS, toolsFor } from '../../scripts/test-tools.mjs'

type Tool = { name: string; present: () => boolean }
const names = (tools: Tool[]) => tools.map((tool) => tool.name)

t.test('each tool is wanted by the files that drive it, and only by them', async (t) => {
  t.same(names(toolsFor(['test/browser/dashboard.test.ts'])), ['chromium'])
  t.same(names(toolsFor(['test/integration/pgbouncer.test.ts'])), ['pgbouncer'])
  t.same(names(toolsFor(['test/integration/deploy.test.ts'])), ['docker-compose'])
  t.same(names(toolsFor(['test/integration/sends-create.test.ts', 'test/unit/errors.test.ts'])), [], 'plain files need none')
  t.same(names(toolsFor(['test/no-such-file.test.ts'])), [], 'a missing file needs nothing (tap reports it)')
  t.same(names(toolsFor(null)), names(TOOLS), 'a full run wants every tool')
})

t.test('tools already present are not installed again', async (t) => {
  const logged: string[] = []
  const here: Tool[] = [{ name: 'x', present: () => true }]
  t.same(ensureTestTools(here, { log: (m: string) => logged.push(m) }), [])
  t.same(logged, [], 'nothing said when there is nothing to do')
})
