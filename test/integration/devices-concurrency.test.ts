// 2,000 registrations at once, with duplicates, through the real route: every answer is right and durable, and the
// group commit really groups (docs/design/devices.md).
import { randomInt } from 'node:crypto'
import t from 'tap'
import { startService } from '../helpers/service'

t.test('2,000 concurrent registrations with duplicates: one device per token, the same id for every copy', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const unique = 1_400
  const bodies: Array<Record<string, unknown>> = []
  for (let i = 0; i < unique; i++) {
    const body: Record<string, unknown> = {
      app_id: app.id,
      device_type: i % 2 ? 1 : 0,
      identifier: `tok-${i}`,
      sessoes: randomInt(100),
    }
    if (i % 20 === 0) body.external_user_id = `user-${i % 200}` // 70 bindings over 10 users: under the cap
    if (i % 25 === 0) body.instalacao_id = `inst-${i}`
    if (i % 50 === 0) body.identifier = `test:${i}`
    bodies.push(body)
  }
  for (let i = 0; i < 600; i++) {
    const copy = { ...(bodies[randomInt(unique)] as Record<string, unknown>), sessoes: randomInt(100) }
    bodies.push(copy)
  }
  // Shuffle so copies of a token land in the same and in different batches.
  for (let i = bodies.length - 1; i > 0; i--) {
    const j = randomInt(i + 1)
    ;[bodies[i], bodies[j]] = [bodies[j] as Record<string, unknown>, bodies[i] as Record<string, unknown>]
  }
  const before = { ...s.svc.deps.devices.writer.stats }
  const answers = await Promise.all(bodies.map((body) => s.call('POST', '/api/v1/players', { body })))
  const statuses = new Map<number, number>()
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
  t.same([...statuses], [[200, 2_000]], 'every answer 200')
  const idOf = new Map<string, string>()
  const maxSessoes = new Map<string, number>()
  let mismatched = 0
  answers.forEach((a, i) => {
    const b = bodies[i] as Record<string, unknown>
    const ident = b.identifier as string
    const prev = idOf.get(ident)
    if (prev && prev !== a.json.id) mismatched++
    idOf.set(ident, a.json.id)
    maxSessoes.set(ident, Math.max(maxSessoes.get(ident) ?? 0, b.sessoes as number))
  })
  t.equal(mismatched, 0, 'every copy of a token got the same player_id')
  t.equal(new Set(idOf.values()).size, unique, 'distinct tokens, distinct ids')
  const rows = await s.sql<{ id: string; identifier: string; sessoes: number; sandbox: boolean }>(
    'SELECT id, identifier, sessoes, sandbox FROM devices WHERE app_id = $1',
    [app.id],
  )
  t.equal(rows.length, unique, 'one row per token')
  let wrong = 0
  let sessoes = 0
  for (const r of rows) {
    if (idOf.get(r.identifier) !== r.id) wrong++
    if (r.sessoes !== maxSessoes.get(r.identifier)) sessoes++
    if (r.sandbox !== r.identifier.startsWith('test:')) wrong++
  }
  t.equal(wrong, 0, 'the table holds the ids that were answered')
  t.equal(sessoes, 0, 'sessoes is the highest value sent for each token')
  const after = s.svc.deps.devices.writer.stats
  const statements = after.statements - before.statements
  t.equal(after.registrations - before.registrations, 2_000)
  t.ok(statements < 1_000, `grouped: ${statements} statements for 2,000 registrations`)
  t.equal(
    (await s.sql('SELECT count(*)::int AS n FROM devices WHERE external_user_id IS NOT NULL'))[0]?.n,
    bodies.filter((b) => b.external_user_id !== undefined).reduce((set, b) => set.add(b.identifier), new Set()).size,
  )
})

t.test('a full queue answers 503 at once instead of growing without bound', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0, registrationQueueMax: 5, registrationWriters: 1 } })
  const app = await s.createApp()
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: `q-${i}` } }),
    ),
  )
  const ok = answers.filter((a) => a.status === 200).length
  const busy = answers.filter((a) => a.status === 503).length
  t.equal(ok + busy, 200)
  t.ok(busy > 0, `${busy} refused with 503`)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM devices'))[0]?.n, ok, 'exactly the answered ones were written')
})

t.test('the per-user cap holds across two instances of one deployment', async (t) => {
  const a = await startService(t, { limits: { ipPerMin: 0 } })
  const b = await startService(t, { limits: { ipPerMin: 0 }, shareWith: a })
  const app = await a.createApp()
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? a : b).call('POST', '/api/v1/players', {
        body: { app_id: app.id, device_type: 1, identifier: `x-${i}`, external_user_id: 'dois' },
      }),
    ),
  )
  t.equal(answers.filter((r) => r.status === 200).length, 10)
  t.equal(answers.filter((r) => r.status === 400).length, 30)
  t.equal((await a.sql("SELECT count(*)::int AS n FROM devices WHERE external_user_id = 'dois'"))[0]?.n, 10)
})

t.test('mixed load: installs, users, plain re-registrations of the same tokens at once; every request answered', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const bodies: Array<Record<string, unknown>> = []
  for (let i = 0; i < 600; i++) {
    const tok = `m-${randomInt(120)}`
    const body: Record<string, unknown> = { app_id: app.id, device_type: 1, identifier: tok }
    const kind = randomInt(4)
    if (kind === 0) body.instalacao_id = `inst-${randomInt(15)}`
    if (kind === 1) body.external_user_id = `user-${randomInt(40)}`
    bodies.push(body)
  }
  const answers = await Promise.all(bodies.map((body) => s.call('POST', '/api/v1/players', { body })))
  const statuses = new Set(answers.map((r) => r.status))
  t.ok(
    [...statuses].every((x) => x === 200 || x === 400),
    `statuses ${[...statuses]}`,
  )
  t.equal(answers.filter((r) => r.status === 400).filter((r) => r.json.explain.limite !== 10).length, 0, 'only cap refusals')
  const idOf = new Map<string, string>()
  let mismatched = 0
  answers.forEach((r, i) => {
    if (r.status !== 200) return
    const tok = bodies[i]?.identifier as string
    if (idOf.has(tok) && idOf.get(tok) !== r.json.id) mismatched++
    idOf.set(tok, r.json.id)
  })
  t.equal(mismatched, 0, 'one id per token')
  const over = await s.sql(
    'SELECT external_user_id, count(*)::int AS n FROM devices WHERE external_user_id IS NOT NULL AND NOT invalid_identifier GROUP BY 1 HAVING count(*) > 10',
  )
  t.same(over, [], 'no user above the cap')
})
