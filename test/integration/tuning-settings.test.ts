// Tuning numbers read in src/core/config.ts reach the code that uses them: each setting, changed, moves what the service
// does (the defaults are covered by the tests of each feature).
import t from 'tap'
import { startService } from '../helpers/service'

t.test('PM_STATEMENT_TIMEOUT_MS is the statement_timeout of the pooled connections', async (t) => {
  const s = await startService(t, { env: { PM_STATEMENT_TIMEOUT_MS: '150' } })
  const [row] = await s.sql<{ statement_timeout: string }>('SHOW statement_timeout')
  t.equal(row?.statement_timeout, '150ms')
  await t.rejects(s.sql('SELECT pg_sleep(2)'), /statement timeout/, 'a longer statement is cancelled')
  const d = await startService(t)
  const [def] = await d.sql<{ statement_timeout: string }>('SHOW statement_timeout')
  t.equal(def?.statement_timeout, '30s', 'the default')
})
