// One place that starts the SDK, used by the page (foreground) and by the service worker (background). The token is
// chosen by the page (Firebase's, or a local one) and kept in IndexedDB, so the worker registers nothing new.
import { Pombo } from '/sdk/index.js'
import { config } from '/config.mjs'
import { idbStorage } from '/idb-storage.mjs'

export const TOKEN_KEY = 'example:token'
export const APP_KEY = 'example:app_id'

export async function startPombo({ background, onError }) {
  const appId = config.appId || (await idbStorage.getItem(APP_KEY))
  if (!appId) throw new Error('sem app_id: abra a página com ?app=<app_id> ou preencha config.mjs')
  return Pombo.init({
    // The page's own origin: serve.mjs forwards /api/ to Pombo (the API sends no CORS headers).
    baseUrl: self.location.origin,
    appId,
    appVersion: config.appVersion,
    deviceType: 5, // Chrome/web; 7 Safari, 8 Firefox
    getToken: () => idbStorage.getItem(TOKEN_KEY),
    storage: idbStorage,
    background,
    onError,
  })
}
