// A batch never fails for a job that is not its own (src/db/group-commit.ts): a job Postgres refuses is narrowed
// down by halves and fails alone; every other job commits, in order; outages and retryable conflicts are not split.
import t from 'tap'
import { GroupCommit } from '../../src/db/group-commit'
import { query } from '../../src/db/pool'
import { parseRegistration } from '../../src/devices/validate'
import { startService } from '../helpers/service'

t.test('a value Postgres refuses fails its own job only; the rest commit in arrival order', async (t) => {
  const s = await startService(t)
  const db = s.svc.deps.db
  await s.sql('CREATE TABLE gc_probe (seq serial PRIMARY KEY, v text NOT NULL)')
  let statements = 0
  const gc = new GroupCommit<string, number>(
    async (vs) => {
      statements++
      // One statement for the whole batch, as the real writers do: U+0000 makes Postgres refuse all of it (22021).
      const r = await query<{ seq: number }>(db, 'INSERT INTO gc_probe (v) SELECT unnest($1::text[]) RETURNING seq', [vs])
      return r.rows.map((x) => x.seq)
    },
    { maxBatch: 64, concurrency: 1, maxQueue: 1_000 },
  )
  const values = Array.from({ length: 64 }, (_, i) => (i === 37 ? 'guilty\u0000' : `ok-${i}`))
  const settled = await Promise.allSettled(values.map((v) => gc.submit(v)))
  const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [i] : []))
  t.same(failed, [37], 'only the guilty job failed')
  t.match((settled[37] as PromiseRejectedResult).reason, { code: '22021' }, 'with the error Postgres gave')
  const rows = await s.sql<{ v: string }>('SELECT v FROM gc_probe ORDER BY seq')
  t.same(
    rows.map((r) => r.v),
    values.filter((_, i) => i !== 37),
    'every other job committed, in the order it arrived',
  )
  t.ok(statements <= 1 + 2 * Math.ceil(Math.log2(64)), `narrowed by halves: ${statements} statements for 64 jobs, not 64`)
})

t.test('an outage is not split: every job of the batch gets the named failure at once', async (t) => {
  let calls = 0
  const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', dependency: 'postgres' })
  const gc = new GroupCommit<number, number>(
    async () => {
      calls++
      throw outage
    },
    { maxBatch: 32, concurrency: 1, maxQueue: 100 },
  )
  const settled = await Promise.allSettled(Array.from({ length: 32 }, (_, i) => gc.submit(i)))
  t.ok(settled.every((r) => r.status === 'rejected' && r.reason === outage))
  t.equal(calls, 1, 'one attempt, no split')
})

t.test('registrations: a row Postgres refuses fails alone, the batch around it is written', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const a = await s.createApp()
  const b = await s.createApp()
  const writer = s.svc.deps.devices.writer
  const before = writer.stats.statements
  const rows = Array.from({ length: 100 }, (_, i) =>
    parseRegistration({ app_id: i % 2 ? a.id : b.id, device_type: 1, identifier: `tok-${i}`, device_model: `m-${i}` }),
  )
  // The door refuses this (json-guard); here it is handed to the writer directly, as a validator gap would.
  ;(rows[41] as { device_model: string | null }).device_model = 'x\u0000y'
  const settled = await Promise.allSettled(rows.map((r) => writer.submit(r)))
  t.same(
    settled.flatMap((r, i) => (r.status === 'rejected' ? [i] : [])),
    [41],
    'only the guilty registration failed',
  )
  const n = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices')
  t.equal(n[0]?.n, 99, 'the other 99, of both apps, are durable')
  t.ok(
    writer.stats.statements - before <= 20,
    `narrowed by halves, not row by row (${writer.stats.statements - before} statements)`,
  )
  t.ok(
    s.logs.some((l) => /isolating the row/.test(String(l.msg))),
    'the split is logged: a validator let something through',
  )
})
