// The device routes answer browsers on other origins (the web SDK runs on the customer's site): a preflight names
// the path's methods and the headers a device sends, every answer (errors included) carries
// Access-Control-Allow-Origin and exposes the headers a script must read. Routes that take a key do neither: a page
// on another origin has no business calling them. Checked with fetch and, for real, in Chromium.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { launchChromium } from '../helpers/browser'
import { basic, PLATFORM_KEY, startService } from '../helpers/service'

const PREFLIGHT = {
  origin: 'https://loja.example',
  'access-control-request-method': 'POST',
  'access-control-request-headers': 'content-type',
}

t.test('preflights of the device routes name their methods and the headers a device sends', async (t) => {
  const s = await startService(t)
  for (const [path, method] of [
    ['/api/v1/players', 'POST'],
    ['/api/v1/players/00000000-0000-4000-8000-000000000000', 'PUT'],
    ['/api/v1/receipts', 'POST'],
    ['/api/v1/inapp/pending', 'GET'],
    ['/api/v1/inapp/eventos', 'POST'],
    ['/api/v1/apps/00000000-0000-4000-8000-000000000000/firebase_params', 'GET'],
  ] as const) {
    const r = await s.call('OPTIONS', path, { headers: { ...PREFLIGHT, 'access-control-request-method': method } })
    t.equal(r.status, 204, `${path}: 204`)
    t.equal(r.headers.get('access-control-allow-origin'), '*', `${path}: any origin`)
    t.match(r.headers.get('access-control-allow-methods'), new RegExp(`\\b${method}\\b`), `${path}: ${method} allowed`)
    t.match(r.headers.get('access-control-allow-headers'), /Content-Type/i)
    t.match(r.headers.get('access-control-allow-headers'), /If-None-Match/i)
    t.ok(Number(r.headers.get('access-control-max-age')) > 0)
  }
  // A path with GET (key) and PUT (device): the preflight names only what a device may do.
  const both = await s.call('OPTIONS', '/api/v1/players/00000000-0000-4000-8000-000000000000', { headers: PREFLIGHT })
  t.notMatch(both.headers.get('access-control-allow-methods'), /GET/, 'reading a device takes a key: not offered')
})

t.test('answers of the device routes carry the CORS headers, errors and 429 included', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 3 } })
  const app = await s.createApp()
  const ok = await s.call('POST', '/api/v1/players', {
    body: { app_id: app.id, device_type: 5, identifier: 'https://push.example/a' },
    headers: { origin: 'https://loja.example' },
  })
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('access-control-allow-origin'), '*')
  t.match(ok.headers.get('access-control-expose-headers'), /Retry-After/)
  t.match(ok.headers.get('access-control-expose-headers'), /ETag/)
  const bad = await s.call('POST', '/api/v1/receipts', { raw: '{', headers: { 'content-type': 'application/json' } })
  t.equal(bad.status, 400)
  t.equal(bad.headers.get('access-control-allow-origin'), '*', 'a refusal is readable by the page too')
  let limited = bad
  for (let i = 0; i < 5 && limited.status !== 429; i++)
    limited = await s.call('GET', `/api/v1/inapp/pending?app_id=${app.id}&player_id=${ok.json.id}`)
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('access-control-allow-origin'), '*', 'the page can read Retry-After of a 429')
  t.ok(limited.headers.get('retry-after'))
})

t.test('routes that take a key offer nothing to other origins', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const pre = await s.call('OPTIONS', '/api/v1/apps', { headers: PREFLIGHT })
  t.equal(pre.status, 404)
  t.equal(pre.headers.get('access-control-allow-origin'), null)
  const sends = await s.call('OPTIONS', '/api/v1/notifications', { headers: PREFLIGHT })
  t.equal(sends.headers.get('access-control-allow-origin'), null)
  const list = await s.call('GET', `/api/v1/notifications?app_id=${app.id}`, {
    headers: { ...basic(app.api_key), origin: 'https://loja.example' },
  })
  t.equal(list.status, 200)
  t.equal(list.headers.get('access-control-allow-origin'), null)
  const created = await s.call('POST', '/api/v1/apps', {
    body: { nome: 'x' },
    headers: { authorization: `Bearer ${PLATFORM_KEY}` },
  })
  t.equal(created.headers.get('access-control-allow-origin'), null)
})

t.test('a page on another origin registers a device and reads the answer, in Chromium', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const site = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>loja</title>'),
  )
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  t.teardown(() => site.close())
  // localhost vs 127.0.0.1: two origins, as the customer's site and Pombo's API are.
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}/`
  const { ctx, close } = await launchChromium()
  t.teardown(close)
  const page = await ctx.newPage()
  await page.goto(siteUrl)
  const got = await page.evaluate(
    async ([base, appId]) => {
      const r = await fetch(`${base}/api/v1/players`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ app_id: appId, device_type: 5, identifier: 'https://push.example/browser' }),
      })
      return { status: r.status, body: (await r.json()) as { id?: string }, requestId: r.headers.get('x-pm-request-id') }
    },
    [s.url, app.id] as const,
  )
  t.equal(got.status, 200)
  t.ok(got.body.id, 'the page read the player id')
  t.ok(got.requestId, 'and an exposed header')
  t.equal((await s.sql('SELECT count(*)::int AS n FROM devices WHERE id = $1', [got.body.id]))[0]?.n, 1)
})
