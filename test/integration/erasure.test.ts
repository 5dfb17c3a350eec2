// `pombo app delete` and `pombo org delete` (issue 32, point 2): an app filled through the real routes and workers
// (devices, a delivered send, receipts, an idempotency key, an in-app campaign served and its events, webhook events
// and attempts, an export) beside an identical second app; the first erased by the real command, then every row of
// every table and every Redis key of the test's namespace searched for any of its ids, and none found, while the
// second is untouched and still delivers (a send after the erasure reaches its devices through the fake provider),
// and a second instance of the service that had the erased app's key cached refuses it at once. Then an organisation
// with its apps and people; then a run killed mid-way and run again.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { APP_TABLES, ORG_TABLES } from '../../src/erasure/tables'
import { cliEnv, pombo } from '../helpers/cli'
import { pomboArgv } from '../helpers/entry'
import { type App, startDelivery } from '../helpers/delivery'
import { KEPT_AFTER_ERASURE, keyCount, keysNaming, rowsNaming } from '../helpers/erasure'
import { InappWorld, nowIso } from '../helpers/inapp'
import { basic, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

type Delivery = Awaited<ReturnType<typeof startDelivery>>

interface Filled {
  app: App
  /** Every id of the app's data: app, devices, sends, campaigns, webhook destination, export, key. The organisation
   *  is not the app's: it stays (docs/decisions.md), and `org delete` removes it. */
  ids: string[]
  /** What names its end users: device ids and tokens, send ids, the idempotency key. Not even the audit log (kept
   *  after an erasure) may hold these. */
  endUsers: string[]
  devices: string[]
}

/** Fills an app through the routes and the worker, and answers every id it made. */
async function fill(d: Delivery, rx: WebhookReceiver, tag: string): Promise<Filled> {
  const { s } = d
  const app = await d.s.createApp({ nome: `Apagável ${tag}` })
  await d.fcmFor(app)
  const put = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: rx.url(`/${tag}`), modo: 'webhook' },
    headers: basic(app.api_key),
  })
  if (put.status !== 200) throw new Error(`confirmacoes: ${put.status} ${put.text}`)
  rx.secret(`/${tag}`, put.json.segredo)
  rx.script(`/${tag}`, [{ status: 502 }]) // one failed attempt, then delivered: two attempt rows
  const w = new InappWorld(s, app)
  if ((await w.config({ inapp_ativo: true })).status !== 200) throw new Error('inapp config')
  const devices = [await w.device({ identifier: `tok-${tag}-a` }), await w.device({ identifier: `tok-${tag}-b` })]
  const r = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Hello', pt: 'Olá' }, include_player_ids: devices },
    headers: { ...basic(app.api_key), 'idempotency-key': `idem-${tag}` },
  })
  if (r.status !== 200) throw new Error(`send: ${r.status} ${r.text}`)
  const sendId: string = r.json.id
  await d.closed(sendId)
  const m = d.fcm.delivered.find((x) => x.target === `tok-${tag}-a` && x.body.message.data.pm_msg_id === sendId)
  const receipt = await s.call('POST', '/api/v1/receipts', {
    body: {
      app_id: app.id,
      notification_id: sendId,
      player_id: devices[0],
      rcpt: m?.body.message.data.pm_rcpt,
      evento: 'clique',
    },
  })
  if (receipt.status !== 200) throw new Error(`receipt: ${receipt.status} ${receipt.text}`)
  // Folded into the archive (every app's receipts until now), then one more send and receipt in a day partition.
  await s.svc.deps.receipts.archiveNow(-1)
  const second = await d.send(app, { include_player_ids: devices })
  await d.closed(second)
  const m2 = d.fcm.delivered.find((x) => x.target === `tok-${tag}-b` && x.body.message.data.pm_msg_id === second)
  const receipt2 = await s.call('POST', '/api/v1/receipts', {
    body: { app_id: app.id, notification_id: second, player_id: devices[1], rcpt: m2?.body.message.data.pm_rcpt },
  })
  if (receipt2.status !== 200) throw new Error(`receipt: ${receipt2.status} ${receipt2.text}`)
  const campaign = await w.campaign()
  const pending = await w.pending(devices[0] as string)
  const prova = pending.json.messages.find((x: { campanha_id: string }) => x.campanha_id === campaign)?.prova
  const ev = await w.events(devices[0] as string, [
    { campanha_id: campaign, prova, evento: 'impressao', ocorrencia_n: 1, em: nowIso() },
  ])
  if (ev.status !== 200 || ev.json.resultados[0] !== 'aceito') throw new Error(`inapp events: ${ev.text}`)
  const exp = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (exp.status !== 200) throw new Error(`export: ${exp.status} ${exp.text}`)
  await until(
    'the export is ready',
    async () => (await s.sql(`SELECT 1 FROM exports WHERE app_id = $1 AND status = 'ready'`, [app.id])).length,
  )
  // notification.completed and delivery.clicked/received reach the webhook after one failed attempt
  await rx.waitFor(2, `/${tag}`)
  await until('webhook attempts', async () => {
    const [x] = await s.sql(
      `SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_destinations w ON w.id = a.destination_id
        WHERE w.app_id = $1`,
      [app.id],
    )
    return (x?.n ?? 0) >= 2
  })
  const endUsers = [...devices, sendId, second, `tok-${tag}-`, `idem-${tag}`]
  const ids = new Set<string>([app.id, campaign, ...endUsers])
  const collect = async (sql: string) => {
    for (const row of await s.sql<{ id: string }>(sql, [app.id])) ids.add(row.id)
  }
  await collect('SELECT id::text AS id FROM webhook_destinations WHERE app_id = $1')
  await collect('SELECT token_hash AS id FROM exports WHERE app_id = $1')
  await collect('SELECT kid AS id FROM app_keys WHERE app_id = $1')
  await collect(
    'SELECT DISTINCT attempt_id::text AS id FROM webhook_attempts WHERE attempt_id IS NOT NULL AND destination_id IN (SELECT id FROM webhook_destinations WHERE app_id = $1)',
  )
  return { app, ids: [...ids], endUsers, devices }
}

async function startWorld(t: Parameters<typeof startDelivery>[0]) {
  const rx = await WebhookReceiver.start(t)
  const d = await startDelivery(t, {
    env: { PM_LIMIT_IP_PER_MIN: '0', PM_WEBHOOK_ALLOW_PRIVATE: '1', PM_DEFAULT_PLAN: 'pro' },
    service: { webhookCa: testCa(), webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 2_000 }, limits: { ipPerMin: 0 } },
  })
  return { rx, d, env: { PM_EXPORT_DIR: d.s.cfg.exportDir } }
}

t.test('app delete: nothing of the app is left anywhere; the twin app is untouched and still delivers', async (t) => {
  const { rx, d, env } = await startWorld(t)
  const { s } = d
  const a = await fill(d, rx, 'era-a')
  const b = await fill(d, rx, 'era-b')
  // A second instance of the service, which has both apps' keys in its cache when the erasure begins.
  const other = await startService(t, { roles: ['api'], shareWith: s, env: { PM_PARTITIONS: '4' } })
  const confirmations = (inst: TestService, app: App) =>
    inst.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal((await confirmations(other, a.app)).status, 200, 'the key works on the other instance, which caches it')
  t.equal((await confirmations(other, b.app)).status, 200)
  // A stream entry that names the app, as a send accepted just before the erasure would leave.
  await s.svc.deps.redis.xadd(s.svc.deps.keys.workStream(0), '*', 'a', a.app.id, 's', a.ids[1] as string, 'l', '0')
  // Every kind of data the issue names is there before the erasure (so finding none afterwards means something).
  const filled = await rowsNaming(s, a.ids)
  for (const table of [
    'apps',
    'app_keys',
    'credentials',
    'devices',
    'sends',
    'deliveries',
    'receipt_archive',
    'idempotency',
    'inapp_campaigns',
    'inapp_events',
    'inapp_served',
    'webhook_destinations',
    'events',
    'webhook_attempts',
    'exports',
  ])
    t.ok((filled[table] ?? 0) > 0, `the first app has rows in ${table}`)
  // Its receipts: the second app's fill folded them into the archive, as the nightly job does.
  t.ok((filled.receipts ?? 0) + (filled.receipt_archive ?? 0) >= 2, 'its receipts, live or archived')
  const before = await rowsNaming(s, b.ids)
  const exportFiles = () => readdirSync(s.cfg.exportDir).filter((f) => f.endsWith('.csv.gz'))
  t.equal(exportFiles().length, 2, 'two export files')

  const refused = await pombo(s, ['app', 'delete', a.app.id], env)
  t.equal(refused.code, 2, 'without --yes: refused')
  t.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr)
  t.match(refused.stderr, /would remove .*devices.*--yes/)
  t.equal((await s.sql('SELECT 1 FROM devices WHERE app_id = $1', [a.app.id])).length, 2, 'the refusal changed nothing')

  const r = await pombo(s, ['app', 'delete', a.app.id, '--yes'], env)
  t.equal(r.code, 0, r.stderr)
  const summary = JSON.parse(r.stdout)
  t.equal(summary.app_id, a.app.id)
  t.equal(summary.rows.devices, 2)
  t.equal(summary.rows.apps, 1)
  t.ok(summary.rows.deliveries >= 4 && summary.rows.webhook_attempts >= 2, r.stdout)
  t.ok(
    summary.rows.receipts + summary.rows.receipt_archive >= 3 && summary.rows.inapp_served >= 1 && summary.rows.idempotency >= 1,
    r.stdout,
  )
  t.ok(summary.redis_keys >= 1, 'Redis keys removed')
  t.ok(summary.stream_entries >= 1, 'stream entries removed')
  t.equal(summary.files, 1, 'its export file removed')

  t.same(await rowsNaming(s, a.ids, KEPT_AFTER_ERASURE), {}, 'no row of any table names any id of the erased app')
  t.same(await rowsNaming(s, a.endUsers), {}, 'not even the audit log names its devices, sends, tokens or idempotency key')
  t.ok((await keyCount(s)) > 10, 'the deployment has Redis keys (the search below looks at something)')
  t.same(await keysNaming(s, a.ids), [], 'no Redis key names it or holds it')
  t.equal(exportFiles().length, 1, "the other app's export file stays")
  t.same(await rowsNaming(s, b.ids), before, 'the second app: every row as it was')

  // Its key stops at once on the running service (another process than the command): its cache was told.
  const dead = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: a.app.id, contents: { en: 'x' }, include_player_ids: a.devices },
    headers: basic(a.app.api_key),
  })
  t.equal(dead.status, 401, 'the erased app key is refused')
  t.equal((await confirmations(other, a.app)).status, 401, 'and refused by the other instance, which had it cached')
  t.equal((await confirmations(other, b.app)).status, 200, "the second app's key still works there")
  const again = await d.send(b.app, { include_player_ids: b.devices })
  const closed = await d.closed(again)
  t.equal(closed.successful, 2, 'the second app still delivers')
  const reached = d.fcm.delivered.filter((x) => x.body.message.data.pm_msg_id === again).map((x) => x.target)
  t.same(reached.sort(), ['tok-era-b-a', 'tok-era-b-b'], 'through the provider, to both its devices')

  const unknown = await pombo(s, ['app', 'delete', a.app.id, '--yes'], env)
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /not found/)
  t.equal(unknown.stderr.trim().split('\n').length, 1)
  const bad = await pombo(s, ['app', 'delete', 'nope', '--yes'], env)
  t.equal(bad.code, 2)
  t.match(bad.stderr, /APP_ID: expected one UUID/)
})

t.test('org delete: its apps, people, invitations and usage go; another organisation stays', async (t) => {
  const { d } = await startWorld(t)
  const { s } = d
  const org = JSON.parse((await pombo(s, ['org', 'create', '--nome', 'Sai daqui'])).stdout).id as string
  const apps: App[] = []
  for (const n of ['um', 'dois']) {
    const created = await pombo(s, ['app', 'create', '--nome', n, '--org', org])
    apps.push(JSON.parse(created.stdout))
  }
  const other = await s.createApp({ nome: 'Fica' })
  const devices: string[] = []
  for (const app of [...apps, other]) {
    await d.fcmFor(app)
    devices.push(await d.device(app, `org-${app.id}`))
  }
  const sendId = await d.send(apps[0] as App, { include_player_ids: [devices[0]] })
  await d.closed(sendId)
  const person = await pombo(
    s,
    ['user', 'create', '--email', 'pessoa@sai.example', '--org', org, '--senha-stdin'],
    {},
    'uma senha bem longa 123\n',
  )
  t.equal(person.code, 0, 'a person of the organisation')
  t.equal((await pombo(s, ['user', 'invite', '--email', 'convidada@sai.example', '--org', org])).code, 0)
  const people = await s.sql<{ id: string }>('SELECT id::text FROM dashboard_users WHERE org_id = $1', [org])
  t.equal(people.length, 1)
  const ids = [org, ...apps.map((a) => a.id), ...devices.slice(0, 2), sendId, ...people.map((p) => p.id), 'sai.example']
  const otherBefore = await rowsNaming(s, [other.id])

  const refused = await pombo(s, ['org', 'delete', org])
  t.equal(refused.code, 2)
  t.match(refused.stderr, /2 apps.*dashboard_users.*--yes/)
  const r = await pombo(s, ['org', 'delete', org, '--yes'])
  t.equal(r.code, 0, r.stderr)
  const summary = JSON.parse(r.stdout)
  t.equal(summary.apps, 2)
  t.equal(summary.rows.orgs, 1)
  t.equal(summary.rows.dashboard_users, 1)
  t.equal(summary.rows.dashboard_invites, 1)
  t.same(await rowsNaming(s, ids, KEPT_AFTER_ERASURE), {}, 'nothing names the organisation, its apps, devices, send or people')
  t.same(await rowsNaming(s, [...devices.slice(0, 2), sendId]), {}, 'not even the audit log names their devices or send')
  t.same(await keysNaming(s, ids), [])
  t.same(await rowsNaming(s, [other.id]), otherBefore, "the other organisation's app is as it was")
  const unknown = await pombo(s, ['org', 'delete', org, '--yes'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /organisation .* not found/)
})

t.test('crash mid-way: killed after its first batch, the app is already unusable; run again, it finishes', async (t) => {
  const DEVICES = 3_000
  const { d, env } = await startWorld(t)
  const { s } = d
  const app = await s.createApp({ nome: 'Grande' })
  await new InappWorld(s, app).device({ identifier: 'crash-registered' })
  // Enough batches of 5 that the kill, sent when the first progress line reaches this process, lands long before the
  // last one even on a loaded machine (with 60 devices the command once finished first). Written straight: the
  // registration route would take longer than the test is worth.
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, language, notification_types,
                          invalid_identifier, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'crash-' || i, 1, false, 'fcm', 'en', 1, false, now(), now(), now()
       FROM generate_series(1, $2::int) AS i`,
    [app.id, DEVICES - 1],
  )
  const batchEnv = { ...env, PM_ERASE_BATCH: '5' }
  const child = spawn(process.execPath, pomboArgv(['app', 'delete', app.id, '--yes']), {
    env: cliEnv(s, batchEnv),
  })
  let err = ''
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)))
  child.stderr.on('data', (b: Buffer) => {
    err += b.toString()
    if (/devices: 5 \//.test(err)) child.kill('SIGKILL')
  })
  t.equal(await exited, 'SIGKILL', 'killed after its first progress line')
  t.match(err, /devices: 5 \/ 3,000\n/, 'progress: done / total (grouped thousands)')
  const left = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [app.id])
  t.ok((left[0]?.n ?? 0) > 0 && (left[0]?.n ?? 0) < DEVICES, `cut mid-way: ${left[0]?.n} devices left`)
  const [state] = await s.sql('SELECT paused FROM apps WHERE id = $1', [app.id])
  t.equal(state?.paused, true, 'the half-erased app is paused')
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'late' } })
  t.equal(reg.status, 403, 'nothing new arrives meanwhile')
  const key = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'x' }, included_segments: ['Subscribed Users'] },
    headers: basic(app.api_key),
  })
  t.equal(key.status, 401, 'its key already stopped')

  const r = await pombo(s, ['app', 'delete', app.id, '--yes'], batchEnv)
  t.equal(r.code, 0, r.stderr)
  // A statement the killed command had already sent may still commit after the count above: at most what was left.
  const second = JSON.parse(r.stdout).rows.devices
  t.ok(second > 0 && second <= (left[0]?.n ?? 0), `the second run removes what the first left (${second})`)
  t.same(await rowsNaming(s, [app.id], KEPT_AFTER_ERASURE), {}, 'nothing of it is left')
  t.notOk(existsSync(join(s.cfg.exportDir, 'x')), 'no export file was made')
})

t.test('every table that holds a tenant id is one the erasure empties', async (t) => {
  // A migration adding a table with app_id / org_id (or a parent's id) must add it to src/erasure/tables.ts too.
  const s = await startService(t)
  const rows = await s.sql<{ t: string }>(
    `SELECT DISTINCT c.relname AS t FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped
        AND a.attname IN ('app_id', 'org_id', 'destination_id', 'user_id', 'send_id', 'campanha_id', 'device_id')
      ORDER BY 1`,
    [s.cfg.dbSchema],
  )
  // The audit log is kept on purpose: who did what to a tenant outlives it (issue 32, point 3).
  const covered = new Set([...APP_TABLES, ...ORG_TABLES].map((x) => x.table).concat(KEPT_AFTER_ERASURE))
  t.same(
    rows.map((r) => r.t).filter((x) => !covered.has(x)),
    [],
    'no table holding a tenant id is left out',
  )
})
