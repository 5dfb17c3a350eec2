// Nothing is acknowledged before it is durable (docs/design/delivery.md): when the last attempt's outcome cannot be
// recorded, the send's stream entry stays pending (it will be handed out again) and the send stays open.
import t from 'tap'
import { STATUS } from '../../src/delivery/outcomes'
import { startDelivery } from '../helpers/delivery'

t.test("the third failed attempt's outcome is awaited: if it cannot be written, the entry is not acknowledged", async (t) => {
  const d = await startDelivery(t)
  const app = await d.s.createApp()
  await d.fcmFor(app)
  d.fcm.script('broken', 'internal')
  const broken = await d.device(app, 'broken')
  // Postgres refuses that one outcome (standing in for any write failure of it).
  await d.s.sql(`CREATE FUNCTION refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'outcome refused by the test'; END $$`)
  await d.s.sql(`CREATE TRIGGER refuse_outcome BEFORE INSERT OR UPDATE ON deliveries FOR EACH ROW
                 WHEN (NEW.status = ${STATUS.errored} AND NEW.device_id = '${broken}') EXECUTE FUNCTION refuse_outcome()`)
  const sendId = await d.send(app, { include_player_ids: [broken] })
  const until = Date.now() + 20_000
  while (!d.s.logs.some((l) => l.msg === 'recording an outcome failed') && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(d.fcm.requests.filter((r) => r.target === 'broken').length, 3, 'three attempts were made')
  t.ok(d.s.logs.some((l) => l.msg === 'recording an outcome failed' && l.send === sendId), 'the failed record is logged')
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
