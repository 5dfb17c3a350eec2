// Nothing is acknowledged before it is durable (docs/design/delivery.md): when the last attempt's outcome cannot be
// recorded, the send's stream entry stays pending (it will be handed out again) and the send stays open.
import t from 'tap'
import { STATUS } from '../../src/delivery/outcomes'
import { startDelivery } from '../helpers/delivery'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

/** Postgres refuses the device's outcome of that status (a trigger raises), standing in for any write failure. */
async function refuseOutcome(d: Delivery, status: number, deviceId: string): Promise<void> {
  await d.s.sql(`CREATE OR REPLACE FUNCTION refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'outcome refused by the test'; END $$`)
  await d.s.sql(`CREATE TRIGGER refuse_outcome_${status} BEFORE INSERT OR UPDATE ON deliveries FOR EACH ROW
                 WHEN (NEW.status = ${status} AND NEW.device_id = '${deviceId}') EXECUTE FUNCTION refuse_outcome()`)
}

/** Waits (up to ms) for the worker to log that the send's outcome could not be recorded. */
async function recordFailed(d: Delivery, sendId: string, ms: number): Promise<void> {
  const until = Date.now() + ms
  while (!d.s.logs.some((l) => l.msg === 'recording an outcome failed' && l.send === sendId) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test("the third failed attempt's outcome is awaited: if it cannot be written, the entry is not acknowledged", async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('broken', 'internal')
  const broken = await d.device(app, 'broken')
  // Postgres refuses that one outcome (standing in for any write failure of it).
  await refuseOutcome(d, STATUS.errored, broken)
  const sendId = await d.send(app, { include_player_ids: [broken] })
  await recordFailed(d, sendId, 20_000)
  t.equal(d.fcm.requests.filter((r) => r.target === 'broken').length, 3, 'three attempts were made')
  t.ok(
    d.s.logs.some((l) => l.msg === 'recording an outcome failed' && l.send === sendId),
    'the failed record is logged',
  )
  await new Promise((r) => setTimeout(r, 500)) // time for an (unwanted) acknowledgement to land
  const { redis, keys } = d.s.svc.deps
  let pending = 0
  for (let p = 0; p < 4; p++) {
    const summary = (await redis.xpending(keys.workStream(p), 'workers').catch(() => [0])) as [number]
    pending += Number(summary[0])
  }
  t.equal(pending, 1, 'the stream entry is still pending: it will be handed out again')
  const [row] = await d.s.sql('SELECT remaining, completed_at FROM sends WHERE id = $1', [sendId])
  t.equal(row?.remaining, 1, 'the send is not counted as done')
  t.equal(row?.completed_at, null)
})

t.test('a push the provider accepted is never sent again because its outcome could not be written', async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const dev = await d.device(app, 'accepted-unwritable')
  await refuseOutcome(d, STATUS.successful, dev)
  const sendId = await d.send(app, { include_player_ids: [dev] })
  await recordFailed(d, sendId, 10_000)
  t.ok(
    d.s.logs.some((l) => l.msg === 'recording an outcome failed' && l.send === sendId),
    'the failed record is logged',
  )
  await new Promise((r) => setTimeout(r, 1_500)) // longer than the first retry's backoff: an unwanted resend would land
  t.equal(
    d.fcm.requests.filter((r) => r.target === 'accepted-unwritable').length,
    1,
    'one request: the accepted push is not sent again',
  )
  const [row] = await d.s.sql('SELECT remaining, completed_at FROM sends WHERE id = $1', [sendId])
  t.equal(row?.remaining, 1, 'the send stays open: it will be handed out again')
})

t.test("an outcome batch chosen as a deadlock's victim is written again, and the push is sent once", async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const dev = await d.device(app, 'deadlocked-once')
  // The first write of the device's outcome fails as Postgres fails a deadlock's victim (a sequence is not rolled
  // back with the statement, so only the first attempt fails).
  await d.s.sql('CREATE SEQUENCE deadlock_once')
  await d.s.sql(`CREATE FUNCTION deadlock_once() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN IF nextval('deadlock_once') = 1 THEN RAISE EXCEPTION 'deadlock detected (the test)' USING ERRCODE = 'deadlock_detected'; END IF;
                 RETURN NEW; END $$`)
  await d.s.sql(`CREATE TRIGGER deadlock_once BEFORE INSERT OR UPDATE ON deliveries FOR EACH ROW
                 WHEN (NEW.device_id = '${dev}') EXECUTE FUNCTION deadlock_once()`)
  const sendId = await d.send(app, { include_player_ids: [dev] })
  const row = await d.closed(sendId)
  t.equal(row.successful, 1, 'the outcome was written on the second try')
  t.ok(
    d.s.logs.some((l) => l.msg === 'outcome batch retried' && l.code === '40P01'),
    'the retry is logged with its code',
  )
  t.equal(d.fcm.requests.filter((r) => r.target === 'deadlocked-once').length, 1, 'one request')
  t.notOk(
    d.s.logs.some((l) => l.msg === 'delivery attempt failed locally'),
    'no delivery was retried',
  )
})
