// The process group of `pombo serve` (src/group/supervisor.ts), its pure parts: how PM_PG_POOL is shared between the
// serving process and its workers, and the node flags a worker starts with.
import t from 'tap'
import { MIN_PG_BUDGET } from '../../src/core/config'
import { groupBudget, ownEntry, WORKER_SEMI_SPACE_FLAG } from '../../src/group/supervisor'

t.test('a process group shares PM_PG_POOL: the workers half, the serving process the rest, none below the minimum', async (t) => {
  t.same(groupBudget(32, 1), { parent: 16, worker: 16 }, 'the default group')
  t.same(groupBudget(32, 2), { parent: 16, worker: 8 })
  t.same(groupBudget(33, 2), { parent: 17, worker: 8 }, 'the odd connection stays with the API')
  t.same(groupBudget(32, 4), { parent: 8, worker: 6 }, 'a worker never gets less than the minimum (the group then opens 32)')
  t.same(
    groupBudget(12, 4),
    { parent: MIN_PG_BUDGET, worker: MIN_PG_BUDGET },
    'above PM_PG_POOL only when the minimums demand it',
  )
  for (let total = MIN_PG_BUDGET; total <= 200; total++) {
    for (let workers = 1; workers <= 8; workers++) {
      const b = groupBudget(total, workers)
      const within = b.parent + b.worker * workers <= Math.max(total, MIN_PG_BUDGET * (workers + 1))
      if (!within || b.parent < MIN_PG_BUDGET || b.worker < MIN_PG_BUDGET) t.fail(`${total}/${workers}: ${JSON.stringify(b)}`)
    }
  }
})

t.test("a group's workers start with the larger young generation unless the operator chose one", async (t) => {
  t.ok(ownEntry('').execArgv.includes(WORKER_SEMI_SPACE_FLAG), 'by default')
  t.notOk(ownEntry('--max-semi-space-size=8').execArgv.includes(WORKER_SEMI_SPACE_FLAG), 'NODE_OPTIONS names one')
  t.notOk(
    ownEntry('--enable-source-maps   --max-semi-space-size=64').execArgv.some((a) => a.startsWith('--max-semi-space-size')),
    'never two',
  )
  t.equal(ownEntry('').file, process.argv[1], 'the same program as this process')
})
