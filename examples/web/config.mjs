// The example's settings. `appId` may also come from the page's address (`?app=<app_id>`); the page keeps it in
// IndexedDB so the service worker, which has no address bar, uses the same one.
export const config = {
  appId: '',
  appVersion: '1.0.0',
  // For real pushes from FCM, fill in your Firebase web app's settings (Firebase console → Project settings →
  // General → Your apps, and Cloud Messaging → Web Push certificates for the VAPID key). Left null, the page uses a
  // local token and pushes are pasted into the "Simular push" box instead.
  firebase: null,
  // firebase: { apiKey: '...', authDomain: '...', projectId: '...', messagingSenderId: '...', appId: '...', vapidKey: '...' },
}
