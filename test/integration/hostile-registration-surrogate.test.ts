// A lone surrogate in a public registration must be refused at the door (400 naming the field),
// never reach the registration writer, and never turn a shared batch into one-row-at-a-time retries that tie the
// writer up for every app.
import t from 'tap'
import { type Answer, startService } from '../helpers/service'

const FIELDS: Array<[string, (appId: string) => string]> = [
  ['identifier', (app) => `{"app_id":"${app}","device_type":1,"identifier":"tok-\\ud800"}`],
  ['tags', (app) => `{"app_id":"${app}","device_type":1,"identifier":"tok-bad-tags","tags":{"k":"\\udfff"}}`],
  ['external_user_id', (app) => `{"app_id":"${app}","device_type":1,"identifier":"tok-bad-user","external_user_id":"u\\ud83d"}`],
  ['app_version', (app) => `{"app_id":"${app}","device_type":1,"identifier":"tok-bad-version","app_version":"1.\\ud800"}`],
]

for (const [field, raw] of FIELDS) {
  t.test(
    `lone surrogate in ${field}: 400 naming it, nothing written; B's registrations in the same batch commit in one go`,
    async (t) => {
      const s = await startService(t, { limits: { ipPerMin: 0, registrationWriters: 1 } })
      const a = await s.createApp({ nome: 'A' })
      const b = await s.createApp({ nome: 'B' })
      const good = (i: number) =>
        s.call('POST', '/api/v1/players', { body: { app_id: b.id, device_type: 1, identifier: `b-${i}` } })
      const before = { ...s.svc.deps.devices.writer.stats }
      const first = good(0)
      await new Promise((r) => setImmediate(r))
      const [bad, ...rest] = await Promise.all([
        s.call('POST', '/api/v1/players', { raw: raw(a.id), headers: { 'content-type': 'application/json' } }),
        ...Array.from({ length: 40 }, (_, i) => good(i + 1)),
      ])
      const goods: Answer[] = [await first, ...rest]
      t.equal((bad as Answer).status, 400, `the bad registration is a 400 (got ${(bad as Answer).status})`)
      t.match((bad as Answer).status >= 400 ? (bad as Answer).text : '', field, `the refusal names ${field}`)
      t.same(
        goods.map((g) => g.status),
        goods.map(() => 200),
        "every one of B's registrations answered 200",
      )
      const n = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [b.id])
      t.equal(n[0]?.n, goods.length, "every one of B's devices is stored")
      t.equal(
        (await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [a.id]))[0]?.n,
        0,
        'nothing of A',
      )
      const after = s.svc.deps.devices.writer.stats
      t.ok(
        after.statements - before.statements <= 5,
        `the writer wrote in batches, not row by row (${after.statements - before.statements} statements)`,
      )
      t.notOk(
        s.logs.some((l) => String(l.msg).includes('row by row')),
        'no batch fell back to row-by-row retries',
      )
    },
  )
}
