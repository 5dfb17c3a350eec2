// Small sends are batched across sends and apps: a worker that finds many one-device sends of several
// apps waiting takes them in a few statements, not a few per send, and each device still gets its message once,
// with exact counters and every stream entry acknowledged. A small send due now travels whole in its stream entry
// (src/handoff/carried.ts) and is not loaded at all; with that off, the loads are batched.
import t, { type Test } from 'tap'
import { startDelivery } from '../helpers/delivery'
import { startService } from '../helpers/service'

for (const carry of ['0', '10']) {
  t.test(
    `120 one-device sends of 3 apps, PM_HANDOFF_CARRY_DEVICES=${carry}: ${carry === '0' ? 'loaded' : 'carried, not loaded,'} and closed in a few batches; each device once; counters exact`,
    async (t) => {
      await batchedSends(t, carry)
    },
  )
}

async function batchedSends(t: Test, carry: string): Promise<void> {
  // The API alone first: the sends wait on the streams, so the worker finds them all at once.
  const d = await startDelivery(t, { service: { roles: ['api'] }, env: { PM_HANDOFF_CARRY_DEVICES: carry } })
  const sends: Array<{ id: string; target: string }> = []
  for (let a = 0; a < 3; a++) {
    const app = await d.s.createApp()
    await d.fcmFor(app)
    const targets = Array.from({ length: 40 }, (_, i) => `b-${a}-${i}`)
    const ids = await Promise.all(targets.map((x) => d.device(app, x)))
    const made = await Promise.all(
      ids.map((id) => d.send(app, { include_player_ids: [id], priority: a === 0 ? 'marketing' : 'transactional' })),
    )
    for (const [i, id] of made.entries()) sends.push({ id, target: targets[i] as string })
  }
  const w = await startService(t, {
    roles: ['worker'],
    shareWith: d.s,
    providerCa: d.ca,
    env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, PM_PARTITIONS: '4' },
  })
  for (const s of sends) {
    const row = await d.closed(s.id, 30_000)
    t.equal(row.successful, 1, `send ${s.id}: successful 1`)
  }
  const targets = d.fcm.delivered.map((r) => r.target)
  t.ok(
    sends.every((s) => targets.filter((x) => x === s.target).length === 1),
    'each device got its message once',
  )
  const counts = w.svc.delivery?.batches.counts
  t.ok(counts, 'the worker counts its batches')
  if (!counts) return
  if (carry === '0') {
    t.equal(counts.loaded, sends.length, 'every send loaded once')
    t.ok(counts.loadBatches <= 12, `loaded in ${counts.loadBatches} batches, not one per send`)
  } else t.equal(counts.loaded, 0, 'no send loaded: each entry carried its send')
  t.ok(counts.closeBatches <= 12, `closing asked for ${counts.closeAsked} sends took ${counts.closeBatches} statements`)
  // Every entry acknowledged: nothing pending on any stream.
  const { redis, keys } = w.svc.deps
  for (let p = 0; p < 4; p++) {
    const pending = (await redis.xpending(keys.workStream(p), 'workers').catch(() => [0])) as [number]
    t.equal(Number(pending[0] ?? 0), 0, `partition ${p}: nothing pending`)
  }
}

t.test(
  'a worker holds at most PM_WORKER_MAX_SENDS sends: a backlog waits in its stream, and all of it is delivered once',
  async (t) => {
    const d = await startDelivery(t, { service: { roles: ['api'] } })
    const app = await d.s.createApp()
    await d.fcmFor(app)
    d.fcm.script(/^backlog-/, 'slow:30') // each answer takes a while, so the backlog lasts
    const targets = Array.from({ length: 60 }, (_, i) => `backlog-${i}`)
    const ids = await Promise.all(targets.map((x) => d.device(app, x)))
    const made = await Promise.all(ids.map((id) => d.send(app, { include_player_ids: [id] })))
    const w = await startService(t, {
      roles: ['worker'],
      shareWith: d.s,
      providerCa: d.ca,
      env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, PM_PARTITIONS: '4', PM_WORKER_MAX_SENDS: '5' },
    })
    const worker = w.svc.delivery?.worker
    t.ok(worker, 'the process runs a worker')
    if (!worker) return
    let most = 0
    const watch = setInterval(() => {
      most = Math.max(most, worker.heldSends)
    }, 2)
    try {
      for (const id of made) t.equal((await d.closed(id, 30_000)).successful, 1, `send ${id}: successful 1`)
    } finally {
      clearInterval(watch)
    }
    t.ok(most >= 1 && most <= 5, `the worker never held more than 5 sends at once (at most ${most})`)
    const got = d.fcm.delivered.map((r) => r.target)
    t.ok(
      targets.every((x) => got.filter((y) => y === x).length === 1),
      'each device got its message once',
    )
  },
)
