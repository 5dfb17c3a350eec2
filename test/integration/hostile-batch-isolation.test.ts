// One tenant's bad send must never fail another tenant's sends in the same group-commit batch.
// One send writer (PM_SEND_WRITERS=1) so that jobs queue behind the one in flight and are written together: the
// bad send of app A and the good sends of app B are then in one batch, as they are under load in production.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { type Answer, basic, startService } from '../helpers/service'

async function setup(t: Tap) {
  const s = await startService(t, { limits: { ipPerMin: 0, sendWriters: 1 } })
  const a = await s.createApp({ nome: 'A (hostile)' })
  const b = await s.createApp({ nome: 'B (bystander)' })
  const reg = async (app: { id: string }, identifier: string) =>
    (await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })).json.id as string
  return { s, a, b, playerA: await reg(a, 'tok-a'), playerB: await reg(b, 'tok-b') }
}
type Tap = Parameters<typeof startService>[0]

/** 4,000 characters Postgres cannot compress under its ~2.7 KB btree row limit (repeated text would fit). */
const big = (): string => randomBytes(3000).toString('base64')

/** B's sends around A's bad one: the first goes alone (in flight), the rest queue with A's and share its batch. */
async function mixed(bad: () => Promise<Answer>, good: () => Promise<Answer>): Promise<{ bad: Answer; good: Answer[] }> {
  const first = good()
  await new Promise((r) => setImmediate(r))
  const [badAnswer, ...rest] = await Promise.all([bad(), ...Array.from({ length: 8 }, () => good())])
  return { bad: badAnswer as Answer, good: [await first, ...rest] }
}

const CASES: Array<
  [string, (appId: string, player: string) => { body?: unknown; raw?: string; headers?: Record<string, string> }, string]
> = [
  [
    'lone surrogate in contents',
    (app, p) => ({ raw: `{"app_id":"${app}","contents":{"en":"oi \\ud800"},"include_player_ids":["${p}"]}` }),
    'contents',
  ],
  [
    'lone surrogate in headings',
    (app, p) => ({ raw: `{"app_id":"${app}","contents":{"en":"oi"},"headings":{"en":"\\udfff"},"include_player_ids":["${p}"]}` }),
    'headings',
  ],
  [
    'lone surrogate in data',
    (app, p) => ({ raw: `{"app_id":"${app}","contents":{"en":"oi"},"data":{"k":"\\ud83d"},"include_player_ids":["${p}"]}` }),
    'data',
  ],
  [
    'external_id of 4 KB',
    (app, p) => ({ body: { app_id: app, contents: { en: 'oi' }, include_player_ids: [p], external_id: big() } }),
    'external_id',
  ],
  [
    'idempotency_key of 4 KB',
    (app, p) => ({ body: { app_id: app, contents: { en: 'oi' }, include_player_ids: [p], idempotency_key: big() } }),
    'idempotency_key',
  ],
  [
    'Idempotency-Key header of 4 KB',
    (app, p) => ({
      body: { app_id: app, contents: { en: 'oi' }, include_player_ids: [p] },
      headers: { 'idempotency-key': big() },
    }),
    'Idempotency-Key',
  ],
]

for (const [name, make, field] of CASES) {
  t.test(`A's send with ${name}: refused with 400/422 naming ${field}; B's sends in the same batch all commit`, async (t) => {
    const { s, a, b, playerA, playerB } = await setup(t)
    const { bad, good } = await mixed(
      () => {
        const m = make(a.id, playerA)
        return s.call('POST', '/api/v1/notifications', {
          ...m,
          headers: { ...basic(a.api_key), 'content-type': 'application/json', ...m.headers },
        })
      },
      () =>
        s.call('POST', '/api/v1/notifications', {
          body: { app_id: b.id, contents: { en: 'b' }, include_player_ids: [playerB] },
          headers: basic(b.api_key),
        }),
    )
    t.ok(bad.status === 400 || bad.status === 422, `A's bad send: 400 or 422 (got ${bad.status})`)
    t.match(bad.status >= 400 ? bad.text : '', field, `the refusal names ${field}`)
    t.same(
      good.map((g) => g.status),
      good.map(() => 200),
      "every one of B's sends answered 200",
    )
    const ids = good.map((g) => g.json?.id).filter((id) => typeof id === 'string' && id !== '')
    const rows = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM sends WHERE app_id = $1 AND id = ANY($2::uuid[])', [
      b.id,
      ids,
    ])
    t.equal(rows[0]?.n, good.length, "every one of B's sends is stored")
    t.equal(
      (await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM sends WHERE app_id = $1', [a.id]))[0]?.n,
      0,
      'nothing of A was written',
    )
  })
}
