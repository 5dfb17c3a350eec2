// One big send delivered by every worker that has room: two `pombo serve --roles worker` processes share one
// deployment (schema + Redis prefix) with an in-process API; a segment send is cut into slices (PM_SLICE_DEVICES)
// that both lease. A worker SIGKILLed mid-slice has its slice taken over; rate_por_min holds across both processes.
// Every device must get the message at least once and every counter must end exact. PM_KEEP_WORKER_LOGS=1 keeps
// the workers' logs in the temporary directory.
import t, { type Test } from 'tap'
import { loadSends } from '../../src/delivery/audience'
import { planSlices, type SliceLease, SliceRunner, sliceBounds } from '../../src/delivery/slices'
import { basic, startService, VAULT_KEY } from '../helpers/service'
import { until } from '../helpers/until'
import { workerDeployment } from '../helpers/worker-deployment'

type Tap = Test

// Its waits last while delivery progresses (workerDeployment's closed): a loaded machine may run the file alone past
// tap's 240 s.
t.setTimeout(600_000)

async function deployment(t: Tap, o: { devices: number; sliceDevices: number; rate?: number }) {
  const d = await workerDeployment(t, {
    label: 'slices',
    devices: o.devices,
    partitions: 4,
    rate: o.rate,
    workerEnv: {
      PM_PARTITIONS: '4',
      PM_LEASE_MS: '2000',
      PM_HEARTBEAT_MS: '1000',
      PM_HANDOFF_GRACE_MS: '3000',
      PM_DEFAULT_PLAN: 'pro',
      PM_VAULT_KEY: VAULT_KEY,
      PM_LOG_LEVEL: 'info',
      PM_SLICE_DEVICES: String(o.sliceDevices),
      NODE_OPTIONS: '',
    },
  })
  const { s, app } = d

  return {
    ...d,
    async send(): Promise<{ id: string; accepted: number }> {
      const r = await s.call('POST', '/api/v1/notifications', {
        body: { app_id: app.id, contents: { en: 'Slices' }, included_segments: ['Subscribed Users'] },
        headers: basic(app.api_key),
      })
      if (r.status !== 200 || !r.json.id) throw new Error(`send: ${r.status} ${r.text}`)
      return { id: r.json.id, accepted: Date.now() }
    },
    slices(sendId: string) {
      return s.sql<{ slice: number; owner: string | null; leases: number; done_at: Date | null }>(
        'SELECT slice, owner, leases, done_at FROM send_slices WHERE send_id = $1 ORDER BY slice',
        [sendId],
      )
    },
  }
}

type Deployment = Awaited<ReturnType<typeof deployment>>

const pidOf = (owner: string | null) => Number(owner?.split(':').at(-2))

/** Every device got the message at least once; each counted once; the send is closed; every slice done. */
async function exact(t: Tap, d: Deployment, sendId: string, row: Record<string, unknown>): Promise<void> {
  const tokens = new Set(d.fcm.delivered.map((r) => r.target))
  t.equal(
    tokens.size,
    d.ids.length,
    `every device received the message (${d.fcm.delivered.length} accepted, ${d.fcm.delivered.length - tokens.size} duplicates)`,
  )
  t.equal(row.recipients, d.ids.length, 'recipients: the whole segment, once')
  t.equal(row.successful, d.ids.length, 'every device counted successful, once')
  t.equal(row.failed, 0)
  t.equal(row.errored, 0)
  t.equal(row.android_successful, row.successful, 'platform stats agree')
  const [final] = await d.s.sql<{ ok: number; other: number }>(
    'SELECT count(*) FILTER (WHERE status = 1)::int AS ok, count(*) FILTER (WHERE status <> 1)::int AS other FROM deliveries WHERE send_id = $1',
    [sendId],
  )
  t.same(final, { ok: d.ids.length, other: 0 }, 'one successful delivery row per device')
  // A slice is marked done when its walk returns, after the outcomes that close the send: the last one may still be
  // on its way when the send reads closed (seen under load), so it is waited for, not expected at once.
  const slices = await until(
    'every slice of the send done',
    async () => {
      const all = await d.slices(sendId)
      return all.every((x) => x.done_at) ? all : null
    },
    10_000,
  ).catch(() => d.slices(sendId))
  t.ok(slices.length > 1, `the send was sliced (${slices.length} slices)`)
  t.ok(
    slices.every((x) => x.done_at),
    'every slice done',
    { open: slices.filter((x) => !x.done_at).map((x) => x.slice) },
  )
}

t.test('slice bounds cover the id space once, in order', async (t) => {
  for (const k of [1, 2, 3, 7, 256]) {
    const b = sliceBounds(k)
    t.equal(b.length, k)
    t.equal(b[0]?.lo, '00000000-0000-0000-0000-000000000000')
    t.equal(b.at(-1)?.hi, 'ffffffff-ffff-ffff-ffff-ffffffffffff')
    for (let i = 1; i < k; i++) t.equal(b[i]?.lo, b[i - 1]?.hi, `slice ${i} starts where ${i - 1} ends`)
    t.ok(
      b.every((x) => x.lo < x.hi),
      'each slice non-empty',
    )
  }
})

t.test('a slice with a pending device left in its range is not marked done: it is leased and walked again', async (t) => {
  const s = await startService(t, { roles: ['api'], env: { PM_DEFAULT_PLAN: 'pro' } })
  const app = await s.createApp()
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, language, notification_types,
                          invalid_identifier, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'left-' || i, 1, false, 'fcm', 'en', 1, false, now(), now(), now() FROM generate_series(1, 4) AS i`,
    [app.id],
  )
  const r = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Left behind' }, included_segments: ['Subscribed Users'] },
    headers: basic(app.api_key),
  })
  const sendId = r.json.id as string
  const { db, log } = s.svc.deps
  const meta = (await loadSends(db, [{ appId: app.id, sendId }], new Date())).get(sendId)?.meta
  if (!meta) throw new Error('no send')
  await planSlices(db, meta, 1)
  const leased: SliceLease[] = []
  const runner = new SliceRunner(
    db,
    'owner-a',
    { sliceDevices: 1, perWorker: 1, leaseMs: 60_000, pollMs: 1_000, idlePollMs: 1_000 },
    Date.now,
    log,
    async (l) => {
      leased.push(l)
    },
    () => {},
  )
  await runner.poll()
  const first = leased[0] as SliceLease
  t.equal(first.slice, 0, 'slice 0 leased')
  // A device of the slice's range still pending (as a stalled former owner's last expansion would leave it).
  const behind = '00000001-0000-4000-8000-000000000000'
  await s.sql('INSERT INTO deliveries (send_id, device_id, app_id, device_type) VALUES ($1, $2, $3, 1)', [sendId, behind, app.id])
  await runner.finish(first, true)
  const [row] = await s.sql('SELECT done_at FROM send_slices WHERE send_id = $1 AND slice = 0', [sendId])
  t.equal(row?.done_at, null, 'not done while a device of it is pending')
  await runner.poll() // the worker looks for work as soon as a slice is through: the same slice, given back
  const again = leased[1] as SliceLease
  t.same([again.slice, again.leases], [0, 2], 'leased again for another walk')
  await s.sql('UPDATE deliveries SET status = 1 WHERE send_id = $1 AND device_id = $2', [sendId, behind])
  await runner.finish(again, true)
  const [done] = await s.sql('SELECT done_at FROM send_slices WHERE send_id = $1 AND slice = 0', [sendId])
  t.ok(done?.done_at, 'done once every device of it is final')
})

t.test('two worker processes deliver one send together: both lease slices; counters exact', async (t) => {
  const d = await deployment(t, { devices: 6_000, sliceDevices: 500 })
  d.fcm.setDefaultBehaviour('slow:20')
  const a = await d.worker()
  const b = await d.worker()
  const { id } = await d.send()
  const [row = {}] = await d.closed([id])
  await exact(t, d, id, row)
  const owners = new Set((await d.slices(id)).map((x) => pidOf(x.owner)))
  t.same([...owners].sort(), [a.pid, b.pid].sort(), 'slices were delivered by both processes')
})

t.test(
  'a worker SIGKILLed mid-slice: its slice is taken over; every device delivered at least once; counters exact',
  async (t) => {
    const d = await deployment(t, { devices: 8_000, sliceDevices: 1_000 })
    d.fcm.setDefaultBehaviour('slow:20')
    await d.worker()
    await d.worker()
    const { id } = await d.send()
    await d.delivered(d.ids.length * 0.25, 60_000)
    // A worker that holds an open slice right now.
    const open = (await d.slices(id)).filter((x) => !x.done_at && x.owner)
    const victim = d.workers.find((w) => w.pid === pidOf(open[0]?.owner ?? null))
    t.ok(victim, 'a worker holds an open slice')
    const before = d.fcm.stats().delivered
    const gone = new Promise<void>((resolve) => {
      if (!victim || victim.child.exitCode !== null || victim.child.signalCode !== null) resolve()
      else victim.child.once('exit', () => resolve())
    })
    victim?.child.kill('SIGKILL')
    await gone
    t.ok(before < d.ids.length, `killed mid-way (${before} of ${d.ids.length} accepted)`)
    // What the victim held when it died: a slice it finished between the look above and the kill is done, not taken
    // over. A statement it had already sent may still commit after its exit: a moment for that, well inside the
    // 2 s lease, before anyone could take a slice over.
    await new Promise((r) => setTimeout(r, 200))
    const held = (await d.slices(id)).filter((x) => !x.done_at && pidOf(x.owner) === victim?.pid).map((x) => x.slice)
    t.ok(held.length > 0, `the victim died holding open slices (${held.join(', ')})`)
    const [row = {}] = await d.closed([id])
    await exact(t, d, id, row)
    const after = await d.slices(id)
    for (const k of held) {
      const x = after.find((y) => y.slice === k)
      t.ok(
        x && x.leases >= 2 && pidOf(x.owner) !== victim?.pid,
        `slice ${k} taken over by the survivor (leased ${x?.leases} times)`,
      )
    }
  },
)

t.test('rate_por_min holds across two processes delivering one send', async (t) => {
  // 1,200 a minute: 20 a second, one second's burst. 240 devices in 4 slices take at least (240 - 20) / 20 = 11 s
  // whoever delivers them; two processes each pacing alone would take about half that.
  const d = await deployment(t, { devices: 240, sliceDevices: 60, rate: 1_200 })
  const a = await d.worker()
  const b = await d.worker()
  const { id, accepted } = await d.send()
  const [row = {}] = await d.closed([id])
  await exact(t, d, id, row)
  const ats = d.fcm.delivered.map((r) => r.at)
  const last = Math.max(...ats) - accepted
  t.ok(last >= 9_500, `the last of 240 deliveries ${last} ms after acceptance (at least ~11 s at 20/s)`)
  // No two-second window holds much more than two seconds' worth plus the burst (60). The fake's arrival times are
  // paced tokens plus the way there: a stalled process sends several together, so the bound leaves some room (a
  // loaded machine saw 73), well under the 120 two processes pacing alone would reach.
  ats.sort((x, y) => x - y)
  let most = 0
  for (let i = 0, j = 0; i < ats.length; i++) {
    while ((ats[i] as number) - (ats[j] as number) >= 2_000) j++
    most = Math.max(most, i - j + 1)
  }
  t.ok(most <= 90, `at most ${most} deliveries in any two seconds (pace 40 + burst 20)`)
  const owners = new Set((await d.slices(id)).map((x) => pidOf(x.owner)))
  t.same([...owners].sort(), [a.pid, b.pid].sort(), 'both processes delivered slices of it')
})
