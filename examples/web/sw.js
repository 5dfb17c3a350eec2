// The example's service worker. The integration is the first line: the SDK's script shows Pombo's pushes, sends the
// delivery receipt when one is shown and the click receipt on a click (opening the push's URL), with the service
// and app the page's Pombo.init recorded in IndexedDB. A classic worker, so every browser runs it.
importScripts('/sdk/pombo.min.js')

// Only for this example's page: its log, and its "Simular push" box (a push pasted by hand when there is no
// Firebase, handled exactly like one that arrived).
const channel = new BroadcastChannel('pombo-example')
Pombo.configureWorker({
  onPush: (r) =>
    channel.postMessage({
      type: 'push',
      id: r.description.notificationId,
      title: r.description.title,
      shown: r.shown,
      receipt: r.receipt,
    }),
  onClick: (r) => channel.postMessage({ type: 'tap', id: r.description.notificationId, opened: r.opened, receipt: r.receipt }),
  onError: (e) => channel.postMessage({ type: 'log', text: `[${e.kind}] ${e.message}` }),
})
self.addEventListener('message', (event) => {
  if (event.data?.type === 'simulate-push') event.waitUntil(Pombo.currentWorker().push(event.data.payload))
})

self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()))
