// The self-contained script (dist/pombo.js): everything in one file, for a `<script>` tag in a page and for
// `importScripts` in a classic service worker, without a bundler. It defines the global `Pombo`: the main entry's
// exports (`Pombo.Pombo`, `Pombo.IndexedDbStorage`, `Pombo.describeNotification`, ...), `Pombo.init(options)`, and
// the service-worker part (`Pombo.configureWorker`, `Pombo.currentWorker`), which installs itself when the script
// runs in a service worker.
import { Pombo, type PomboOptions } from './pombo.js'

export * from './index.js'
export { configure as configureWorker, currentWorker, installServiceWorker, SYNC_TAG } from './sw.js'

/** `Pombo.init(options)` on the global: the class's `init`. */
export function init(o: PomboOptions): Promise<Pombo> {
  return Pombo.init(o)
}
