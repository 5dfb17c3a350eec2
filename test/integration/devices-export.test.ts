// POST /api/v1/players/csv_export and the export file URL (the spec, Export, Devices, Limits).
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

type App = Awaited<ReturnType<TestService['createApp']>>

const reg = async (s: TestService, body: Record<string, unknown>): Promise<string> => {
  const r = await s.call('POST', '/api/v1/players', { body })
  if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
  return r.json.id
}
const startExport = (s: TestService, app: App, query = '') =>
  s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}${query}`, { headers: basic(app.api_key) })

/** The path of csv_file_url, fetched from this service (the URL's host is PM_PUBLIC_BASE_URL). */
const pathOf = (url: string): string => new URL(url).pathname

async function download(s: TestService, url: string): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(s.url + pathOf(url))
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) }
}

async function waitReady(s: TestService, url: string): Promise<Buffer> {
  for (let i = 0; i < 200; i++) {
    const r = await download(s, url)
    if (r.status === 200) return r.body
    if (r.status !== 404) throw new Error(`export file: ${r.status}`)
    await new Promise((res) => setTimeout(res, 25))
  }
  throw new Error('export never became ready')
}

/** RFC 4180 parser (quoted fields, doubled quotes, newlines inside quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
    } else field += c
  }
  if (field !== '' || row.length) rows.push([...row, field])
  return rows
}

t.test('export: answer shape, 404 until ready, then a gzipped CSV with the spec columns', async (t) => {
  const s = await startService(t, { env: { PM_PUBLIC_BASE_URL: 'https://api.exemplo.com.br' } })
  const app = await s.createApp()
  const other = await s.createApp()
  const live = await reg(s, { app_id: app.id, device_type: 1, identifier: 'live', external_user_id: 'maria' })
  const dead = await reg(s, { app_id: app.id, device_type: 0, identifier: 'dead' })
  await s.sql('UPDATE devices SET invalid_identifier = true WHERE id = $1', [dead])
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'test:sandbox' })
  await reg(s, { app_id: other.id, device_type: 1, identifier: 'other-app' })
  const r = await startExport(s, app)
  t.equal(r.status, 200)
  t.same(Object.keys(r.json).sort(), ['csv_file_url', 'pm_pronto_em_s_estimado', 'pm_validade_h'])
  t.equal(r.json.pm_validade_h, 72)
  t.ok(Number.isInteger(r.json.pm_pronto_em_s_estimado) && r.json.pm_pronto_em_s_estimado >= 1)
  t.match(r.json.csv_file_url, /^https:\/\/api\.exemplo\.com\.br\/api\/v1\/exports\/[0-9a-f]{64}\.csv\.gz$/)
  const gz = await waitReady(s, r.json.csv_file_url)
  const head = await download(s, r.json.csv_file_url)
  t.equal(head.type, 'application/gzip')
  const rows = parseCsv(gunzipSync(gz).toString('utf8'))
  t.same(rows[0], ['id', 'external_user_id', 'notification_types', 'invalid_identifier', 'last_active'])
  const byId = new Map(rows.slice(1).map((row) => [row[0], row]))
  t.equal(byId.size, 1, 'sandbox device, dead device and other app left out')
  const l = byId.get(live) as string[]
  t.equal(l[1], 'maria')
  t.equal(l[2], '1')
  t.equal(l[3], 'false')
  const now = Math.floor(Date.now() / 1000)
  t.ok(Math.abs(Number(l[4]) - now) < 30, 'last_active in epoch seconds')
  t.notOk(byId.has(dead), 'a dead device is left out unless asked')
  // Asked for (incluir_invalidos=true), the dead device is there, flagged. A second export within the second waits.
  await new Promise((r) => setTimeout(r, 1_100))
  const all = await startExport(s, app, '&incluir_invalidos=true')
  t.equal(all.status, 200)
  const withDead = parseCsv(gunzipSync(await waitReady(s, all.json.csv_file_url)).toString('utf8'))
  const d = new Map(withDead.slice(1).map((row) => [row[0], row])).get(dead) as string[]
  t.equal(withDead.length, 3, 'header, live and dead')
  t.equal(d[1], '', 'no user: empty field')
  t.equal(d[3], 'true')
  // The URL is not guessable from the database: only its hash is stored, and names the file.
  const token = /([0-9a-f]{64})\.csv\.gz$/.exec(r.json.csv_file_url)?.[1] as string
  t.equal((await s.sql('SELECT count(*)::int AS n FROM exports WHERE token_hash = $1', [token]))[0]?.n, 0)
  t.notOk(readdirSync(s.cfg.exportDir).some((f) => f.includes(token)))
})

t.test('PM_EXPORT_ROWS_PER_SEC is the first estimate of pm_pronto_em_s_estimado', async (t) => {
  const s = await startService(t, { env: { PM_EXPORT_ROWS_PER_SEC: '1' } })
  const app = await s.createApp()
  for (const id of ['a', 'b', 'c']) await reg(s, { app_id: app.id, device_type: 1, identifier: id })
  const r = await startExport(s, app)
  t.equal(r.status, 200)
  t.equal(r.json.pm_pronto_em_s_estimado, 3, '3 rows at 1 row/s (the default estimate would say 1)')
  await waitReady(s, r.json.csv_file_url)
})

t.test('72-hour validity on the service clock; expired files are removed', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'x' })
  const first = await startExport(s, app)
  await waitReady(s, first.json.csv_file_url)
  clock.advance(2_000)
  const second = await startExport(s, app)
  await waitReady(s, second.json.csv_file_url)
  const files = () => readdirSync(s.cfg.exportDir).filter((f) => f.endsWith('.csv.gz'))
  t.equal(files().length, 2)
  clock.advance(72 * 3_600_000 - 10_000)
  t.equal((await download(s, first.json.csv_file_url)).status, 200, 'still valid just before 72 h')
  clock.advance(9_000)
  t.equal((await download(s, first.json.csv_file_url)).status, 404, 'expired after 72 h')
  t.equal(files().length, 1, 'the expired file was removed when asked for')
  t.equal((await download(s, second.json.csv_file_url)).status, 200)
  clock.advance(3_000)
  t.equal(await s.svc.deps.devices.exporter.sweep(), 1, 'the sweep removes what nobody asked for')
  t.equal(files().length, 0)
  t.equal((await download(s, second.json.csv_file_url)).status, 404)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM exports'))[0]?.n, 0)
})

t.test('one export per second per app: 429 without Retry-After, telling to reuse the previous URL', async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { clock })
  const app = await s.createApp()
  const other = await s.createApp()
  t.equal((await startExport(s, app)).status, 200)
  const again = await startExport(s, app)
  t.equal(again.status, 429)
  t.equal(again.headers.get('retry-after'), null)
  t.match(again.json.explain.como_corrigir, /csv_file_url/)
  t.equal((await startExport(s, other)).status, 200, 'per app')
  clock.advance(1_000)
  t.equal((await startExport(s, app)).status, 200, 'next second')
})

t.test('export auth: key forms and failures', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const other = await s.createApp()
  const post = (path: string, headers: Record<string, string>) => s.call('POST', path, { headers })
  t.equal((await post(`/api/v1/players/csv_export?app_id=${app.id}`, {})).status, 401, 'missing key')
  t.equal((await post(`/api/v1/players/csv_export?app_id=${app.id}`, { authorization: 'Basic nada' })).status, 401, 'malformed')
  t.equal((await post(`/api/v1/players/csv_export?app_id=${other.id}`, basic(app.api_key))).status, 401, 'foreign app_id')
  t.equal((await post('/api/v1/players/csv_export', basic(app.api_key))).status, 400, 'app_id missing from the query')
  await s.svc.deps.apps.setPaused(app.id, true)
  t.equal((await post(`/api/v1/players/csv_export?app_id=${app.id}`, basic(app.api_key))).status, 403, 'paused')
})

t.test('unknown or malformed export URLs are 404', async (t) => {
  const s = await startService(t)
  t.equal((await s.call('GET', `/api/v1/exports/${'a'.repeat(64)}.csv.gz`)).status, 404)
  t.equal((await s.call('GET', '/api/v1/exports/../../etc/passwd')).status, 404)
  t.equal((await s.call('GET', '/api/v1/exports/nada.csv.gz')).status, 404)
})

t.test('503 when export storage is not configured or not writable', async (t) => {
  const off = await startService(t, { env: { PM_EXPORT_DIR: '' } })
  const a = await off.createApp()
  const r = await startExport(off, a)
  t.equal(r.status, 503)
  t.equal(r.json.explain.dependencia, 'PM_EXPORT_DIR')
  const bad = await startService(t, { env: { PM_EXPORT_DIR: '/etc/hostname/exports' } })
  const b = await bad.createApp()
  const r2 = await startExport(bad, b)
  t.equal(r2.status, 503)
  t.equal(r2.json.explain.dependencia, 'armazenamento')
})

t.test('a large export streams in chunks and arrives whole', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const n = 150_000
  await s.sql(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, last_active, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'tok-' || g, 1, false, 'fcm', CASE WHEN g % 3 = 0 THEN 'u-' || g END, now(), now(), now()
       FROM generate_series(1, $2) g`,
    [app.id, n],
  )
  const r = await startExport(s, app)
  const gz = await waitReady(s, r.json.csv_file_url)
  t.ok(gz.length > 1_000_000, `file of ${gz.length} bytes`)
  const lines = gunzipSync(gz).toString('utf8').trimEnd().split('\n')
  t.equal(lines.length, n + 1)
  t.equal((await s.sql('SELECT rows::int AS n FROM exports'))[0]?.n, n, 'row count recorded')
  // A slow reader: the server must wait for the socket to drain (onWritable) and still deliver every byte.
  const slow = await new Promise<Buffer>((resolve, reject) => {
    get(s.url + new URL(r.json.csv_file_url).pathname, (res) => {
      const chunks: Buffer[] = []
      res.once('data', (c: Buffer) => {
        chunks.push(c)
        res.pause()
        setTimeout(() => {
          res.on('data', (c2: Buffer) => chunks.push(c2))
          res.resume()
        }, 300)
      })
      res.on('end', () => resolve(Buffer.concat(chunks)))
      res.on('error', reject)
    }).on('error', reject)
  })
  t.ok(slow.equals(gz), 'slow reader got the same bytes')
})

t.test('a file bigger than every socket buffer reaches a slow reader whole (uWS backpressure)', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  // A ready export planted directly: 64 MB of random bytes (more than the kernel's send and receive buffers).
  const token = randomBytes(32).toString('hex')
  const hash = createHash('sha256').update(token).digest('hex')
  const data = randomBytes(64 * 1024 * 1024)
  mkdirSync(s.cfg.exportDir, { recursive: true })
  writeFileSync(join(s.cfg.exportDir, `${hash}.csv.gz`), data)
  await s.sql(
    `INSERT INTO exports (token_hash, app_id, status, created_at, expires_at) VALUES ($1, $2, 'ready', now(), now() + interval '1 hour')`,
    [hash, app.id],
  )
  const digest = await new Promise<string>((resolve, reject) => {
    get(`${s.url}/api/v1/exports/${token}.csv.gz`, (res) => {
      const h = createHash('sha256')
      res.pause()
      setTimeout(() => {
        res.on('data', (c: Buffer) => h.update(c))
        res.on('end', () => resolve(h.digest('hex')))
        res.resume()
      }, 500)
      res.on('error', reject)
    }).on('error', reject)
  })
  t.equal(digest, createHash('sha256').update(data).digest('hex'), 'every byte, in order')
})

t.test('stopping the service while an export builds leaves no temporary file', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  await reg(s, { app_id: app.id, device_type: 1, identifier: 'x' })
  t.equal((await startExport(s, app)).status, 200)
  await s.svc.stop()
  t.notOk(existsSync(s.cfg.exportDir) && readdirSync(s.cfg.exportDir).some((f) => f.endsWith('.tmp')))
})

t.test('an export left building by an instance that went away is taken over and becomes ready', async (t) => {
  const a = await startService(t)
  const app = await a.createApp()
  const id = await reg(a, { app_id: app.id, device_type: 1, identifier: 'orphan' })
  // What a dead instance leaves: a URL handed out, its row `building`, its claim minutes old.
  const token = randomBytes(32).toString('hex')
  const hash = createHash('sha256').update(token).digest('hex')
  await a.sql(
    `INSERT INTO exports (token_hash, app_id, status, created_at, expires_at, claimed_at)
     VALUES ($1, $2, 'building', now() - interval '5 minutes', now() + interval '72 hours', now() - interval '3 minutes')`,
    [hash, app.id],
  )
  t.equal((await download(a, `${a.url}/api/v1/exports/${token}.csv.gz`)).status, 404, 'not ready')
  // Another instance of the deployment (sharing the export directory) starts and takes it over.
  const b = await startService(t, { shareWith: a, env: { PM_EXPORT_DIR: `${a.cfg.exportDir}-shared` } })
  const url = `${b.url}/api/v1/exports/${token}.csv.gz`
  const rows = parseCsv(gunzipSync(await waitReady(b, url)).toString('utf8'))
  t.same(
    rows.slice(1).map((r) => r[0]),
    [id],
    'built by the instance that took it over, in a directory it had to create',
  )
  t.equal(await a.svc.deps.devices.exporter.recover(), 0, 'ready: nobody takes it again')
  t.equal(await b.svc.deps.devices.exporter.recover(), 0)

  // A build whose owner is alive keeps a fresh claim and is left to it.
  const r = await startExport(a, app)
  const [row] = await a.sql<{ claimed_at: Date | null }>(
    "SELECT claimed_at FROM exports WHERE status = $1 OR ready_at > now() - interval '1 minute' ORDER BY created_at DESC LIMIT 1",
    ['building'],
  )
  t.ok(row?.claimed_at, 'claimed by the instance that queued it')
  t.equal(await b.svc.deps.devices.exporter.recover(), 0, 'a fresh claim is not taken')
  await waitReady(a, r.json.csv_file_url)
})
