// The service worker: where web pushes arrive. Pombo's web pushes are data-only, so nothing is shown unless this
// code shows it: the SDK turns the push into the display block and sends the delivery receipt; a click on the
// notification sends the click receipt and opens the push's URL. Registered as a module worker (see app.mjs).
import { startPombo } from '/sdk.mjs'

let pombo = null
const sdk = () => {
  pombo ??= startPombo({ background: true, onError: (e) => console.warn('[pombo]', e.kind, e.message) }).catch((err) => {
    pombo = null
    throw err
  })
  return pombo
}
const channel = new BroadcastChannel('pombo-example')

async function arrived(payload) {
  const p = await sdk()
  const d = await p.handlePush(payload)
  if (!d) return // not a Pombo push
  channel.postMessage({ type: 'push', display: d })
  try {
    await self.registration.showNotification(d.title ?? '', {
      body: d.body,
      icon: d.largeIcon,
      image: d.image,
      tag: d.tag,
      data: payload,
    })
  } catch (err) {
    // No notification permission: the receipt was still sent (the push did arrive); nothing can be drawn.
    channel.postMessage({ type: 'log', text: `notificação não exibida: ${err.message}` })
  }
}

self.addEventListener('push', (event) => {
  let payload = null
  try {
    payload = event.data ? event.data.json() : null // FCM web push: {data: {...}, from, fcmMessageId, ...}
  } catch {
    payload = null
  }
  event.waitUntil(arrived(payload))
})

self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  event.waitUntil(
    (async () => {
      const p = await sdk()
      const tap = await p.handleTap(event.notification.data)
      channel.postMessage({ type: 'tap', tap })
      if (tap?.url) await self.clients.openWindow(tap.url)
    })(),
  )
})

// "Simular push" on the page: the same path a real push takes, for trying it without Firebase.
self.addEventListener('message', (event) => {
  if (event.data?.type === 'simulate-push') event.waitUntil(arrived(event.data.payload))
})

self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()))
