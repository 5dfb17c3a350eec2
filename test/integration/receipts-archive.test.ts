// The `tardio` path (the spec, Receipts): receipts live in day partitions (the day the send was due); archival folds old
// days into the archive and drops their partitions; a receipt for an archived day still counts once, answered
// {ok: true, tardio: true}.
import t from 'tap'
import { deliveredSend } from '../helpers/receipts'

t.test('day partitions, archival, and receipts counted late exactly once', async (t) => {
  const w = await deliveredSend(t, { devices: 3 })
  const [a, b, c] = w.players as [string, string, string]
  const job = w.s.svc.deps.receipts
  const today = new Date().toISOString().slice(0, 10).replaceAll('-', '')

  // A send due 40 days ago, receipted before any archival: its day has no partition (default) until archival folds it.
  const old = await w.sendTo()
  await w.s.sql("UPDATE sends SET queued_at = queued_at - interval '40 days' WHERE id = $1", [old])
  t.same((await w.post(w.body(a, {}, old))).json, { ok: true }, 'not archived yet: counted now')
  const run = await job.archiveNow(30)
  t.ok(run.created >= 31, `the job creates the coming days' partitions (${run.created})`)
  t.equal(run.rows, 1, 'the 40-day-old receipt folded into the archive')
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM receipts WHERE send_id = $1', [old]))[0]?.n, 0, 'its detail is gone')

  t.same((await w.post(w.body(a))).json, { ok: true })
  const [row] = await w.s.sql('SELECT tableoid::regclass::text AS part FROM receipts WHERE device_id = $1', [a])
  t.equal(row?.part, `receipts_p${today}`, 'a receipt lands in its day partition')

  t.same((await w.post(w.body(a, {}, old))).json, { ok: true, duplicado: true }, 'the archive still knows it')
  t.same((await w.post(w.body(b, {}, old))).json, { ok: true, tardio: true })
  t.same((await w.post(w.body(b, {}, old))).json, { ok: true, duplicado: true })
  t.same((await w.post(w.body(b, { evento: 'clique' }, old))).json, { ok: true, tardio: true })
  t.same((await w.post(w.body(c, { evento: 'clique' }, old))).json, { ok: true, tardio: true }, 'a late click alone counts both')
  t.same(await w.counters(old), { recebidos: 3, converted: 2 })
  t.same(await w.counters(), { recebidos: 1, converted: 0 }, 'the recent send is untouched')

  // Past the 90-day window the archive does not help: the same 403 as a wrong proof.
  await w.s.sql("UPDATE sends SET queued_at = queued_at - interval '60 days' WHERE id = $1", [old])
  t.equal((await w.post(w.body(c, {}, old))).status, 403)

  // A horizon reaching past today (as if a day had gone by with a horizon of 0): today's partition is archived and
  // dropped, its receipts still count once.
  const all = await job.archiveNow(-1)
  t.ok(all.dropped >= 1, 'day partitions dropped')
  const parts = await w.s.sql(
    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'receipts'::regclass AND c.relname = $1",
    [`receipts_p${today}`],
  )
  t.same(parts, [], `receipts_p${today} is gone`)
  t.same((await w.post(w.body(a))).json, { ok: true, duplicado: true })
  t.same((await w.post(w.body(b))).json, { ok: true, tardio: true })
  t.same(await w.counters(), { recebidos: 2, converted: 0 })
  t.equal((await job.archiveNow(-1)).rows, 0, 'archiving again is a no-op')
})
