// The provider's window is given back at the provider's answer, not once the outcome is durable: a slow outcome write
// does not hold requests back from the provider, and how far delivering runs ahead of recording is bounded
// (4 × PM_INFLIGHT_PER_APP answered deliveries awaiting their record per app, and half the worker's outcome queue).
// Nothing is acknowledged or counted before it is durable, as ever.
import t from 'tap'
import pg from 'pg'
import { startDelivery } from '../helpers/delivery'
import { DATABASE_URL } from '../helpers/service'

type Tap = Parameters<typeof startDelivery>[0]

/**
 * A send to 20 devices (identifiers `<tag>-<n>`) while a transaction holds `deliveries` in EXCLUSIVE mode: reads go
 * on, every outcome statement waits behind it. Answers once the fake has seen no new request for a while.
 */
async function sendWhileOutcomesWait(t: Tap, tag: string, env: Record<string, string>) {
  const d = await startDelivery(t, { env })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const ids: string[] = []
  for (let i = 0; i < 20; i++) ids.push(await d.device(app, `${tag}-${i}`))
  const blocker = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${d.s.cfg.dbSchema}` })
  await blocker.connect()
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  await blocker.query('LOCK TABLE deliveries IN EXCLUSIVE MODE')

  const sendId = await d.send(app, { include_player_ids: ids })
  const asked = () => d.fcm.requests.filter((r) => r.target?.startsWith(`${tag}-`)).length
  // Until the deliveries stop growing: the assertions are on where they stop, so this waits for nothing to happen.
  let seen = -1
  for (const until = Date.now() + 15_000; Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 400))
    const now = asked()
    if (now === seen && now > 0) break
    seen = now
  }
  return { d, sendId, asked, release: () => blocker.query('COMMIT') }
}

t.test('a blocked outcome write lets the window run ahead by its bound, then every device is counted once', async (t) => {
  const { d, sendId, asked, release } = await sendWhileOutcomesWait(t, 'window', { PM_INFLIGHT_PER_APP: '2' })
  t.equal(asked(), 8, 'with the record blocked, 8 devices (4 × a window of 2) were delivered, not just the window of 2')
  const [open] = await d.s.sql('SELECT remaining, successful, completed_at FROM sends WHERE id = $1', [sendId])
  t.same(
    { remaining: open?.remaining, successful: open?.successful, completed: open?.completed_at !== null },
    { remaining: 20, successful: 0, completed: false },
    'nothing is counted before it is durable',
  )

  await release()
  const row = await d.closed(sendId)
  t.same(
    { successful: row.successful, failed: row.failed, errored: row.errored, remaining: row.remaining },
    { successful: 20, failed: 0, errored: 0, remaining: 0 },
  )
  t.equal(asked(), 20, 'every device was asked once')
})

t.test(
  "half the worker's outcome queue taken: no app starts another delivery until it drains, and none is refused",
  async (t) => {
    // A queue of 4: new deliveries stop once 2 outcomes wait, below this app's own bound of 8.
    const { d, sendId, asked, release } = await sendWhileOutcomesWait(t, 'queue', {
      PM_INFLIGHT_PER_APP: '2',
      PM_OUTCOME_QUEUE_MAX: '4',
    })
    // One outcome in the blocked statement, at most 2 queued when the actor stops, and the window's 2 answered after.
    t.ok(asked() <= 5, `at most 5 devices delivered while the outcomes wait (${asked()})`)
    await release()
    const row = await d.closed(sendId)
    t.same({ successful: row.successful, remaining: row.remaining }, { successful: 20, remaining: 0 })
    t.equal(asked(), 20, 'every device was asked once')
    t.notOk(
      d.s.logs.some((l) => l.msg === 'recording an outcome failed'),
      'no outcome was refused by a full queue',
    )
  },
)
