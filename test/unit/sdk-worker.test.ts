// The service-worker part on a stand-in for the worker's global scope: its `push`, `notificationclick` and `sync`
// listeners, with the page's `Pombo.init` sharing its storage and a fetch that plays the service. What is drawn,
// that `recebido` goes only after the notification is shown, `clique` and the window opened, the app drawing for
// itself, receipts that wait offline and go out on the next push or sync, and what the worker refuses to open.
// (test/browser/sdk-push.test.ts runs the same part in Chromium against a real service.)
import { MemoryStorage, type PomboError, Pombo } from '@pombo/sdk'
import { currentWorker, installServiceWorker, SYNC_TAG, type WorkerOptions, type WorkerScope } from '@pombo/sdk/sw'
import t from 'tap'
import { fcmMessage } from '../../src/providers/fcm-body'
import { APP_ID, PROOF, pushFor, SEND_ID, web } from '../helpers/push'

const NOW = 1_800_000_000_000
const BASE = 'https://push.example'
const PLAYER = '3b241101-e2bb-4255-8caf-4136c566a962'

/** The storage a page shares with its worker (what IndexedDbStorage is in a browser). */
class SharedStorage extends MemoryStorage {
  readonly sharedWithServiceWorker = true
}

type Listener = (event: Record<string, unknown>) => void

/** The slice of ServiceWorkerGlobalScope the part uses, recording what it did. */
class Scope implements WorkerScope {
  readonly listeners = new Map<string, Listener[]>()
  readonly log: string[] = []
  readonly shown: Array<{ title: string; options: Record<string, unknown> }> = []
  readonly opened: string[] = []
  windows: Array<{ url: string; focus: () => Promise<unknown> }> = []
  showError: Error | null = null
  readonly registration = {
    scope: 'https://loja.example/app/',
    showNotification: async (title: string, options?: object) => {
      if (this.showError) throw this.showError
      this.log.push('show')
      this.shown.push({ title, options: options as Record<string, unknown> })
    },
    sync: {
      register: async (tag: string) => {
        this.log.push(`sync:${tag}`)
      },
    },
  }
  readonly clients = {
    matchAll: async () => this.windows,
    openWindow: async (url: string) => {
      this.log.push(`open:${url}`)
      this.opened.push(url)
    },
  }
  addEventListener(type: string, listener: (event: never) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener as unknown as Listener])
  }
  /** Dispatches like the browser: resolves when every waitUntil promise settled; `untrusted`: waitUntil throws. */
  async dispatch(type: string, props: Record<string, unknown>, untrusted = false): Promise<void> {
    const waits: Array<Promise<unknown>> = []
    const event = {
      ...props,
      waitUntil: (p: Promise<unknown>) => {
        if (untrusted) {
          waits.push(p.catch(() => {}))
          throw new DOMException('untrusted', 'InvalidStateError')
        }
        waits.push(p)
      },
    }
    for (const l of this.listeners.get(type) ?? []) l(event)
    await Promise.allSettled(waits)
  }
  push(payload: unknown): Promise<void> {
    return this.dispatch('push', { data: { json: () => payload } })
  }
  click(data: unknown, untrusted = false): Promise<void> {
    return this.dispatch('notificationclick', { notification: { data, close: () => this.log.push('close') } }, untrusted)
  }
}

/** The service: registrations and receipts, and a switch that takes the network away. */
class Service {
  offline = false
  players: string[] = [PLAYER]
  readonly receipts: Array<Record<string, unknown>> = []
  readonly registrations: Array<Record<string, unknown>> = []
  constructor(private readonly log: string[]) {}
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (this.offline) throw new TypeError('Failed to fetch')
    const body = JSON.parse(String(init.body ?? '{}'))
    const path = new URL(url).pathname
    if (path === '/api/v1/players') {
      this.registrations.push(body)
      return Response.json({ success: true, id: this.players[this.registrations.length - 1] ?? PLAYER })
    }
    if (path === '/api/v1/receipts') {
      this.log.push(`receipt:${body.evento}`)
      const dup = this.receipts.some((r) => r.rcpt === body.rcpt && r.evento === body.evento)
      this.receipts.push(body)
      return Response.json(dup ? { ok: true, duplicado: true } : { ok: true })
    }
    return new Response('{"errors":["?"]}', { status: 404 })
  }
}

function world(t: Tap, o: WorkerOptions = {}) {
  const scope = new Scope()
  const service = new Service(scope.log)
  const storage = new SharedStorage()
  const errors: PomboError[] = []
  const worker = installServiceWorker(scope, { storage, fetch: service.fetch, onError: (e) => errors.push(e), ...o })
  return {
    scope,
    service,
    storage,
    errors,
    worker,
    async page(token = 'web-tok-1'): Promise<Pombo> {
      const p = await Pombo.init({
        baseUrl: BASE,
        appId: APP_ID,
        appVersion: '1.0.0',
        deviceType: 5,
        getToken: () => token,
        storage,
        fetch: service.fetch,
        autoRetry: false,
      })
      t.teardown(() => p.close())
      return p
    },
  }
}
type Tap = { teardown(fn: () => unknown): void }

const pushData = (body: Record<string, unknown> = {}, sendId = SEND_ID) => {
  const p = pushFor({ headings: { en: 'Title' }, contents: { en: 'Hello', pt: 'Olá' }, ...body })
  const data = fcmMessage(web('web-tok-1'), { ...p, sendId, proof: `${PROOF.slice(0, -4)}${sendId.slice(0, 4)}` }, NOW).message
    .data as Record<string, string>
  return { data, from: '1234', fcmMessageId: `m-${sendId}` }
}

t.test('a push is drawn with the display block, then recebido goes for the device the page registered', async (t) => {
  const w = world(t)
  await w.page()
  const payload = pushData({
    large_icon: 'https://loja.example/l.png',
    big_picture: 'https://loja.example/i.png',
    web_url: 'https://loja.example/promo',
  })
  let told: unknown = null
  w.worker.configure({ onPush: (r) => (told = r) })
  await w.scope.push(payload)
  t.same(w.scope.log, ['show', 'receipt:recebido'], 'shown first, then proved')
  t.same(w.scope.shown, [
    {
      title: 'Title',
      options: {
        body: 'Hello',
        icon: 'https://loja.example/l.png',
        image: 'https://loja.example/i.png',
        tag: SEND_ID,
        lang: 'en',
        dir: 'auto',
        data: payload.data,
      },
    },
  ])
  t.match(w.service.receipts, [
    { app_id: APP_ID, notification_id: SEND_ID, player_id: PLAYER, rcpt: payload.data.pm_rcpt, evento: 'recebido' },
  ])
  t.match(told, { shown: true, receipt: 'sent', description: { notificationId: SEND_ID, url: 'https://loja.example/promo' } })
  t.equal(w.service.registrations.length, 1, 'only the page registered: the worker never does')
  t.same(w.errors, [])
})

t.test('a click sends clique and opens the URL; a window already on it is focused instead', async (t) => {
  const w = world(t)
  await w.page()
  const payload = pushData({ web_url: 'https://loja.example/promo' })
  await w.scope.push(payload)
  await w.scope.click(w.scope.shown[0]?.options.data)
  t.same(w.scope.log, ['show', 'receipt:recebido', 'close', 'open:https://loja.example/promo', 'receipt:clique'])
  const focused: string[] = []
  w.scope.windows = [{ url: 'https://loja.example/promo', focus: async () => focused.push('promo') }]
  await w.scope.click(payload.data)
  t.same(focused, ['promo'])
  t.equal(w.scope.opened.length, 1, 'no second window')
  t.same(
    w.service.receipts.map((r) => r.evento),
    ['recebido', 'clique', 'clique'],
    'the second click is sent (the service answers duplicado)',
  )
})

t.test('a click dispatched by script (untrusted: waitUntil throws) still sends clique', async (t) => {
  const w = world(t)
  await w.page()
  const payload = pushData()
  await w.scope.click(payload.data, true)
  t.same(
    w.service.receipts.map((r) => r.evento),
    ['clique'],
  )
  t.same(w.scope.opened, ['https://loja.example/app/'], 'no URL in the push: the site (the worker scope)')
})

t.test('a URL the browser must not open is refused and reported; defaultUrl null opens nothing', async (t) => {
  const w = world(t)
  await w.page()
  await w.scope.click({ ...pushData().data, pm_url: 'javascript:alert(1)' })
  t.same(w.scope.opened, [])
  t.match(w.errors, [{ kind: 'display', message: /URL do clique recusada/ }])
  t.equal(w.service.receipts.length, 1, 'the click is still proved')
  w.worker.configure({ defaultUrl: null })
  await w.scope.click(pushData().data)
  t.same(w.scope.opened, [], 'nowhere to go')
  w.worker.configure({ defaultUrl: '/inicio' })
  await w.scope.click(pushData().data)
  t.same(w.scope.opened, ['https://loja.example/inicio'])
})

t.test('not shown (no permission): no recebido, reported', async (t) => {
  const w = world(t)
  await w.page()
  w.scope.showError = new TypeError('No notification permission has been granted for this origin.')
  await w.scope.push(pushData())
  t.same(w.service.receipts, [])
  t.match(w.errors, [{ kind: 'display', message: /notificação não exibida: No notification permission/ }])
})

t.test('the app draws for itself: its function gets the description and the web notification; recebido still goes', async (t) => {
  const drawn: unknown[] = []
  const w = world(t, {
    display: async (n, web) => {
      drawn.push([n.title, web.options.tag])
    },
  })
  await w.page()
  await w.scope.push(pushData())
  t.same(drawn, [['Title', SEND_ID]])
  t.same(w.scope.shown, [], 'the SDK drew nothing')
  t.equal(w.service.receipts.length, 1)
  w.worker.configure({
    display: () => {
      throw new Error('o app falhou')
    },
  })
  await w.scope.push(pushData({}, 'aaaaaaaa-d9cb-469f-a165-70867728950e'))
  t.equal(w.service.receipts.length, 1, 'a display that threw proves nothing')
})

t.test('offline: the receipt waits in the shared storage, asks for a sync, and goes out on the next push', async (t) => {
  const w = world(t)
  const page = await w.page()
  w.service.offline = true
  const first = pushData()
  await w.scope.push(first)
  t.same(w.scope.log, ['show', `sync:${SYNC_TAG}`], 'shown offline; Background Sync asked for')
  t.match(await page.queued(), [{ notificationId: SEND_ID, evento: 'recebido', player: PLAYER }], 'the page sees the job')
  w.service.offline = false
  const secondId = 'bbbbbbbb-d9cb-469f-a165-70867728950e'
  await w.scope.push(pushData({}, secondId))
  t.same(w.service.receipts.map((r) => r.notification_id).sort(), [SEND_ID, secondId].sort(), 'the next push sent both')
  t.same(await page.queued(), [])
})

t.test('offline, then the sync event sends what waited; a sync that still fails rejects so the browser retries', async (t) => {
  const w = world(t)
  await w.page()
  w.service.offline = true
  await w.scope.push(pushData())
  let failed: unknown = null
  const waits: Array<Promise<unknown>> = []
  const sync = (tag: string) => {
    for (const l of w.scope.listeners.get('sync') ?? []) l({ tag, waitUntil: (p: Promise<unknown>) => waits.push(p) })
    return Promise.allSettled(waits.splice(0))
  }
  const [r] = await sync(SYNC_TAG)
  failed = r
  t.match(failed, { status: 'rejected' }, 'still offline: rejected')
  w.service.offline = false
  t.same(await sync('someone-elses-tag'), [], 'another tag is not ours')
  const [ok] = await sync(SYNC_TAG)
  t.match(ok, { status: 'fulfilled' })
  t.equal(w.service.receipts.length, 1)
})

t.test('offline, then the page loads: its init sends what the worker queued', async (t) => {
  const w = world(t)
  await w.page()
  w.service.offline = true
  await w.scope.push(pushData())
  w.service.offline = false
  t.equal(w.service.receipts.length, 0)
  await w.page()
  t.equal(w.service.receipts.length, 1)
})

t.test('the page changed the device (new token): the worker proves for the new player_id', async (t) => {
  const w = world(t)
  w.service.players = [PLAYER, 'c3d4e5f6-0000-4000-8000-000000000001']
  await w.page('web-tok-1')
  await w.scope.push(pushData({}, 'cccccccc-d9cb-469f-a165-70867728950e'))
  await w.page('web-tok-2')
  await w.scope.push(pushData({}, 'dddddddd-d9cb-469f-a165-70867728950e'))
  t.same(
    w.service.receipts.map((r) => r.player_id),
    [PLAYER, 'c3d4e5f6-0000-4000-8000-000000000001'],
  )
})

t.test('no page has run init: the push is still shown, the receipt cannot be sent, and it says why', async (t) => {
  const w = world(t)
  await w.scope.push(pushData())
  t.equal(w.scope.shown.length, 1)
  t.same(w.service.receipts, [])
  t.match(w.errors, [{ kind: 'receipt', message: /nenhuma página desta origem chamou Pombo.init/ }])
  // Told where to send, but no device registered yet: the receipt waits for the page's registration.
  const outcomes: unknown[] = []
  w.worker.configure({ baseUrl: BASE, appId: APP_ID, onPush: (r) => outcomes.push(r.receipt) })
  await w.scope.push(pushData({}, 'eeeeeeee-d9cb-469f-a165-70867728950e'))
  t.equal(w.scope.shown.length, 2)
  t.same(outcomes, ['queued'])
  await w.page()
  t.match(
    w.service.receipts,
    [{ notification_id: 'eeeeeeee-d9cb-469f-a165-70867728950e', player_id: PLAYER }],
    'sent once the page registered',
  )
})

t.test("pushes that are not the service's are left alone; broken ones never throw", async (t) => {
  const w = world(t)
  await w.page()
  await w.scope.push({ data: { title: 'de outro sistema' } })
  await w.scope.dispatch('push', { data: { json: () => JSON.parse('{') } })
  await w.scope.dispatch('push', { data: null })
  await w.scope.click({ qualquer: 1 })
  await w.scope.click(undefined)
  t.same(w.scope.log, [])
  t.same(w.errors, [])
})

t.test('installed once per scope; currentWorker answers it', async (t) => {
  const w = world(t)
  t.equal(installServiceWorker(w.scope, { defaultTitle: 'Loja' }), w.worker)
  t.equal(currentWorker(w.scope), w.worker)
  t.equal(currentWorker({}), null)
  t.equal(w.scope.listeners.get('push')?.length, 1, 'one listener, not two')
})
