// A storage adapter for @pombo/sdk over IndexedDB: asynchronous, and shared by the page and the service worker
// (localStorage does not exist in a service worker). getItem/setItem/removeItem answer promises, which the SDK
// awaits.
const DB = 'pombo-example'
const STORE = 'kv'

let opening = null
function db() {
  opening ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1)
    req.onupgradeneeded = () => req.result.createObjectStore(STORE)
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
  return opening
}

async function run(mode, fn) {
  const d = await db()
  return new Promise((resolve, reject) => {
    const tx = d.transaction(STORE, mode)
    const req = fn(tx.objectStore(STORE))
    tx.oncomplete = () => resolve(req.result)
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error)
  })
}

export const idbStorage = {
  getItem: (key) => run('readonly', (s) => s.get(key)).then((v) => v ?? null),
  setItem: (key, value) => run('readwrite', (s) => s.put(String(value), key)),
  removeItem: (key) => run('readwrite', (s) => s.delete(key)),
}
