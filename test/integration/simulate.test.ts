// `pombo simulate` end to end: the real CLI as a child process against a real service (API and delivery worker in
// this process) that allows simulators (PM_ALLOW_SIMULATORS): its worker delivers the app's pushes to the simulators
// the child starts, through the simulator credentials the child stores. Every count the run prints is checked
// against the service's own tables: registered devices, pushes accepted, `recebidos`, `converted`. The refusals
// (an instance that does not allow simulators, an app without simulator credentials): simulate-refusals.test.ts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { pombo, pomboProcess } from '../helpers/cli'
import { FakeClock, startService } from '../helpers/service'
import { until } from '../helpers/until'

async function world(t: Test, roles: Array<'api' | 'worker'>, extra: Record<string, string> = {}, clock?: FakeClock) {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-simulate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The worker learns where the simulators are, and trusts their certificate, from the app's simulator credentials:
  // no PM_FCM_BASE_URL, no extra CA.
  const env = {
    PM_ALLOW_SIMULATORS: '1',
    PM_LIMIT_IP_PER_MIN: '0',
    PM_DEFAULT_PLAN: 'pro',
    PM_PARTITIONS: '4',
    ...extra,
  }
  const s = await startService(t, { roles, env, clock })
  const app = await s.createApp()
  const argv = (args: string[]) => ['simulate', '--app', app.id, '--base-url', s.url, '--tls-dir', dir, '--json', ...args]
  const runEnv = (more: Record<string, string>) => ({ ...env, PM_OPS_PORT: '0', ...more })
  const run = (args: string[], more: Record<string, string> = {}) => pombo(s, argv(args), runEnv(more))
  const start = (args: string[], more: Record<string, string> = {}) => pomboProcess(s, argv(args), runEnv(more))
  return { s, app, dir, env, run, start }
}

t.test('devices register through the SDK, every push is answered, and the service counts exactly what was sent', async (t) => {
  const w = await world(t, ['api', 'worker'])
  const report = join(w.dir, 'report.svg')
  const r = await w.run([
    '--devices',
    '30',
    '--key',
    w.app.api_key,
    '--sends',
    '2',
    '--send-interval-ms',
    '200',
    '--platforms',
    'android,ios,web',
    '--receipt-rate',
    '0.8',
    '--click-rate',
    '0.5',
    '--click-delay-ms',
    '0-30',
    '--fcm-latency-ms',
    '2-10',
    '--apns-latency-ms',
    'lognormal:5:20',
    '--report',
    report,
  ])
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 30)
  t.equal(out.register_failed, 0)
  const [devices] = await w.s.sql<{ n: number; ios: number }>(
    'SELECT count(*)::int AS n, count(*) FILTER (WHERE device_type = 0)::int AS ios FROM devices WHERE app_id = $1',
    [w.app.id],
  )
  t.equal(devices?.n, 30, 'the service holds the 30 devices')
  t.equal(devices?.ios, 10, 'one in three is iOS (APNs)')
  t.equal(out.sends.length, 2)
  t.equal(out.pushes_received - out.pushes_duplicate, 60, 'two sends to 30 devices: 60 pushes reached the devices')
  t.equal(out.receipts_sent + out.receipts_skipped, 60, 'every push was answered or skipped by the receipt rate')
  t.ok(out.receipts_sent > 30 && out.receipts_sent < 60, `receipt rate 0.8 of 60: ${out.receipts_sent}`)
  const rows = await w.s.sql<{ recebidos: number; converted: number; successful: number }>(
    'SELECT recebidos, converted, successful FROM sends WHERE app_id = $1',
    [w.app.id],
  )
  const sum = (k: 'recebidos' | 'converted' | 'successful') => rows.reduce((n, x) => n + x[k], 0)
  t.equal(sum('successful'), 60)
  t.equal(sum('recebidos'), out.receipts_sent, 'recebidos in the service = receipts the devices sent')
  t.equal(out.receipts_counted, out.receipts_sent, 'read back through the API: the same')
  t.equal(out.receipts_sent_for_sends, out.receipts_sent)
  t.equal(sum('converted'), out.clicks_sent, 'converted = clicks sent')
  t.equal(out.clicks_counted, out.clicks_sent)
  t.equal(
    out.latency_ms.send_to_receipt.count,
    out.receipts_sent - out.receipts_late,
    'one end-to-end latency per receipt answered at once',
  )
  t.equal(out.latency_ms.send_to_provider.count, 60, 'one delivery latency per push')
  t.ok(out.latency_ms.send_to_receipt.p50 <= out.latency_ms.send_to_receipt.p99)
  t.ok(out.latency_ms.send_to_receipt.p50 >= out.latency_ms.send_to_provider.p50 - 5)
  t.same(out.warnings, [])
  t.equal(out.provider.fcm.delivered + out.provider.apns.delivered, 60)
  t.ok(out.peak_rss_mb > 0, 'the run reports its peak memory')
  const svg = readFileSync(report, 'utf8')
  t.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
  t.match(svg, /End-to-end latency/)
  t.match(svg, /<polygon /, 'the latency distribution is drawn')
  t.match(svg, /receipts counted/)
})

t.test('devices going offline get their pushes when they come back; receipts still exact', async (t) => {
  const w = await world(t, ['api', 'worker'])
  const r = await w.run([
    '--devices',
    '20',
    '--key',
    w.app.api_key,
    '--sends',
    '3',
    '--send-interval-ms',
    '300',
    '--receipt-rate',
    '1',
    '--click-rate',
    '0',
    '--offline-rate',
    '0.5',
    '--offline-for-ms',
    '200-600',
    '--fcm-latency-ms',
    '1',
  ])
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 20)
  t.equal(out.pushes_received, 60)
  t.ok(out.offline_transitions >= 10, `devices went offline: ${out.offline_transitions}`)
  t.ok(out.pushes_held_offline > 0, `some pushes waited for their device: ${out.pushes_held_offline}`)
  t.equal(out.receipts_sent, 60, 'receipt rate 1: every push proved, held ones included')
  const [row] = await w.s.sql<{ n: number }>('SELECT sum(recebidos)::int AS n FROM sends WHERE app_id = $1', [w.app.id])
  t.equal(row?.n, 60)
  t.equal(out.receipts_counted, 60)
})

t.test('--worker runs the delivery worker inside simulate (the service runs only its API)', async (t) => {
  const w = await world(t, ['api'])
  const report = join(w.dir, 'report.html')
  const r = await w.run([
    '--devices',
    '12',
    '--key',
    w.app.api_key,
    '--sends',
    '1',
    '--receipt-rate',
    '1',
    '--click-rate',
    '1',
    '--click-delay-ms',
    '0',
    '--worker',
    '--fcm-latency-ms',
    '1',
    '--report',
    report,
  ])
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 12)
  t.equal(out.receipts_sent, 12)
  t.equal(out.clicks_sent, 12)
  const [row] = await w.s.sql<{ recebidos: number; converted: number }>(
    'SELECT recebidos, converted FROM sends WHERE app_id = $1',
    [w.app.id],
  )
  t.same(row, { recebidos: 12, converted: 12 })
  const html = readFileSync(report, 'utf8')
  t.match(html, /^<!doctype html>/)
  t.match(html, /<th scope="row">receipts counted by the service<\/th><td>12 of 12 sent for this run's sends<\/td>/)
  t.match(html, /<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, 'the drawing inline')
})

t.test('with --sends 0 the devices answer pushes the sender sends itself', async (t) => {
  const w = await world(t, ['api', 'worker'])
  // A run of up to two minutes, stopped (SIGTERM: it answers what is owed, then reports) once the service has counted
  // every device's receipt: it ends when its work is seen done, not after a fixed time.
  const run = w.start([
    '--devices',
    '6',
    '--sends',
    '0',
    '--receipt-rate',
    '1',
    '--click-rate',
    '0',
    '--duration-s',
    '120',
    '--fcm-latency-ms',
    '1',
  ])
  t.teardown(() => run.child.kill('SIGKILL'))
  // The sender's own send, once the fleet is registered
  await until(
    'the fleet registered',
    async () =>
      (await w.s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [w.app.id]))[0]?.n === 6,
    // CI's coverage-instrumented simulate child on a loaded machine took over 20 s to register six devices.
    90_000,
  )
  const sent = await w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: w.app.id, contents: { en: 'from the sender' }, included_segments: ['Subscribed Users'] },
    headers: { authorization: `Basic ${w.app.api_key}` },
  })
  t.equal(sent.status, 200, sent.text)
  const received = async () =>
    (await w.s.sql<{ recebidos: number }>('SELECT recebidos FROM sends WHERE id = $1', [sent.json.id]))[0]?.recebidos
  await until('every device answered the send', async () => (await received()) === 6, 90_000)
  t.equal(run.child.exitCode, null, 'the run was still going')
  run.child.kill('SIGTERM')
  const r = await run.done
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.sends.length, 0, 'the run sent nothing itself')
  t.equal(out.pushes_received, 6)
  t.equal(out.receipts_sent, 6)
  t.equal(out.receipts_counted, null, 'no send of its own: the service is not read')
  t.equal(out.run_key, null, 'and no key made')
  t.equal(out.latency_ms.provider_to_receipt.count, 6)
  t.equal(out.latency_ms.send_to_receipt.count, 0, 'the send time of a foreign send is unknown')
  t.equal(await received(), 6)
})

t.test('bad input: one line, exit 2, nothing started', async (t) => {
  const w = await world(t, ['api'])
  for (const [args, pattern] of [
    [['--devices', '0'], /--devices: expected an integer from 1/],
    [['--devices', '5', '--receipt-rate', '1.5'], /--receipt-rate: expected a number from 0 to 1/],
    [['--devices', '5', '--report', 'out.png'], /--report: the file must end in \.svg or \.html/],
    [['--devices', '5', '--fcm-latency-ms', 'fast'], /--fcm-latency-ms: latency 'fast'/],
    [['--devices', '5', '--platforms', 'android,symbian'], /--platforms: unknown platform "symbian"/],
  ] as const) {
    const r = await w.run([...args])
    t.equal(r.code, 2, `${args.join(' ')} exits 2`)
    t.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    t.match(r.stderr, pattern)
    t.equal(r.stdout, '')
  }
  const [n] = await w.s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [w.app.id])
  t.equal(n?.n, 0, 'no device registered')
})

t.test('an app with real credentials is left alone unless --replace-credentials', async (t) => {
  const w = await world(t, ['api'])
  await w.s.sql("INSERT INTO credentials (app_id, platform, sealed, meta, updated_at) VALUES ($1, 'fcm', '\\x00', $2, now())", [
    w.app.id,
    JSON.stringify({
      project_id: 'real-project',
      client_email: 'x@real-project.iam.gserviceaccount.com',
      token_uri: 'https://oauth2.googleapis.com/token',
    }),
  ])
  const r = await w.run(['--devices', '3', '--worker'])
  t.equal(r.code, 2)
  t.match(r.stderr, /has real FCM credentials \(project real-project\).*--replace-credentials/)
  const [row] = await w.s.sql<{ meta: { project_id: string } }>(
    "SELECT meta FROM credentials WHERE app_id = $1 AND platform = 'fcm'",
    [w.app.id],
  )
  t.equal(row?.meta.project_id, 'real-project', 'untouched')
})

t.test('simulate ca makes the certificate in advance, for a worker started before the first run', async (t) => {
  const w = await world(t, ['api'])
  const dir = join(w.dir, 'fresh')
  const r = await pombo(w.s, ['simulate', 'ca', '--tls-dir', dir])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout.trim(), join(dir, 'ca.pem'))
  t.match(readFileSync(join(dir, 'ca.pem'), 'utf8'), /^-----BEGIN CERTIFICATE-----/)
  const again = await pombo(w.s, ['simulate', 'ca', '--tls-dir', dir])
  t.equal(again.stdout, r.stdout, 'the same file, kept')
})

t.test('receipts the SDK had to queue (a lost answer, a 503) are sent at the end and still add up exactly', async (t) => {
  const w = await world(t, ['api', 'worker'])
  // Between the devices and the service: the first 3 receipts get a 503 without reaching the service; the next 3
  // reach it (and are counted) but the device gets a 503 instead of the answer. Everything else passes through.
  let receipts = 0
  const proxy = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks)
    const isReceipt = req.method === 'POST' && req.url === '/api/v1/receipts'
    const n = isReceipt ? ++receipts : 0
    if (n >= 1 && n <= 3) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":["indisponível"]}')
      return
    }
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v
    const r = await fetch(w.s.url + req.url, { method: req.method, headers, body: body.length ? body : undefined })
    const text = await r.text()
    if (n >= 4 && n <= 6) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":["resposta perdida"]}')
      return
    }
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(text)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())))
  const base = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
  const r = await pombo(
    w.s,
    [
      'simulate',
      '--app',
      w.app.id,
      '--base-url',
      base,
      '--tls-dir',
      w.dir,
      '--json',
      '--devices',
      '10',
      '--key',
      w.app.api_key,
      '--sends',
      '1',
      '--receipt-rate',
      '1',
      '--click-rate',
      '0',
      '--fcm-latency-ms',
      '1',
      '--receipt-delay-ms',
      '0-300',
    ],
    { ...w.env, PM_OPS_PORT: '0' },
  )
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 10, `every device registered (refusals: ${JSON.stringify(out.register_errors)})`)
  t.equal(out.pushes_received, 10)
  t.equal(out.receipts_queued, 6, 'six receipts were queued by the SDK')
  t.equal(out.receipts_late, 6, 'and settled by the flush at the end')
  t.equal(out.receipts_sent, 10)
  t.equal(out.latency_ms.send_to_receipt.count, 4, 'latency only for receipts answered at once')
  const [row] = await w.s.sql<{ recebidos: number }>('SELECT recebidos FROM sends WHERE app_id = $1', [w.app.id])
  t.equal(row?.recebidos, 10, 'the service counted each once')
  t.equal(out.receipts_counted, 10)
  t.equal(out.receipts_sent_for_sends, 10)
  t.same(out.warnings, [])
})

/**
 * The per-IP limit counts in minute windows, the previous one weighted by how much of it is still within the last
 * minute: right after a minute starts a source has room again. A test that fills the limit and then expects refusals
 * runs on a clock stopped early in a minute, so its requests never straddle one.
 */
const OTHER_VAULT = { PM_VAULT_KEY: 'cd'.repeat(32) }
const earlyInAMinute = () => new FakeClock(Math.floor(Date.now() / 60_000) * 60_000 + 500)

t.test('registrations refused by the per-IP limit are reported with the setting to change', async (t) => {
  const w = await world(t, ['api'], { PM_LIMIT_IP_PER_MIN: '4' }, earlyInAMinute())
  // The run's fleet pass is made with another vault key than the instance's, so the instance does not honour it
  const r = await w.run(['--devices', '8', '--sends', '0', '--worker', '--duration-s', '1', '--concurrency', '1'], OTHER_VAULT)
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 4, 'the first four got through')
  t.equal(out.register_failed, 4)
  t.match(Object.keys(out.register_errors)[0], /^429/)
  t.match(out.warnings[0], /4 registrations failed: 429.*PM_LIMIT_IP_PER_MIN=0/)
  const [n] = await w.s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [w.app.id])
  t.equal(n?.n, 4)
})

t.test('a service that refuses every registration stops the run with its reason', async (t) => {
  const w = await world(t, ['api'], { PM_LIMIT_IP_PER_MIN: '1' }, earlyInAMinute())
  await w.s.call('POST', '/api/v1/players', { body: { app_id: w.app.id, device_type: 1, identifier: 'uses-the-only-slot' } })
  const r = await w.run(['--devices', '30', '--sends', '0', '--worker', '--duration-s', '1'], OTHER_VAULT)
  t.equal(r.code, 2)
  t.match(r.stderr, /every registration failed: 429.*PM_LIMIT_IP_PER_MIN=0/)
  t.equal(r.stdout, '')
})
