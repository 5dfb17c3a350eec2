// Crash tests of the delivery engine: two `pombo serve --roles worker` processes share one
// deployment (schema + Redis prefix) with an in-process API; a 10,000-device send is under way when one worker is
// SIGKILLed, when every Redis key of the deployment is deleted, or when the worker delivering it stalls past its lease
// (SIGSTOP). Every device must get the message at least once and every counter must end exact (each device counted
// once), with the send closed. PM_KEEP_WORKER_LOGS=1 keeps the workers' logs in the temporary directory.
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import type { Pombo } from '../../bench/lib/pombo'
import { partitionOf } from '../../src/redis/partitions'
import { basic, REDIS_URL, VAULT_KEY } from '../helpers/service'
import { workerDeployment } from '../helpers/worker-deployment'

const DEVICES = 10_000
const PARTITIONS = 4
/** Short lease, heartbeat and grace so a takeover and a re-enqueue happen within seconds. */
const WORKER_ENV = {
  PM_PARTITIONS: String(PARTITIONS),
  PM_LEASE_MS: '2000',
  PM_HEARTBEAT_MS: '1000',
  PM_HANDOFF_GRACE_MS: '3000',
  PM_DEFAULT_PLAN: 'pro',
  PM_VAULT_KEY: VAULT_KEY,
  PM_LOG_LEVEL: 'info',
  // The test runner's own instrumentation is not for the workers.
  NODE_OPTIONS: '',
}

type Tap = Test

// Three deployments of 10,000 deliveries each: about 20 s in all on a quiet machine, minutes on a loaded one
// (each wait lasts while delivery progresses), which tap's 240 s for a file alone would cut short.
t.setTimeout(600_000)

async function deployment(t: Tap) {
  const d = await workerDeployment(t, { label: 'crash', devices: DEVICES, partitions: PARTITIONS, workerEnv: WORKER_ENV })
  const { s, app } = d
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const partition = partitionOf(app.id, PARTITIONS)

  return {
    ...d,
    redis,
    /** The pid of the worker holding the app's partition lease (null while nobody holds it). */
    async owner(): Promise<number | null> {
      const id = await redis.get(`${s.cfg.redisPrefix}:{p${partition}}:lease`)
      return id ? Number(id.split(':').at(-2)) : null
    },
    /** How many partition leases each worker pid holds, once every partition has a holder and `ok` agrees. */
    async shares(ok: (byPid: Map<number, number>) => boolean, timeoutMs = 15_000): Promise<Map<number, number>> {
      const until = Date.now() + timeoutMs
      for (;;) {
        const ids = await redis.mget(Array.from({ length: PARTITIONS }, (_, p) => `${s.cfg.redisPrefix}:{p${p}}:lease`))
        const byPid = new Map<number, number>()
        for (const id of ids) if (id) byPid.set(Number(id.split(':').at(-2)), (byPid.get(Number(id.split(':').at(-2))) ?? 0) + 1)
        if (ids.every(Boolean) && ok(byPid)) return byPid
        if (Date.now() > until) throw new Error(`partition leases: ${JSON.stringify(ids)}`)
        await new Promise((r) => setTimeout(r, 100))
      }
    },
    stream: `${s.cfg.redisPrefix}:{p${partition}}:work`,
    async send(body: Record<string, unknown>): Promise<string> {
      const r = await s.call('POST', '/api/v1/notifications', {
        body: { app_id: app.id, contents: { en: 'Crash test' }, ...body },
        headers: basic(app.api_key),
      })
      if (r.status !== 200 || !r.json.id) throw new Error(`send: ${r.status} ${r.text}`)
      return r.json.id
    },
  }
}

type Deployment = Awaited<ReturnType<typeof deployment>>

/** Every device got the message at least once; each counted once; the sends are closed. */
async function exact(t: Tap, d: Deployment, sendIds: string[], rows: Array<Record<string, unknown>>): Promise<void> {
  const tokens = new Set(d.fcm.delivered.map((r) => r.target))
  const missing =
    d.ids.length -
    (await d.s.sql('SELECT count(*)::int AS n FROM devices WHERE identifier = ANY($1::text[])', [[...tokens]]))[0]?.n
  t.equal(
    tokens.size,
    DEVICES,
    `every device received the message (${d.fcm.delivered.length} accepted, ${d.fcm.delivered.length - tokens.size} duplicates)`,
  )
  t.equal(missing, 0, 'no device left out')
  let recipients = 0
  for (const r of rows) {
    recipients += r.recipients as number
    t.equal(
      (r.successful as number) + (r.failed as number) + (r.errored as number),
      r.recipients,
      `send ${r.id}: successful + failed + errored = recipients`,
    )
    t.equal(r.successful, r.recipients, `send ${r.id}: every device counted successful, once`)
    t.equal(r.android_successful, r.successful, `send ${r.id}: platform stats agree`)
    t.equal(r.remaining, 0)
    t.ok(r.completed_at, 'closed')
  }
  t.equal(recipients, DEVICES, 'recipients cover the whole audience')
  const [final] = await d.s.sql<{ ok: number; other: number }>(
    'SELECT count(*) FILTER (WHERE status = 1)::int AS ok, count(*) FILTER (WHERE status <> 1)::int AS other FROM deliveries WHERE send_id = ANY($1::uuid[])',
    [sendIds],
  )
  t.same(final, { ok: DEVICES, other: 0 }, 'one successful delivery row per device')
  // The actor acknowledges the send's entries just after it closes: give it a moment.
  let pending: unknown[] = []
  for (let i = 0; i < 50; i++) {
    pending = (await d.redis.xpending(d.stream, 'workers', '-', '+', 100).catch(() => [])) as unknown[]
    if (pending.length === 0) break
    await new Promise((r) => setTimeout(r, 100))
  }
  t.same(pending, [], 'no stream entry left pending')
}

t.test('a worker SIGKILLed mid-send: the other takes its partitions over and finishes; counters exact', async (t) => {
  const d = await deployment(t)
  d.fcm.setDefaultBehaviour('slow:20') // answers in flight when the kill lands
  const first = await d.worker()
  t.same(
    [...(await d.shares((m) => m.get(first.pid) === PARTITIONS)).keys()],
    [first.pid],
    'alone, a worker holds every partition',
  )
  const second = await d.worker()
  const shares = await d.shares((m) => m.get(first.pid) === PARTITIONS / 2 && m.get(second.pid) === PARTITIONS / 2)
  t.equal(shares.size, 2, 'a worker that joins later gets a fair share: the first hands partitions back')
  const sendId = await d.send({ included_segments: ['Subscribed Users'] })
  await d.delivered(DEVICES * 0.3)
  const victimPid = await d.owner()
  const victim = d.workers.find((w) => w.pid === victimPid)
  const survivor = d.workers.find((w) => w.pid !== victimPid) as Pombo
  t.ok(victim, 'a worker holds the app partition')
  const before = d.fcm.stats().delivered
  ;(victim as Pombo).child.kill('SIGKILL')
  t.ok(before < DEVICES, `killed mid-way (${before} of ${DEVICES} accepted)`)

  const [row] = await d.closed([sendId])
  t.equal(await d.owner(), survivor.pid, 'the survivor holds the partition now')
  t.equal(row?.recipients, DEVICES)
  await exact(t, d, [sendId], row ? [row] : [])
})

t.test(
  "the deployment's Redis keys deleted mid-send: workers recreate the group, the sweeper re-enqueues; counters exact",
  async (t) => {
    const d = await deployment(t)
    d.fcm.setDefaultBehaviour('slow:20')
    await d.worker()
    await d.worker()
    const sendIds: string[] = []
    const lists = Array.from({ length: 10 }, (_, i) => d.ids.slice(i * (DEVICES / 10), (i + 1) * (DEVICES / 10)))
    // Half the sends are under way when Redis loses the keys…
    for (const ids of lists.slice(0, 5)) sendIds.push(await d.send({ include_player_ids: ids }))
    await d.delivered(DEVICES * 0.15)
    // …the other half are on the work stream, not yet read: the workers are held still (SIGSTOP) while they are
    // accepted, so their stream entries exist only in the Redis that is about to lose them.
    for (const w of d.workers) process.kill(w.pid, 'SIGSTOP')
    try {
      for (const ids of lists.slice(5)) sendIds.push(await d.send({ include_player_ids: ids }))
      // Every send accepted while the workers were held is on the stream. Not a count of entries: a worker that lost a
      // partition under load before the stop moves an entry it read to the stream's end (worker.ts #move), which
      // leaves one more entry for the same send.
      const onStream = new Set<string>()
      for (const [, f] of await d.redis.xrange(d.stream, '-', '+'))
        for (let i = 0; i + 1 < f.length; i += 2) if (f[i] === 's') onStream.add(f[i + 1] as string)
      t.same(
        sendIds.slice(5).filter((id) => !onStream.has(id)),
        [],
        'the unread sends wait on the work stream',
      )
      let deleted = 0
      let cursor = '0'
      do {
        const [next, keys] = await d.redis.scan(cursor, 'MATCH', `${d.s.cfg.redisPrefix}:*`, 'COUNT', 1000)
        if (keys.length) deleted += await d.redis.del(...keys)
        cursor = next
      } while (cursor !== '0')
      t.ok(deleted > 0, `deleted ${deleted} keys at ${d.fcm.stats().delivered} of ${DEVICES} accepted`)
    } finally {
      for (const w of d.workers) process.kill(w.pid, 'SIGCONT')
    }

    const rows = await d.closed(sendIds)
    await exact(t, d, sendIds, rows)
    const [{ enqueued } = { enqueued: 0 }] = await d.s.sql<{ enqueued: number }>(
      'SELECT count(*)::int AS enqueued FROM sends WHERE id = ANY($1::uuid[]) AND enqueued_at IS NOT NULL',
      [sendIds.slice(5)],
    )
    // A reader blocked in XREADGROUP when the workers were stopped is handed the first new entry at once (it waits in
    // the stopped worker's socket, and survives the deletion); the others exist only in Redis and come back through
    // the sweeper.
    t.ok(enqueued >= 4, `the lost sends were re-enqueued by the sweeper (${enqueued} of 5)`)
    const groups = (await d.redis.xinfo('GROUPS', d.stream)) as unknown[][]
    t.ok(
      groups.some((g) => g[1] === 'workers'),
      'the workers recreated their consumer group',
    )
  },
)

t.test(
  'a worker stalled past its lease (SIGSTOP): the other takes over; on waking it stops its actor; counters exact',
  async (t) => {
    const d = await deployment(t)
    d.fcm.setDefaultBehaviour('slow:20')
    const first = await d.worker()
    await d.shares((m) => m.get(first.pid) === PARTITIONS)
    const second = await d.worker()
    await d.shares((m) => m.get(first.pid) === PARTITIONS / 2 && m.get(second.pid) === PARTITIONS / 2)
    const sendId = await d.send({ included_segments: ['Subscribed Users'] })
    await d.delivered(DEVICES * 0.3)
    const ownerPid = await d.owner()
    const sleeper = d.workers.find((w) => w.pid === ownerPid) as Pombo
    const other = d.workers.find((w) => w.pid !== ownerPid) as Pombo
    process.kill(sleeper.pid, 'SIGSTOP')
    try {
      await d.shares((m) => m.get(other.pid) === PARTITIONS, 20_000) // the lease lapsed and the other worker took it
      const seen = d.fcm.stats().delivered
      await d.delivered(seen + 1) // the other worker is delivering the send now (the stalled one cannot)
    } finally {
      process.kill(sleeper.pid, 'SIGCONT')
    }
    const [row] = await d.closed([sendId])
    await exact(t, d, [sendId], row ? [row] : [])
    // Sent twice: what was in flight when it stalled, and the few windows it sends on waking before its lease round
    // (typically 250–520 here). Were its actor to carry on beside the new owner's, both would walk the rest of the
    // audience (~10,000 duplicates here).
    const twice = d.fcm.delivered.length - DEVICES
    t.ok(twice < DEVICES / 8, `duplicates bounded by a few in-flight windows (${twice})`)
    t.ok(
      d.troubles().some((l) => l.includes(`-${d.workers.indexOf(sleeper)}.log`) && l.includes('lost to another worker')),
      'the stalled worker saw its lease taken and stopped its actor',
    )
  },
)
