// The actor's named parts: the retry queue, the in-flight window and the page cursor of a small list
// send that arrives with its whole audience.
import t from 'tap'
import { InflightWindow, PageCursor, RetryQueue } from '../../src/delivery/actor'
import type { Candidate, SendMeta } from '../../src/handoff/send'
import type { Db } from '../../src/db/pool'

const c = (id: string): Candidate => ({ deviceId: id, token: `tok-${id}`, deviceType: 1, transport: 'fcm', valid: true })

t.test('retry queue: a retry is taken only once due, earliest due time reported', async (t) => {
  const q = new RetryQueue()
  t.equal(q.nextAt(), Number.POSITIVE_INFINITY)
  q.push(c('a'), 1, 2_000)
  q.push(c('b'), 2, 1_000)
  t.equal(q.size, 2)
  t.equal(q.nextAt(), 1_000)
  t.equal(q.takeDue(500), undefined, 'nothing due yet')
  t.same(q.takeDue(1_500), { c: c('b'), attempts: 2, atMs: 1_000 })
  t.equal(q.size, 1)
  t.equal(q.takeDue(2_000)?.c.deviceId, 'a')
  t.equal(q.size, 0)
})

t.test('in-flight window: full at its size, wakes the actor on every slot given back, drains', async (t) => {
  let freed = 0
  const w = new InflightWindow(2, () => freed++)
  w.take()
  w.take()
  t.ok(w.full)
  let drained = false
  const d = w.drained().then(() => {
    drained = true
  })
  w.give()
  t.notOk(w.full)
  t.equal(freed, 1)
  await Promise.resolve()
  t.notOk(drained, 'one still in flight')
  w.give()
  await d
  t.ok(drained)
  t.equal(w.used, 0)
})

t.test('page cursor: a small list send given its first page is walked with no read at all', async (t) => {
  const meta = { appId: 'a', id: 's', targetKind: 'players', audienceLength: 2 } as SendMeta
  const db = { query: () => t.fail('no page read for a send that arrived whole') } as unknown as Db
  const cur = new PageCursor(
    meta,
    db,
    500,
    () => 0,
    () => {},
    [c('1'), c('2')],
  )
  t.equal(cur.buffered, 2)
  t.notOk(cur.done)
  t.equal(cur.shift()?.c.deviceId, '1')
  t.equal(cur.shift()?.c.deviceId, '2')
  t.equal(cur.shift(), undefined)
  t.ok(cur.done, 'walked: nothing buffered, nothing to read')
})
