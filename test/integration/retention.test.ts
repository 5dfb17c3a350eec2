// Every lifetime of docs/operations.md#retention through the real job (src/service/retention.ts) on a real service:
// rows older than their setting go, newer ones stay, another app's recent rows are untouched; the big tables lose
// whole partitions (receipts and the archive past the 90-day window, in-app events past their weeks); dead devices
// go after PM_DEAD_DEVICES_RETENTION_DAYS and the export leaves them out unless `incluir_invalidos=true`.
import { randomUUID } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { ensureRangePartitions, rangePartitions } from '../../src/db/partitions'
import { ARCHIVE_TABLE, RECEIPTS_TABLE } from '../../src/receipts/archive'
import { INAPP_EVENTS_TABLE, Retention } from '../../src/service/retention'
import { sample } from '../helpers/metrics'
import { basic, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

const DAY = 86_400_000

async function count(s: TestService, table: string, appId: string): Promise<number> {
  const [r] = await s.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE app_id = $1`, [appId])
  return r?.n ?? 0
}

t.test('each lifetime: older rows go, newer stay, the other app keeps its own', async (t) => {
  const s = await startService(t)
  const a = await s.createApp()
  const b = await s.createApp()
  const retention = s.svc.retention
  const ago = (days: number): Date => new Date(Date.now() - days * DAY)
  for (const app of [a, b]) {
    const dest = randomUUID()
    await s.sql(
      `INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, next_at, created_at, active)
       VALUES ($1, $2, 'https://example.com/h', '\\x00', 0, now(), now(), false)`,
      [dest, app.id],
    )
    // Old rows only for app a; recent rows for both.
    const ages = app === a ? [200, 1] : [1]
    for (const days of ages) {
      const at = ago(days)
      await s.sql('INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at) VALUES ($1, $2, $3, $4)', [
        app.id,
        randomUUID(),
        randomUUID(),
        at,
      ])
      await s.sql('INSERT INTO inapp_reactivations (app_id, campanha_id, device_id, reactivated_at) VALUES ($1, $2, $3, $4)', [
        app.id,
        randomUUID(),
        randomUUID(),
        at,
      ])
      await s.sql(
        `INSERT INTO webhook_abandoned (destination_id, event_seq, app_id, evento, body, attempts, abandoned_at)
         VALUES ($1, $2, $3, 'delivery.received', '{}', 5, $4)`,
        [dest, days, app.id, at],
      )
      // A dead device, dead since `at`; and a live one as old, which stays whatever its age.
      await s.sql(
        `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, invalid_identifier, invalid_reason,
                              last_active, created_at, updated_at)
         VALUES ($1, gen_random_uuid(), $2, 1, false, 'fcm', true, 'NotRegistered', $3, $3, $3),
                ($1, gen_random_uuid(), $4, 1, false, 'fcm', false, NULL, $3, $3, $3)`,
        [app.id, `dead-${days}-${randomUUID()}`, at, `live-${days}-${randomUUID()}`],
      )
      // An idempotency record, expired when it is the old one (30 days after it was made).
      await s.sql(
        `INSERT INTO idempotency (app_id, key, body_hash, status, lane, exact, response, created_at, expires_at)
         VALUES ($1, $2, 'h', 200, 0, true, '{}', $3, $3::timestamptz + interval '30 days')`,
        [app.id, `k-${days}`, at],
      )
      // A completed send (with a delivery row left) and its message.
      const send = randomUUID()
      await s.sql(
        `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                            ttl_s, queued_at, completed_at, expansion_done)
         VALUES ($1, $2, 0, 'players', '{}', '{}', '{"en":"x"}', 1, true, 0, 60, $3, $3, true)`,
        [app.id, send, at],
      )
      await s.sql('INSERT INTO deliveries (send_id, device_id, app_id, device_type, status) VALUES ($1, $2, $3, 1, 1)', [
        send,
        randomUUID(),
        app.id,
      ])
    }
  }
  const tables = ['inapp_served', 'inapp_reactivations', 'webhook_abandoned', 'idempotency', 'sends', 'deliveries']
  for (const table of tables) t.equal(await count(s, table, a.id), 2, `${table}: app a has an old and a recent row`)
  t.equal(await count(s, 'devices', a.id), 4)

  // Sessions go once expired; invitations PM_INVITES_RETENTION_DAYS (30) after they expired.
  const people: Record<string, string> = {}
  for (const app of [a, b]) {
    const [org] = await s.sql<{ org_id: string }>('SELECT org_id FROM apps WHERE id = $1', [app.id])
    const user = randomUUID()
    people[app.id] = user
    await s.sql(
      `INSERT INTO dashboard_users (id, email, org_id, operator, password_hash, created_at)
       VALUES ($1, $2, $3, false, 'scrypt$x', now())`,
      [user, `p-${user}@example.com`, org?.org_id],
    )
    for (const [h, expiry] of [
      ['old', ago(1)],
      ['new', new Date(Date.now() + 3_600_000)],
    ] as const) {
      if (app === b && h === 'old') continue
      await s.sql(
        `INSERT INTO dashboard_sessions (id_hash, user_id, csrf, created_at, expires_at, last_seen_at)
         VALUES (decode(md5($1), 'hex'), $2, 'c', now(), $3, now())`,
        [`${h}-${user}`, user, expiry],
      )
    }
    for (const expiry of app === a ? [ago(40), ago(5)] : [ago(5)]) {
      await s.sql(
        `INSERT INTO dashboard_invites (token_hash, email, org_id, created_at, expires_at)
         VALUES (decode(md5($1), 'hex'), $2, $3, $4, $4)`,
        [randomUUID(), `i-${randomUUID()}@example.com`, org?.org_id, expiry],
      )
    }
  }
  const countOf = async (sql: string, id: string) => (await s.sql<{ n: number }>(sql, [id]))[0]?.n ?? 0
  const sessions = (app: { id: string }) =>
    countOf('SELECT count(*)::int AS n FROM dashboard_sessions WHERE user_id = $1', people[app.id] as string)
  const invites = (app: { id: string }) =>
    countOf('SELECT count(*)::int AS n FROM dashboard_invites i JOIN apps x ON x.org_id = i.org_id WHERE x.id = $1', app.id)
  t.equal(await sessions(a), 2)
  t.equal(await invites(a), 2)

  const r = await retention.runOnce()
  t.equal(await sessions(a), 1, 'the expired session went, the open one stayed')
  t.equal(await sessions(b), 1, "the other organisation's session is untouched")
  t.equal(await invites(a), 1, 'the invitation expired 40 days ago went, the one expired 5 days ago stayed')
  t.equal(await invites(b), 1, "the other organisation's invitation is untouched")
  for (const table of tables) {
    t.equal(await count(s, table, a.id), 1, `${table}: the old row went, the recent one stayed`)
    t.equal(await count(s, table, b.id), 1, `${table}: the other app's recent row is untouched`)
    t.equal(r.rows[table], 1, `${table}: the pass counts one row`)
  }
  t.equal(r.rows.devices, 1, 'one dead device past 30 days')
  const left = await s.sql<{ identifier: string }>('SELECT identifier FROM devices WHERE app_id = $1 ORDER BY 1', [a.id])
  t.match(
    left.map((x) => x.identifier.replace(/-[0-9a-f-]{36}$/, '')),
    ['dead-1', 'live-1', 'live-200'],
    'the dead device of 200 days went; the recent dead one and every live one stay',
  )
  const again = await retention.runOnce()
  t.equal(
    Object.values(again.rows).reduce((x, y) => x + y, 0),
    0,
    'a second pass finds nothing',
  )

  // The pass is counted on the operations port.
  const text = await (await fetch(`${s.opsUrl}/metrics`)).text()
  t.equal(sample(text, 'pombo_retention_rows_deleted_total', { table: 'sends' }), 1)
  t.equal(sample(text, 'pombo_retention_rows_deleted_total', { table: 'devices' }), 1)
  t.ok((sample(text, 'pombo_retention_pass_seconds') ?? -1) >= 0, 'the last pass time is shown')
})

t.test('settings move the lifetimes', async (t) => {
  const s = await startService(t, { env: { PM_INAPP_SERVED_RETENTION_DAYS: '3', PM_DEAD_DEVICES_RETENTION_DAYS: '5' } })
  const a = await s.createApp()
  await s.sql(
    `INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at)
     VALUES ($1, gen_random_uuid(), gen_random_uuid(), now() - interval '4 days'),
            ($1, gen_random_uuid(), gen_random_uuid(), now() - interval '2 days')`,
    [a.id],
  )
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, invalid_identifier, last_active, created_at, updated_at)
     VALUES ($1, gen_random_uuid(), 'd6', 1, false, 'fcm', true, now(), now(), now() - interval '6 days'),
            ($1, gen_random_uuid(), 'd4', 1, false, 'fcm', true, now(), now(), now() - interval '4 days')`,
    [a.id],
  )
  const r = await s.svc.retention.runOnce()
  t.equal(r?.rows.inapp_served, 1, 'served: 3 days')
  t.same(
    (await s.sql('SELECT identifier FROM devices WHERE app_id = $1', [a.id])).map((x) => x.identifier),
    ['d4'],
    'dead devices: 5 days',
  )
})

t.test('PM_RETENTION_PAUSE: after each full batch the job waits that many times the batch, and not at all at 0', async (t) => {
  const s = await startService(t)
  const a = await s.createApp()
  const fill = (): Promise<unknown> =>
    s.sql(
      `INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at)
       SELECT $1, gen_random_uuid(), gen_random_uuid(), now() - interval '200 days' FROM generate_series(1, 5)`,
      [a.id],
    )
  const pass = async (pause: number): Promise<{ deleted: number | undefined; slept: number[] }> => {
    const slept: number[] = []
    const jobs = { ...s.cfg.jobs, retentionBatch: 2, retentionPause: pause }
    const job = new Retention({
      db: s.svc.deps.db,
      cfg: { ...s.cfg, jobs },
      clock: Date.now,
      log: s.svc.deps.log,
      sleep: async (ms) => slept.push(ms),
    })
    const r = await job.runOnce()
    return { deleted: r.rows.inapp_served, slept }
  }
  await fill()
  const paced = await pass(3)
  t.equal(paced.deleted, 5, 'five old rows, in batches of 2, 2 and 1')
  t.equal(paced.slept.length, 2, 'a pause after each of the two full batches, none after the last')
  t.ok(
    paced.slept.every((ms) => ms > 0),
    `each pause is 3 times its batch's time (${paced.slept.map((ms) => ms.toFixed(2)).join(', ')} ms)`,
  )
  await fill()
  const unpaced = await pass(0)
  t.equal(unpaced.deleted, 5)
  t.same(unpaced.slept, [], 'no pause at 0')
})

t.test('receipts, the archive and in-app events lose whole partitions past their lifetime', async (t) => {
  const s = await startService(t)
  const a = await s.createApp()
  const db = s.svc.deps.db
  const log = s.svc.deps.log
  const now = Date.now()
  const old = now - 120 * DAY // past the 90-day window
  const recent = now - 40 * DAY // archived, inside the window
  await ensureRangePartitions(db, RECEIPTS_TABLE, old, old + 1, log)
  await ensureRangePartitions(db, ARCHIVE_TABLE, old, old + 1, log)
  await ensureRangePartitions(db, ARCHIVE_TABLE, recent, recent + 1, log)
  const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
  for (const [table, ms] of [
    ['receipts', old],
    ['receipt_archive', old],
    ['receipt_archive', recent],
  ] as const) {
    const cols = table === 'receipts' ? ', at' : ''
    const vals = table === 'receipts' ? ', now()' : ''
    await s.sql(
      `INSERT INTO ${table} (app_id, day, send_id, device_id, kind${cols}) VALUES ($1, $2, gen_random_uuid(), gen_random_uuid(), 0${vals})`,
      [a.id, day(ms)],
    )
  }
  // A stray row of an old day in the default partition (its day had no partition): deleted by rows.
  await s.sql(
    `INSERT INTO receipt_archive (app_id, day, send_id, device_id, kind) VALUES ($1, $2, gen_random_uuid(), gen_random_uuid(), 0)`,
    [a.id, day(old - 5 * DAY)],
  )
  // In-app events: a week 100 days ago and this week.
  await ensureRangePartitions(db, INAPP_EVENTS_TABLE, now - 100 * DAY, now - 100 * DAY + 1, log)
  for (const ms of [now - 100 * DAY, now]) {
    await s.sql(
      `INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
       VALUES ($1, gen_random_uuid(), gen_random_uuid(), 1, 1, $2, now())`,
      [a.id, new Date(ms)],
    )
  }
  const names = async (parent: string) => (await rangePartitions(db, parent)).map((p) => p.name)
  const oldName = (prefix: string, ms: number) => `${prefix}${day(ms).replaceAll('-', '')}`
  t.ok((await names('receipts')).includes(oldName('receipts_p', old)))
  const r = await s.svc.retention.runOnce()
  t.notOk((await names('receipts')).includes(oldName('receipts_p', old)), "the receipts' old day is dropped")
  t.notOk((await names('receipt_archive')).includes(oldName('receipt_archive_p', old)), "the archive's old day is dropped")
  t.ok((await names('receipt_archive')).includes(oldName('receipt_archive_p', recent)), 'a day inside the window stays')
  t.equal(r?.partitions.receipts, 1)
  t.equal(r?.partitions.receipt_archive, 1)
  t.equal(r?.rows.receipt_archive_default, 1, "the default partition's stray old row is deleted")
  t.same(
    (await s.sql<{ day: string }>('SELECT day::text FROM receipt_archive WHERE app_id = $1', [a.id])).map((x) => x.day),
    [day(recent)],
    'the archive keeps only the day inside the window',
  )
  t.equal(r?.partitions.inapp_events, 1, 'the in-app week past 90 days is dropped')
  t.equal(await count(s, 'inapp_events', a.id), 1, "this week's event stays")
  const weeks = await rangePartitions(db, 'inapp_events')
  t.ok(
    weeks.some((p) => (p.fromMs ?? 0) <= now + 14 * DAY && (p.toMs ?? 0) > now + 14 * DAY),
    'the coming weeks have partitions ahead',
  )
})

t.test('the export leaves dead devices out unless asked, through the real route', async (t) => {
  const s = await startService(t, { limits: { exportsPerSec: 100 } })
  const a = await s.createApp()
  const live = await s.call('POST', '/api/v1/players', {
    body: { app_id: a.id, device_type: 1, identifier: 'token-vivo-0123456789' },
  })
  const dead = await s.call('POST', '/api/v1/players', {
    body: { app_id: a.id, device_type: 1, identifier: 'token-morto-0123456789' },
  })
  t.equal(live.status, 200)
  await s.sql(`UPDATE devices SET invalid_identifier = true, invalid_reason = 'NotRegistered' WHERE id = $1`, [dead.json.id])
  const ids = async (query: string): Promise<string[]> => {
    const r = await s.call('POST', `/api/v1/players/csv_export?app_id=${a.id}${query}`, { headers: basic(a.api_key) })
    t.equal(r.status, 200, `export ${query || '(default)'}`)
    const path = new URL(r.json.csv_file_url).pathname
    let file: Response | null = null
    await until('export ready', async () => {
      file = await fetch(s.url + path)
      return file.status === 200
    })
    const text = gunzipSync(Buffer.from(await (file as unknown as Response).arrayBuffer())).toString()
    return text
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[0] as string)
      .sort()
  }
  t.same(await ids(''), [live.json.id], 'by default the dead device is left out')
  t.same(await ids('&incluir_invalidos=false'), [live.json.id], 'false: the same')
  t.same(await ids('&incluir_invalidos=true'), [live.json.id, dead.json.id].sort(), 'asked for: both')
  const bad = await s.call('POST', `/api/v1/players/csv_export?app_id=${a.id}&incluir_invalidos=sim`, {
    headers: basic(a.api_key),
  })
  t.equal(bad.status, 400, 'any other value is refused')
  t.match(bad.text, /incluir_invalidos/)
})
