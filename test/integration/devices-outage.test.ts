// 503 on the device routes when Postgres or Redis is unreachable (the spec, Device and export routes errors): the
// service reaches both through TCP proxies this test can cut; nothing is written and the service recovers.
import t from 'tap'
import { basic, DATABASE_URL, REDIS_URL, startService } from '../helpers/service'
import { Cut, postgresBehindCut } from '../helpers/tcp-cut'

const rd = new URL(REDIS_URL)

t.test('Postgres unreachable: 503 naming postgres, nothing answered 200; recovery after', async (t) => {
  const { proxy, url } = await postgresBehindCut(t, DATABASE_URL)
  const s = await startService(t, { env: { DATABASE_URL: url }, limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const body = { app_id: app.id, device_type: 1, identifier: 'before' }
  const ok = await s.call('POST', '/api/v1/players', { body })
  t.equal(ok.status, 200)
  await proxy.cut()
  const r = await s.call('POST', '/api/v1/players', { body: { ...body, identifier: 'during' } })
  t.equal(r.status, 503)
  t.equal(r.json.explain.dependencia, 'postgres')
  const put = await s.call('PUT', `/api/v1/players/${ok.json.id}`, { body: { app_id: app.id, tags: { a: 1 } } })
  t.equal(put.status, 503)
  const get = await s.call('GET', `/api/v1/players/${ok.json.id}?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(get.status, 503)
  const exp = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(exp.status, 503)
  await proxy.open()
  const again = await s.call('POST', '/api/v1/players', { body: { ...body, identifier: 'after' } })
  t.equal(again.status, 200, 'recovers once Postgres is back')
  const rows = await s.sql<{ identifier: string }>('SELECT identifier FROM devices ORDER BY identifier')
  t.same(
    rows.map((x) => x.identifier),
    ['after', 'before'],
    'the refused registration was not written',
  )
})

t.test('Redis unreachable: registration is 503 naming redis (the hourly count cannot be kept); nothing written', async (t) => {
  const proxy = new Cut(rd.hostname, Number(rd.port || 6379))
  await proxy.open()
  const url = new URL(REDIS_URL)
  url.port = String(proxy.port)
  const s = await startService(t, { env: { REDIS_URL: url.toString() }, limits: { ipPerMin: 0 } })
  t.teardown(() => proxy.cut())
  const app = await s.createApp()
  t.equal((await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'a' } })).status, 200)
  await proxy.cut()
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'b' } })
  t.equal(r.status, 503)
  t.equal(r.json.explain.dependencia, 'redis')
  const exp = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(exp.status, 503)
  t.equal((await s.sql('SELECT count(*)::int AS n FROM devices'))[0]?.n, 1)
})

t.test('a failure on the export download logs the route, never the path: the token is the credential', async (t) => {
  const { proxy, url } = await postgresBehindCut(t, DATABASE_URL)
  const s = await startService(t, { env: { DATABASE_URL: url }, limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const exp = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(app.api_key) })
  t.equal(exp.status, 200)
  const path = new URL(exp.json.csv_file_url).pathname
  const token = path.split('/').pop() as string
  await proxy.cut()
  const r = await s.call('GET', path)
  t.equal(r.status, 503)
  await proxy.open()
  const lines = s.logs.filter((l) => l.request_id === r.json.explain.request_id)
  t.ok(lines.length > 0, 'the failure is logged')
  t.ok(
    lines.some((l) => l.route === '/api/v1/exports/:file'),
    'by its route',
  )
  t.notOk(JSON.stringify(s.logs).includes(token), 'the download token appears in no log line')
})
