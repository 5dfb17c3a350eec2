// The worker's heartbeat refreshes picked_at of the sends it holds without ever waiting on a row lock: it skips a
// row another statement holds (an outcome batch), so it can never be half of a deadlock with one (it was, and the
// outcome batch chosen as the victim had its pushes sent again).
import t from 'tap'
import { refreshPicked } from '../../src/delivery/audience'
import { startDelivery } from '../helpers/delivery'

t.test('a locked send is skipped, not waited for; the others are refreshed', async (t) => {
  const d = await startDelivery(t, { service: { roles: ['api'] } })
  const app = await d.s.createApp()
  const dev = await d.device(app, 'hb')
  const later = new Date(Date.now() + 3_600_000).toISOString()
  const [a, b, done] = [
    await d.send(app, { include_player_ids: [dev], send_after: later }),
    await d.send(app, { include_player_ids: [dev], send_after: later }),
    await d.send(app, { include_player_ids: [dev], send_after: later }),
  ]
  await d.s.sql('UPDATE sends SET completed_at = now() WHERE id = $1', [done])
  const { db } = d.s.svc.deps
  const holder = await db.connect()
  try {
    await holder.query('BEGIN')
    await holder.query('SELECT 1 FROM sends WHERE id = $1 FOR UPDATE', [a])
    const at = new Date('2030-01-01T00:00:00Z')
    const refs = [a, b, done].map((sendId) => ({ appId: app.id, sendId }))
    const started = Date.now()
    const n = await Promise.race([refreshPicked(db, refs, at), new Promise<string>((r) => setTimeout(() => r('waited'), 3_000))])
    t.equal(n, 1, 'one row refreshed: the locked one skipped, the closed one left alone')
    t.ok(Date.now() - started < 3_000, 'the heartbeat did not wait for the lock')
    const rows = await d.s.sql<{ id: string; picked_at: Date | null }>(
      'SELECT id, picked_at FROM sends WHERE id = ANY($1::uuid[])',
      [[a, b, done]],
    )
    const picked = new Map(rows.map((r) => [r.id, r.picked_at?.toISOString() ?? null]))
    t.equal(picked.get(b), at.toISOString(), 'the free open send is refreshed')
    t.not(picked.get(a), at.toISOString(), 'the locked send is not')
    t.not(picked.get(done), at.toISOString(), 'the closed send is not')
  } finally {
    await holder.query('ROLLBACK').catch(() => {})
    holder.release()
  }
  const again = await refreshPicked(db, [{ appId: app.id, sendId: a }], new Date('2030-01-01T00:00:10Z'))
  t.equal(again, 1, 'once the lock is gone the next beat refreshes it')
})
