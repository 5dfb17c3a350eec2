// Partitions tuned safely: the deployment's count is recorded; a process started with another one refuses
// to start with one line; `pombo partitions` shows each partition; `pombo partitions resize N` changes the count
// without losing or doubling work, and is refused while a worker is live.
import t from 'tap'
import { partitionOf, partitionStatus, recordedPartitions, resizePartitions } from '../../src/redis/partitions'
import { oneLineFailure, pombo } from '../helpers/cli'
import { startDelivery } from '../helpers/delivery'
import { startService } from '../helpers/service'

t.test(
  'resize 4 → 8: every unfinished send once on its new stream, delivered once; the old count refuses to start',
  async (t) => {
    // The API alone (no worker, no sweeper): the sends wait on the streams of the 4-partition deployment.
    const d = await startDelivery(t, { service: { roles: ['api'] } })
    const { db, redis, keys } = d.s.svc.deps
    t.equal(await recordedPartitions(db), 4, 'the first process recorded its count')
    const sends: Array<{ app: string; id: string; target: string }> = []
    for (let a = 0; a < 6; a++) {
      const app = await d.s.createApp()
      await d.fcmFor(app)
      for (let k = 0; k < 2; k++) {
        const target = `rs-${a}-${k}`
        sends.push({ app: app.id, id: await d.send(app, { include_player_ids: [await d.device(app, target)] }), target })
      }
    }
    // One entry read and never acknowledged (a worker died holding it), and one send already finished.
    const first = keys.workStream(partitionOf(sends[0]?.app as string, 4))
    await redis.xgroup('CREATE', first, 'workers', '0', 'MKSTREAM')
    await redis.xreadgroup('GROUP', 'workers', 'ghost', 'COUNT', 1, 'STREAMS', first, '>')
    const done = sends.pop() as { app: string; id: string; target: string }
    await d.s.sql('UPDATE sends SET completed_at = now() WHERE id = $1', [done.id])
    const before = await partitionStatus(redis, keys, 4, Date.now())
    t.equal(
      before.reduce((n, p) => n + p.pending, 0),
      1,
      'status shows the pending entry',
    )
    t.ok(
      before.some((p) => p.oldestPendingAgeMs !== null && p.oldestPendingAgeMs >= 0),
      'and its age',
    )

    const st = await pombo(d.s, ['partitions'], { PM_PARTITIONS: '4' })
    t.equal(st.code, 0, st.stderr)
    t.match(st.stdout, /partitions: 4 \(recorded\)/)
    t.equal(st.stdout.trim().split('\n').length, 2 + 4, 'a header and one line per partition')

    const resized = await pombo(d.s, ['partitions', 'resize', '8'], { PM_PARTITIONS: '4' })
    t.equal(resized.code, 0, resized.stderr)
    t.same(JSON.parse(resized.stdout), { de: 4, para: 8, reenfileirados: sends.length })
    t.equal(await recordedPartitions(db), 8)

    const seen = new Map<string, number>()
    for (let p = 0; p < 8; p++) {
      const entries = (await redis.xrange(keys.workStream(p), '-', '+')) as Array<[string, string[]]>
      for (const [, f] of entries) {
        const app = f[f.indexOf('a') + 1] as string
        const send = f[f.indexOf('s') + 1] as string
        t.equal(partitionOf(app, 8), p, 'on its app’s stream under the new count')
        seen.set(send, (seen.get(send) ?? 0) + 1)
      }
    }
    t.same([...seen.keys()].sort(), sends.map((s) => s.id).sort(), 'every unfinished send re-enqueued, the finished one not')
    t.ok(
      [...seen.values()].every((n) => n === 1),
      'each once',
    )

    const refused = await pombo(d.s, ['serve', '--roles', 'worker'], { PM_PARTITIONS: '4' })
    // (serve logs its start on stdout before it refuses)
    t.equal(refused.code, 2, 'a process with the old count exits 2')
    t.equal(refused.stderr.trim().split('\n').length, 1, `one line: ${refused.stderr.trim()}`)
    t.match(refused.stderr, /PM_PARTITIONS=4 but this deployment has 8 partitions/)

    // A worker of the resized deployment delivers every send once.
    const w = await startService(t, {
      roles: ['worker'],
      shareWith: d.s,
      providerCa: d.ca,
      env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, PM_PARTITIONS: '8' },
    })
    for (const s of sends) await d.closed(s.id, 20_000)
    const targets = d.fcm.delivered.map((r) => r.target)
    for (const s of sends) t.equal(targets.filter((x) => x === s.target).length, 1, `${s.target} delivered once`)
    t.notOk(targets.includes(done.target), 'the finished send was not delivered again')

    await t.rejects(
      resizePartitions(db, redis, keys, 2, { leaseMs: w.cfg.delivery.leaseMs, streamMaxLen: 1000, nowMs: Date.now() }),
      /still live/,
      'refused while a worker is live',
    )
    t.equal(await recordedPartitions(db), 8, 'unchanged')
    const bad = await pombo(d.s, ['partitions', 'resize', 'x'], { PM_PARTITIONS: '8' })
    oneLineFailure(t, bad, /resize: expected N/)
  },
)
