// `@pombo/sdk/sw`: the service-worker part. Importing it in a service worker is the whole integration:
//
//   import '@pombo/sdk/sw'          // a module service worker, or a bundled one
//   importScripts('/pombo.js')      // a classic one, with the package's self-contained script (dist/pombo.js)
//
// It listens to `push` (draws the notification, sends `recebido`), `notificationclick` (sends `clique`, opens the
// URL) and `sync` (sends what waited), with the service and app the page's `Pombo.init` recorded (worker.ts).
// `configure(...)` changes how (the app drawing for itself, a default title, callbacks). Outside a service worker,
// importing it installs nothing.
import { installServiceWorker, isServiceWorkerScope, type PomboWorker, type WorkerOptions } from './worker.js'

export {
  describeNotification,
  type NotificationDescription,
  resolvedLanguage,
  type WebDisplayOptions,
  type WebNotification,
  type WebNotificationOptions,
  webNotification,
  webUrl,
} from './display.js'
export { IndexedDbStorage } from './idb-storage.js'
export {
  type ClickOutcome,
  currentWorker,
  type DisplayFunction,
  installServiceWorker,
  isServiceWorkerScope,
  PomboWorker,
  type PushOutcome,
  SYNC_TAG,
  type WorkerOptions,
  type WorkerScope,
} from './worker.js'

const scope: unknown = globalThis
if (isServiceWorkerScope(scope)) installServiceWorker(scope)

/** Changes the options of the part this import installed on the service worker (merged over the current ones). */
export function configure(o: WorkerOptions): PomboWorker {
  const g: unknown = globalThis
  if (!isServiceWorkerScope(g)) throw new TypeError('configure: só num service worker (o arquivo do service worker do app)')
  return installServiceWorker(g, o)
}
