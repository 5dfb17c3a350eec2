// The service-worker part of the SDK: where a browser's pushes arrive. On `push` it draws the notification from the
// push's display block (display.ts) and, once it is shown, sends the `recebido` receipt; on `notificationclick` it
// sends `clique` and opens the push's URL (or focuses the window already on it). Receipts it cannot send wait in the
// IndexedDB storage it shares with the page and go out on the next push, the next page load (the page's
// `Pombo.init` sends what is queued) or, where the browser has Background Sync, when the network comes back.
//
// The browser starts a service worker with no settings, so the service's address and the app come from what the
// page's `Pombo.init` recorded in that storage (handoff.ts), or from `configure({ baseUrl, appId })`. The worker
// never registers the device (its page does, with the options and token only the page has): its SDK instance is
// `registers: false` and reads the page's registration from storage.
//
// A notification that cannot be shown (no permission) is no proof that anyone could see it: no `recebido` then
// (the spec: without permission, `successful` counts the device and `recebidos` stays 0).
import {
  describeNotification,
  type NotificationDescription,
  type WebDisplayOptions,
  type WebNotification,
  webNotification,
  webUrl,
} from './display.js'
import { messageOf, type PomboError, reporter } from './errors.js'
import { readWorkerSettings, type WorkerSettings } from './handoff.js'
import { IndexedDbStorage } from './idb-storage.js'
import type { JobResult } from './outbox.js'
import { type FlushReport, Pombo } from './pombo.js'
import type { StorageAdapter } from './storage.js'
import type { FetchLike } from './transport.js'

/** The Background Sync tag under which queued receipts ask to be sent when the network is back. */
export const SYNC_TAG = 'pombo-receipts'

/** The app drawing for itself: draw `n` (keep `web.options.data` on the notification so a click is proved). */
export type DisplayFunction = (n: NotificationDescription, web: WebNotification) => void | Promise<void>

export interface WorkerOptions extends WebDisplayOptions {
  /** The service's address; default: what the page's `Pombo.init` recorded. */
  baseUrl?: string
  /** The app id; default: what the page's `Pombo.init` recorded. */
  appId?: string
  /**
   * Who draws the notification: the SDK (default), or a function of the app's (the SDK still sends `recebido` once
   * it returns without throwing, and `clique` when a notification carrying the push in `data` is clicked).
   */
  display?: 'sdk' | DisplayFunction
  /** Where a tap goes when the push carries no URL: default the worker's scope (the site); null opens nothing. */
  defaultUrl?: string | null
  /** Told about everything that went wrong (default: console.warn). */
  onError?: (err: PomboError) => void
  /** Told after each Pombo push was handled. */
  onPush?: (r: PushOutcome) => void
  /** Told after each click on a Pombo notification was handled. */
  onClick?: (r: ClickOutcome) => void
  /** The storage shared with the page (default: `new IndexedDbStorage()`, the one the page should give `Pombo.init`). */
  storage?: StorageAdapter
  /** The fetch to use (default: the global one). */
  fetch?: FetchLike
}

export interface PushOutcome {
  description: NotificationDescription
  shown: boolean
  /** What became of `recebido`; null when nothing was shown, or no service/app is known yet. */
  receipt: JobResult | null
}

export interface ClickOutcome {
  description: NotificationDescription
  /** The URL opened or focused, if any. */
  opened: string | null
  receipt: JobResult | null
}

// The slices of the service worker's global scope the part uses (lib.webworker is not part of this build).
interface NotificationLike {
  data: unknown
  close(): void
}
interface WindowClientLike {
  url: string
  focus?: () => Promise<unknown>
}
export interface WorkerScope {
  addEventListener(type: string, listener: (event: never) => void): void
  location?: { href: string }
  registration: {
    scope: string
    showNotification(title: string, options?: object): Promise<void>
    sync?: { register(tag: string): Promise<void> }
  }
  clients: {
    matchAll(o?: { type?: string; includeUncontrolled?: boolean }): Promise<readonly WindowClientLike[]>
    openWindow(url: string): Promise<unknown>
  }
}
interface ExtendableEventLike {
  waitUntil(p: Promise<unknown>): void
}
interface PushEventLike extends ExtendableEventLike {
  data: { json(): unknown } | null
}
interface NotificationEventLike extends ExtendableEventLike {
  notification: NotificationLike
}
interface SyncEventLike extends ExtendableEventLike {
  tag: string
}

/** Keeps the worker alive for `p`; an event the page or a test dispatched (untrusted) cannot, but `p` still runs. */
function extend(event: ExtendableEventLike, p: Promise<unknown>): void {
  p.catch(() => {})
  try {
    event.waitUntil(p)
  } catch {
    // dispatched by script (isTrusted false): waitUntil refuses, the work goes on while the worker lives
  }
}

export class PomboWorker {
  #o: WorkerOptions
  #report: (err: PomboError) => void
  #sdk: { key: string; pombo: Promise<Pombo> } | null = null

  constructor(
    readonly scope: WorkerScope,
    o: WorkerOptions = {},
  ) {
    this.#o = { ...o }
    this.#report = this.#reporter()
  }

  /** Changes the options (merged over the current ones); takes effect from the next event. */
  configure(o: WorkerOptions): void {
    this.#o = { ...this.#o, ...o }
    this.#report = this.#reporter()
    this.#sdk = null
  }

  #reporter(): (err: PomboError) => void {
    return reporter(this.#o.onError ?? ((e) => console.warn('[pombo]', e.kind, e.message)))
  }

  #storage(): StorageAdapter {
    this.#o.storage ??= new IndexedDbStorage()
    return this.#o.storage
  }

  /** The SDK instance for the app the page (or `configure`) named; null while none is known. */
  async #pombo(): Promise<Pombo | null> {
    let stored: WorkerSettings | null = null
    if (!this.#o.baseUrl || !this.#o.appId) {
      try {
        stored = await readWorkerSettings(this.#storage())
      } catch (err) {
        this.#report({ kind: 'storage', message: `configuração do service worker: ${messageOf(err)}`, cause: err })
      }
    }
    const baseUrl = this.#o.baseUrl ?? stored?.baseUrl
    const appId = this.#o.appId ?? stored?.appId
    if (!baseUrl || !appId) {
      this.#report({
        kind: 'receipt',
        message: 'sem app: nenhuma página desta origem chamou Pombo.init com IndexedDbStorage (ou configure({ baseUrl, appId }))',
      })
      return null
    }
    const key = `${baseUrl} ${appId.toLowerCase()}`
    if (this.#sdk?.key !== key) {
      const pombo = Pombo.init({
        baseUrl,
        appId,
        appVersion: stored?.appVersion ?? '0',
        deviceType: stored?.deviceType ?? 5,
        getToken: () => null,
        registers: false,
        background: true,
        // A service worker lives for its events: retries ride on the next push, page load or sync event.
        autoRetry: false,
        storage: this.#storage(),
        fetch: this.#o.fetch,
        onError: (e) => this.#report(e),
      })
      this.#sdk = { key, pombo }
      pombo.catch(() => {
        if (this.#sdk?.pombo === pombo) this.#sdk = null
      })
    }
    try {
      return await this.#sdk.pombo
    } catch (err) {
      this.#report({ kind: 'receipt', message: messageOf(err), cause: err })
      return null
    }
  }

  /**
   * A push arrived (the `push` event's `event.data.json()`): draws it and sends `recebido`. Null for a push that is
   * not the service's (left to the app's own handlers).
   */
  async push(payload: unknown): Promise<PushOutcome | null> {
    const description = describeNotification(payload)
    if (!description) return null
    const sdk = this.#pombo() // read storage while drawing
    sdk.catch(() => {})
    const web = webNotification(description, this.#o)
    let shown = false
    try {
      const display = this.#o.display
      if (typeof display === 'function') await display(description, web)
      else await this.scope.registration.showNotification(web.title, web.options)
      shown = true
    } catch (err) {
      this.#report({ kind: 'display', message: `notificação não exibida: ${messageOf(err)}`, cause: err })
    }
    let receipt: JobResult | null = null
    if (shown) {
      const pombo = await sdk
      if (pombo) receipt = (await pombo.handlePush(description.push))?.receipt ?? null
      if (receipt === 'queued') await this.#askForSync()
    }
    const out: PushOutcome = { description, shown, receipt }
    this.#tell(this.#o.onPush, out)
    return out
  }

  /** A click on a notification (the `notificationclick` event's notification): sends `clique` and opens its URL. */
  async click(notification: NotificationLike): Promise<ClickOutcome | null> {
    const description = describeNotification(notification?.data)
    if (!description) return null
    try {
      notification.close()
    } catch {
      // already gone
    }
    // Opening first: the browser lets a worker open a window only shortly after the click.
    const opening = this.#open(description)
    const sdk = this.#pombo()
    const [opened, pombo] = await Promise.all([opening, sdk])
    const receipt = pombo ? ((await pombo.handleTap(description.push))?.receipt ?? null) : null
    if (receipt === 'queued') await this.#askForSync()
    const out: ClickOutcome = { description, opened, receipt }
    this.#tell(this.#o.onClick, out)
    return out
  }

  /** Sends what is queued now (the `sync` event; a page may also ask through its own `Pombo.flush`). */
  async flush(): Promise<FlushReport | null> {
    const pombo = await this.#pombo()
    return pombo ? pombo.flush() : null
  }

  async #open(d: NotificationDescription): Promise<string | null> {
    const scopeUrl = this.scope.registration.scope
    const wanted = d.url !== undefined ? d.url : this.#o.defaultUrl === undefined ? scopeUrl : this.#o.defaultUrl
    if (wanted === null) return null
    const url = webUrl(wanted, scopeUrl)
    if (!url) {
      this.#report({ kind: 'display', message: `URL do clique recusada (só http/https): ${String(wanted).slice(0, 200)}` })
      return null
    }
    try {
      const open = await this.scope.clients.matchAll({ type: 'window', includeUncontrolled: true })
      const same = open.find((c) => c.url === url && typeof c.focus === 'function')
      if (same?.focus) await same.focus()
      else await this.scope.clients.openWindow(url)
      return url
    } catch (err) {
      this.#report({ kind: 'display', message: `não foi possível abrir ${url}: ${messageOf(err)}`, cause: err })
      return null
    }
  }

  async #askForSync(): Promise<void> {
    try {
      await this.scope.registration.sync?.register(SYNC_TAG)
    } catch {
      // no Background Sync here (or not allowed): the next push or page load sends it
    }
  }

  #tell<T>(fn: ((r: T) => void) | undefined, r: T): void {
    try {
      fn?.(r)
    } catch {
      // the app's callback failed: nothing of the SDK's depends on it
    }
  }

  /** Listens to `push`, `notificationclick` and `sync` on the scope. */
  listen(): this {
    this.scope.addEventListener('push', (event: PushEventLike) => {
      let payload: unknown = null
      try {
        payload = event.data ? event.data.json() : null // FCM web push: {data: {...}, from, fcmMessageId, ...}
      } catch {
        return // not JSON: not one of the service's
      }
      extend(event, this.push(payload))
    })
    this.scope.addEventListener('notificationclick', (event: NotificationEventLike) => {
      extend(event, this.click(event.notification))
    })
    this.scope.addEventListener('sync', (event: SyncEventLike) => {
      if (event.tag !== SYNC_TAG) return
      // A round that still failed rejects, so the browser tries again later.
      extend(
        event,
        this.flush().then((r) => {
          if (r?.error && r.pending > 0) throw new Error(r.error)
        }),
      )
    })
    return this
  }
}

const INSTALLED = Symbol.for('pombo.sdk.worker')

/** Installs the part on a service worker's scope (once: a second call answers the first install). */
export function installServiceWorker(scope: WorkerScope, o: WorkerOptions = {}): PomboWorker {
  const s = scope as WorkerScope & { [INSTALLED]?: PomboWorker }
  const have = s[INSTALLED]
  if (have) {
    have.configure(o)
    return have
  }
  const w = new PomboWorker(scope, o).listen()
  Object.defineProperty(s, INSTALLED, { value: w })
  return w
}

/** The part installed on this service worker's scope, if any. */
export function currentWorker(scope: unknown = globalThis): PomboWorker | null {
  return (scope as { [INSTALLED]?: PomboWorker } | null)?.[INSTALLED] ?? null
}

/** True in a service worker's global scope. */
export function isServiceWorkerScope(g: unknown = globalThis): g is WorkerScope {
  const ctor = (globalThis as { ServiceWorkerGlobalScope?: unknown }).ServiceWorkerGlobalScope
  return typeof ctor === 'function' && g instanceof (ctor as new () => unknown)
}
