// One Postgres connection budget per process (PM_PG_POOL): the dispatcher takes a quarter (at least 2, never more
// than its concurrency needs), the LISTEN connection one, the main pool the rest; never more than the budget.
import t from 'tap'
import { MIN_PG_BUDGET } from '../../src/core/config'
import { splitBudget } from '../../src/db/budget'
import { ConfigError, loadConfig } from '../../src/core/config'

t.test('the split of the default budget by roles', async (t) => {
  t.same(
    splitBudget(32, { dispatcher: true, webhookConcurrency: 32, listener: true }),
    { main: 23, webhooks: 8, listener: 1 },
    'all roles',
  )
  t.same(
    splitBudget(32, { dispatcher: false, webhookConcurrency: 32, listener: true }),
    { main: 31, webhooks: 0, listener: 1 },
    'api',
  )
  t.same(
    splitBudget(32, { dispatcher: true, webhookConcurrency: 32, listener: false }),
    { main: 24, webhooks: 8, listener: 0 },
    'worker',
  )
  t.same(
    splitBudget(32, { dispatcher: true, webhookConcurrency: 3, listener: false }),
    { main: 28, webhooks: 4, listener: 0 },
    'a small concurrency takes only what it needs',
  )
})

t.test('every budget from the minimum up stays within itself, each pool usable', async (t) => {
  const broken: string[] = []
  for (let total = MIN_PG_BUDGET; total <= 200; total++) {
    for (const dispatcher of [true, false]) {
      for (const listener of [true, false]) {
        const b = splitBudget(total, { dispatcher, webhookConcurrency: 32, listener })
        if (b.main + b.webhooks + b.listener > total || b.main < 3 || (dispatcher && b.webhooks < 2)) {
          broken.push(`${total} ${dispatcher} ${listener}: ${JSON.stringify(b)}`)
        }
      }
    }
  }
  t.same(broken, [], 'every budget from the minimum to 200 splits within itself')
})

t.test('PM_PG_POOL below the minimum is refused; the PgBouncer and migration settings are checked', async (t) => {
  t.throws(() => loadConfig({ PM_PG_POOL: '5' }), ConfigError)
  t.equal(loadConfig({ PM_PG_POOL: '6' }).limits.pgPool, 6)
  t.equal(loadConfig({}).pgBouncer, false)
  t.equal(loadConfig({ PM_PGBOUNCER: 'transaction' }).pgBouncer, true)
  t.throws(() => loadConfig({ PM_PGBOUNCER: 'session' }), /PM_PGBOUNCER: expected off or transaction/)
  t.equal(loadConfig({}).migrateOnStart, true)
  t.equal(loadConfig({ PM_MIGRATE_ON_START: '0' }).migrateOnStart, false)
  t.throws(() => loadConfig({ PM_MIGRATE_ON_START: 'maybe' }), ConfigError)
  t.equal(
    loadConfig({ DATABASE_URL: 'postgres://a@b/c' }).databaseDirectUrl,
    'postgres://a@b/c',
    'direct defaults to DATABASE_URL',
  )
  t.equal(
    loadConfig({ DATABASE_URL: 'postgres://a@b:6432/c', PM_DATABASE_DIRECT_URL: 'postgres://a@b/c' }).databaseDirectUrl,
    'postgres://a@b/c',
  )
})
