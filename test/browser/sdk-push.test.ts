// The SDK in Chromium, end to end: a page on a local origin loads the SDK's script, registers a service worker whose
// whole code is `importScripts('/pombo.min.js')`, and `Pombo.init` registers the device with a running Pombo (the
// token from the page's `getToken`; the fake FCM accepts any). A send through the API reaches the fake FCM, and the
// message it received is delivered to that worker as a web push through the DevTools protocol
// (ServiceWorker.deliverPushMessage), wrapped the way FCM wraps a web push. Then: the notification is shown with the
// send's resolved texts, icon, image and language (`registration.getNotifications()`), and the send reads
// `recebidos: 1`; a click dispatched to the worker opens the send's URL and makes `converted: 1`. With the network
// off while a push arrives, the notification is still shown, the receipt waits in IndexedDB and is counted after the
// network comes back, on the next push and on the next page load. The same with a module service worker
// (`import '/sdk/sw.js'`) and the ES modules.
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, normalize } from 'node:path'
import type { BrowserContext } from 'playwright-core'
import t, { type Test } from 'tap'
import { launchChromium } from '../helpers/browser'
import { type App, startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'
import { until } from '../helpers/until'

t.setTimeout(200_000)

const DIST = join(__dirname, '..', '..', 'packages', 'sdk', 'dist')
// A 1x1 PNG: the notification's icon and picture, served by the page's origin (no outside host is reachable).
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

const PAGE = (sdk: 'script' | 'module') => `<!doctype html>
<html lang="pt-BR"><head><meta charset="utf-8"><title>Loja</title>
${
  sdk === 'script'
    ? '<script src="/pombo.min.js"></script>'
    : '<script type="module">import * as sdk from "/sdk/index.js"; window.Pombo = sdk</script>'
}
<script>
  // What an app writes: register its worker, then init with the storage it shares with that worker.
  window.start = async (cfg) => {
    const form = ${JSON.stringify(sdk)}
    while (!window.Pombo) await new Promise((r) => setTimeout(r, 10))
    await navigator.serviceWorker.register(form === 'module' ? '/sw-module.js' : '/sw.js', { type: form === 'module' ? 'module' : 'classic' })
    await navigator.serviceWorker.ready
    window.errors = []
    const pombo = await window.Pombo.Pombo.init({
      baseUrl: cfg.baseUrl, appId: cfg.appId, appVersion: '2.0.0', deviceType: 5,
      getToken: () => cfg.token,
      storage: new window.Pombo.IndexedDbStorage(),
      onError: (e) => window.errors.push(e.kind + ': ' + e.message),
    })
    return pombo.playerId
  }
</script></head><body><p>Loja</p></body></html>`

/** The page's origin: the page, its worker (one line), the SDK's files and an image. */
async function site(t: Tap): Promise<{ origin: string }> {
  const files: Record<string, [string, string | Buffer]> = {
    '/': ['text/html; charset=utf-8', PAGE('script')],
    '/module.html': ['text/html; charset=utf-8', PAGE('module')],
    '/sw.js': ['text/javascript', "importScripts('/pombo.min.js')\n"],
    '/sw-module.js': ['text/javascript', "import '/sdk/sw.js'\n"],
    '/pombo.min.js': ['text/javascript', readFileSync(join(DIST, 'pombo.min.js'))],
    '/icon.png': ['image/png', PNG],
  }
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    let f = files[path]
    if (!f && path.startsWith('/sdk/')) {
      const full = normalize(join(DIST, path.slice(5)))
      if (full.startsWith(DIST) && extname(full) === '.js') {
        try {
          f = ['text/javascript', readFileSync(full)]
        } catch {
          f = undefined
        }
      }
    }
    if (!f) return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': f[0], 'cache-control': 'no-store' }).end(f[1])
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  // localhost is a secure context: service workers and notifications work without TLS.
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}` }
}

type Tap = Test

// The browser's globals the evaluated functions use (this project compiles without the DOM library).
interface NotificationSeen {
  title: string
  body: string
  icon: string
  image: string
  tag: string
  lang: string
  data: Record<string, string>
  close(): void
}
interface PageGlobals {
  navigator: { serviceWorker: { ready: Promise<{ getNotifications(): Promise<NotificationSeen[]> }> } }
  Pombo: { IndexedDbStorage: new () => { getItem(k: string): Promise<string | null> } }
  start(cfg: unknown): Promise<string>
  errors: string[]
}
interface WorkerGlobals {
  opened: string[]
  clients: { openWindow: (u: string) => Promise<null> }
  registration: { getNotifications(): Promise<NotificationSeen[]> }
  NotificationEvent: new (type: string, init: { notification: NotificationSeen }) => unknown
  dispatchEvent(e: unknown): boolean
}

type Shown = Omit<NotificationSeen, 'close'>

async function world(t: Tap) {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const app: App = await d.s.createApp()
  await d.fcmFor(app)
  await d.s.svc.deps.apps.setPlan(app.id, 'pro') // the free plan withholds `recebidos`
  const { ctx, close } = await launchChromium()
  t.teardown(close)
  return { d, app, ctx }
}

/** A page of `origin` that registered its worker and the device; the DevTools session that pushes to that worker. */
async function device(t: Tap, ctx: BrowserContext, origin: string, baseUrl: string, app: App, path = '/') {
  await ctx.grantPermissions(['notifications'], { origin })
  const page = await ctx.newPage()
  page.setDefaultTimeout(20_000)
  const cdp = await ctx.newCDPSession(page)
  const registrations: Array<{ registrationId: string; scopeURL: string; isDeleted: boolean }> = []
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations))
  await cdp.send('ServiceWorker.enable')
  // The queued-receipt paths under test are the next push and the page load; Background Sync (which would also
  // send them) is denied so each path is seen on its own (test/unit/sdk-worker.test.ts covers the sync event).
  await cdp.send('Browser.setPermission', { origin, permission: { name: 'background-sync' }, setting: 'denied' })
  const token = `web-${Math.random().toString(36).slice(2, 10)}`
  await page.goto(origin + path)
  const cfg = { baseUrl, appId: app.id, token }
  const start = () => page.evaluate((c) => (globalThis as unknown as PageGlobals).start(c), cfg)
  const player = await start()
  t.match(player, /^[0-9a-f-]{36}$/, 'Pombo.init registered the device')
  const registration = await until('the worker registration', () =>
    registrations.find((r) => r.scopeURL === `${origin}/` && !r.isDeleted),
  )
  const worker = await until('the service worker', () => ctx.serviceWorkers().find((w) => w.url().startsWith(origin)))
  return { page, cdp, token, player, start, registrationId: registration.registrationId, worker }
}

t.test('Chromium: shown, recebido, clique and the URL; offline receipts counted when the network is back', async (t) => {
  const { d, app, ctx } = await world(t)
  const { origin } = await site(t)
  const dev = await device(t, ctx, origin, d.s.url, app)
  const [row] = await d.s.sql('SELECT device_type, identifier, sdk_versao, app_version FROM devices WHERE id = $1', [dev.player])
  t.same(row, { device_type: 5, identifier: dev.token, sdk_versao: '0.7.0', app_version: '2.0.0' })

  const read = async (id: string) =>
    (await d.s.call('GET', `/api/v1/notifications/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })).json as {
      recebidos: number
      converted: number
      successful: number
    }
  const send = async (n: number) => {
    const id = await d.send(app, {
      include_player_ids: [dev.player],
      headings: { en: `Order ${n} shipped`, pt: `Pedido ${n} enviado` },
      contents: { pt: `Chega amanhã (${n})`, es: `Llega mañana (${n})` },
      large_icon: `${origin}/icon.png`,
      big_picture: `${origin}/icon.png?big`,
      web_url: `https://loja.example/pedidos/${n}`,
      data: { pedido: n },
    })
    await d.closed(id)
    return id
  }
  /** What the fake FCM received for the device, delivered to the worker as FCM delivers a web push. */
  const deliver = async (sendId: string) => {
    const got = d.fcm.delivered.find((r) => r.target === dev.token && r.body.message.data.pm_msg_id === sendId)
    if (!got) throw new Error(`FCM got nothing for ${sendId}`)
    t.ok(got.body.message.webpush, 'a web push (FCM webpush block)')
    const data = JSON.stringify({
      data: got.body.message.data,
      from: '1234567890',
      priority: 'high',
      fcmMessageId: `m-${sendId}`,
    })
    await dev.cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId: dev.registrationId, data })
    return got.body.message.data as Record<string, string>
  }
  const shown = (): Promise<Shown[]> =>
    dev.page.evaluate(async () =>
      (await (await (globalThis as unknown as PageGlobals).navigator.serviceWorker.ready).getNotifications()).map((n) => ({
        title: n.title,
        body: n.body,
        icon: n.icon,
        image: n.image,
        tag: n.tag,
        lang: n.lang,
        data: n.data,
      })),
    )
  const queuedInIndexedDb = () =>
    dev.page.evaluate(async (appId) => {
      const raw = await new (globalThis as unknown as PageGlobals).Pombo.IndexedDbStorage().getItem(`pombo:${appId}:outbox`)
      return raw ? (JSON.parse(raw).items as Array<{ notificationId: string; evento: string }>) : []
    }, app.id)

  // 1. A push: shown with the send's texts (the service chose `en` for the title and `es` for the text: no `en`,
  // first alphabetically), its icon and picture; the send reads recebidos 1.
  const s1 = await send(1)
  t.match(await read(s1), { successful: 1, recebidos: 0 }, 'the provider accepting is not arrival')
  const data1 = await deliver(s1)
  // The receipt goes once the notification is shown, so the list is read after it: Chromium drops a notification
  // whose getNotifications() runs while it is being displayed (the list is reconciled with the display's).
  await until('recebidos 1', async () => (await read(s1)).recebidos === 1)
  const list = await shown()
  t.equal(list.length, 1, 'one notification')
  const n1 = list[0]
  t.match(n1, {
    title: 'Order 1 shipped',
    body: 'Llega mañana (1)',
    icon: `${origin}/icon.png`,
    image: `${origin}/icon.png?big`,
    tag: s1,
    lang: 'es',
  })
  t.same(n1?.data, data1, 'the push rides on the notification for the click')
  t.match(await read(s1), { recebidos: 1, converted: 0 })

  // 2. A click: the worker opens the send's URL (a click dispatched by script has no user activation, so the
  // browser would refuse the real openWindow: it is recorded instead) and the send reads converted 1.
  await dev.worker.evaluate(async () => {
    const g = globalThis as unknown as WorkerGlobals
    g.opened = []
    g.clients.openWindow = async (u: string) => {
      g.opened.push(u)
      return null
    }
    const [n] = await g.registration.getNotifications()
    if (n) g.dispatchEvent(new g.NotificationEvent('notificationclick', { notification: n }))
  })
  await until('converted 1', async () => (await read(s1)).converted === 1)
  t.same(await dev.worker.evaluate(() => (globalThis as unknown as WorkerGlobals).opened), ['https://loja.example/pedidos/1'])
  t.same(await shown(), [], 'the clicked notification is closed')
  t.match(await read(s1), { recebidos: 1, converted: 1 })

  // 3. The network off while a push arrives: shown all the same, the receipt waits in IndexedDB.
  const s2 = await send(2)
  await ctx.setOffline(true)
  await deliver(s2)
  await until('the receipt queued in IndexedDB', async () => (await queuedInIndexedDb()).some((j) => j.notificationId === s2))
  t.ok(
    (await shown()).some((n) => n.data?.pm_msg_id === s2),
    'shown offline (queued after it was shown)',
  )
  t.match(await read(s2), { recebidos: 0 }, 'not counted while offline')
  // Back online: the next push sends it with its own.
  await ctx.setOffline(false)
  const s3 = await send(3)
  await deliver(s3)
  await until(
    'both counted after the next push',
    async () => (await read(s2)).recebidos === 1 && (await read(s3)).recebidos === 1,
  )
  t.same(await queuedInIndexedDb(), [], 'nothing left waiting')

  // 4. Offline again; back online, the page loads: its init sends what the worker queued.
  const s4 = await send(4)
  await ctx.setOffline(true)
  await deliver(s4)
  await until('the receipt of s4 queued', async () => (await queuedInIndexedDb()).some((j) => j.notificationId === s4))
  await ctx.setOffline(false)
  t.match(await read(s4), { recebidos: 0 })
  await dev.page.reload()
  t.equal(await dev.start(), dev.player, 'the page load: same install, same device')
  await until('counted after the page load', async () => (await read(s4)).recebidos === 1)
  t.same(await queuedInIndexedDb(), [])
  t.same(await dev.page.evaluate(() => (globalThis as unknown as PageGlobals).errors), [])
})

t.test('Chromium: a module service worker (`import "/sdk/sw.js"`) and the ES modules in the page', async (t) => {
  const { d, app, ctx } = await world(t)
  const { origin } = await site(t)
  const dev = await device(t, ctx, origin, d.s.url, app, '/module.html')
  const id = await d.send(app, { include_player_ids: [dev.player], contents: { en: 'Módulo' }, url: 'https://loja.example/m' })
  await d.closed(id)
  const got = d.fcm.delivered.find((r) => r.target === dev.token && r.body.message.data.pm_msg_id === id)
  const data = JSON.stringify({ data: got?.body.message.data, from: '1', fcmMessageId: 'm' })
  await dev.cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId: dev.registrationId, data })
  await until('recebidos 1', async () => {
    const r = await d.s.call('GET', `/api/v1/notifications/${id}?app_id=${app.id}`, { headers: basic(app.api_key) })
    return r.json.recebidos === 1
  })
  const list = await dev.page.evaluate(async () =>
    (await (await (globalThis as unknown as PageGlobals).navigator.serviceWorker.ready).getNotifications()).map((x) => ({
      title: x.title,
      body: x.body,
    })),
  )
  t.same(list, [{ title: '', body: 'Módulo' }], 'shown: no headings, so an empty title and the text as the body')
})
