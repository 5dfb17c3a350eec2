// A small list send due now travels whole in its hand-off entry (src/handoff/carried.ts): what it carries is exactly
// what loadSends would read back, only sends it can describe carry themselves, and a worker trusts it only on an
// entry it reads fresh: a claimed, moved or unreadable entry is loaded from Postgres (which is what keeps a send that
// was already delivered from being delivered again).
import t, { type Test } from 'tap'
import { loadSends } from '../../src/delivery/audience'
import { CARRY_MAX_BYTES, decodeCarried } from '../../src/handoff/carried'
import { partitionOf, WORK_GROUP } from '../../src/redis/partitions'
import { startDelivery } from '../helpers/delivery'
import { startService } from '../helpers/service'
import { until } from '../helpers/until'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

/** The entries on the app's stream, fields by name, oldest first. */
async function entries(d: Delivery, appId: string, want: number): Promise<Array<{ id: string; f: Record<string, string> }>> {
  const { redis } = d.s.svc.deps
  const stream = d.s.svc.deps.sends.handoff.streamOf(appId)
  for (let i = 0; i < 100; i++) {
    const got = await redis.xrange(stream, '-', '+')
    if (got.length >= want) {
      return got.map(([id, fields]) => {
        const f: Record<string, string> = {}
        for (let k = 0; k + 1 < fields.length; k += 2) f[fields[k] as string] = fields[k + 1] as string
        return { id, f }
      })
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`fewer than ${want} entries on the stream`)
}

t.test('what an entry carries is what loadSends reads back for the same send', async (t) => {
  const d = await startDelivery(t, { service: { roles: ['api'] } })
  const app = await d.s.createApp()
  const ios = await d.device(app, 'carried-ios', { device_type: 0, transporte: 'apns' })
  const android = await d.device(app, 'carried-android')
  const web = await d.device(app, 'carried-web', { device_type: 5 })
  await d.device(app, 'carried-ana-1', { external_user_id: 'ana' })
  await d.device(app, 'carried-ana-2', { external_user_id: 'ana', device_type: 0, transporte: 'apns' })
  const sent = [
    await d.send(app, { include_player_ids: [ios, android, web], headings: { en: 'Oi' }, data: { pedido: 42 }, ttl: 600 }),
    await d.send(app, { include_external_user_ids: ['ana'], priority: 'marketing' }),
    await d.send(app, { include_player_ids: [android, ios], isIos: false }),
  ]
  const got = await entries(d, app.id, sent.length)
  t.same(
    got.map((e) => e.f.s),
    sent,
    'one entry per send, in order',
  )
  const loaded = await loadSends(
    d.s.svc.deps.db,
    sent.map((sendId) => ({ appId: app.id, sendId })),
    new Date(),
    60_000,
    500,
  )
  for (const { f } of got) {
    t.ok(f.c, `send ${f.s} carries itself`)
    const carried = decodeCarried(app.id, f.s as string, f.l === '1' ? 1 : 0, f.c as string, 500)
    t.same(carried, loaded.get(f.s as string), `send ${f.s}: the carried send equals the loaded one`)
  }
  t.equal(loaded.get(sent[2] as string)?.firstPage?.length, 1, 'the platform filter held: the iOS device was left out')
})

t.test(
  'a scheduled send has no entry yet; segment and larger sends, or carrying turned off: the entry names the send only',
  async (t) => {
    for (const carry of ['10', '0']) {
      await t.test(`PM_HANDOFF_CARRY_DEVICES=${carry}`, async (t) => {
        const d = await startDelivery(t, { service: { roles: ['api'] }, env: { PM_HANDOFF_CARRY_DEVICES: carry } })
        const app = await d.s.createApp()
        const ids = await Promise.all(Array.from({ length: 11 }, (_, i) => d.device(app, `carried-many-${i}`)))
        const small = await d.send(app, { include_player_ids: [ids[0]] })
        const due = await d.send(app, { include_player_ids: [ids[0]], send_after: new Date(Date.now() - 1_000).toISOString() })
        const segment = await d.send(app, { included_segments: ['Subscribed Users'] })
        const eleven = await d.send(app, { include_player_ids: ids })
        const ten = await d.send(app, { include_player_ids: ids.slice(0, 10) })
        const heavy = await d.send(app, { include_player_ids: [ids[1]], data: { texto: 'x'.repeat(CARRY_MAX_BYTES) } })
        await d.send(app, { include_player_ids: [ids[0]], send_after: new Date(Date.now() + 3_600_000).toISOString() })
        const got = await entries(d, app.id, 6)
        const carries = new Map(got.map((e) => [e.f.s, 'c' in e.f]))
        t.equal(got.length, 6, 'a send scheduled for later has no entry yet (the sweeper enqueues it when due)')
        t.equal(carries.get(small), carry !== '0', 'a one-device send due now')
        t.equal(carries.get(ten), carry !== '0', 'ten devices: at the limit')
        t.equal(carries.get(due), carry !== '0', 'a send_after already past is a send due now (the spec stores none)')
        t.equal(carries.get(segment), false, 'a segment: expanded by the worker')
        t.equal(carries.get(eleven), false, 'eleven devices: over the limit')
        t.equal(carries.get(heavy), false, `a copy over ${CARRY_MAX_BYTES} bytes: loaded`)
        t.ok(
          got.every((e) => Buffer.byteLength(e.f.c ?? '') <= CARRY_MAX_BYTES),
          'no entry carries more',
        )
      })
    }
  },
)

/** A worker process of the same deployment, started once the entries are where the test put them. */
async function worker(t: Test, d: Delivery) {
  const w = await startService(t, {
    roles: ['worker'],
    shareWith: d.s,
    providerCa: d.ca,
    env: { PM_FCM_BASE_URL: d.fcm.url, PM_APNS_BASE_URL: d.apns.url, PM_PARTITIONS: '4' },
  })
  return w
}

/** The send is marked delivered in Postgres, as a worker that died before acknowledging its entry left it. */
async function deliveredBefore(d: Delivery, sendId: string): Promise<void> {
  await d.s.sql(`UPDATE sends SET successful = 1, android_successful = 1, remaining = 0, completed_at = now() WHERE id = $1`, [
    sendId,
  ])
}

t.test('an entry claimed from a dead consumer is loaded: a send already delivered is not delivered again', async (t) => {
  const d = await startDelivery(t, { service: { roles: ['api'] } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const dev = await d.device(app, 'carried-claimed')
  const sendId = await d.send(app, { include_player_ids: [dev] })
  const [e] = await entries(d, app.id, 1)
  t.ok(e?.f.c, 'the entry carries the send')
  // A consumer read it and died before acknowledging; the send had been delivered and recorded.
  const { redis } = d.s.svc.deps
  const stream = d.s.svc.deps.sends.handoff.streamOf(app.id)
  await redis.xgroup('CREATE', stream, WORK_GROUP, '0', 'MKSTREAM').catch(() => {})
  await redis.xreadgroup('GROUP', WORK_GROUP, 'dead-consumer', 'COUNT', 10, 'STREAMS', stream, '>')
  await deliveredBefore(d, sendId)
  const w = await worker(t, d)
  await until(
    'the claimed entry is acknowledged',
    async () => Number(((await redis.xpending(stream, WORK_GROUP)) as [number])[0]) === 0,
  )
  t.equal(w.svc.delivery?.batches.counts.loaded, 1, 'the claimed send was loaded')
  // A fixed pause on purpose: the assertion is that no delivery happens during it.
  await new Promise((r) => setTimeout(r, 200))
  t.equal(d.fcm.delivered.length, 0, 'and not delivered again')
})

t.test('an entry moved off a wrong partition is loaded at its new home; an unreadable one is loaded', async (t) => {
  const d = await startDelivery(t, { service: { roles: ['api'] } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const a = await d.device(app, 'carried-moved')
  const b = await d.device(app, 'carried-garbled')
  const moved = await d.send(app, { include_player_ids: [a] })
  const garbled = await d.send(app, { include_player_ids: [b] })
  const got = await entries(d, app.id, 2)
  const { redis, keys } = d.s.svc.deps
  const home = partitionOf(app.id, 4)
  const stream = keys.workStream(home)
  await redis.del(stream)
  // The first on another partition's stream, as a process with another partition count would have put it; its send
  // was delivered meanwhile (through another entry). The second on its own stream, its copy unreadable.
  const first = got.find((e) => e.f.s === moved)?.f ?? {}
  await redis.xadd(keys.workStream((home + 1) % 4), '*', ...Object.entries(first).flat())
  await deliveredBefore(d, moved)
  await redis.xadd(stream, '*', 'a', app.id, 's', garbled, 'l', '0', 'c', '[1,"players",')
  const w = await worker(t, d)
  const row = await d.closed(garbled)
  t.equal(row.successful, 1, 'the send with an unreadable copy was loaded and delivered')
  await until('both loaded', () => (w.svc.delivery?.batches.counts.loaded ?? 0) >= 2)
  // A fixed pause on purpose: the assertion is that nothing is sent again during it.
  await new Promise((r) => setTimeout(r, 200))
  t.same(
    d.fcm.delivered.map((x) => x.target),
    ['carried-garbled'],
    'the moved entry found its send delivered: nothing sent again',
  )
})
