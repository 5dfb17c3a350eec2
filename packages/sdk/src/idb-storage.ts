// The browser's storage for the SDK: IndexedDB, the one durable store a page and its service worker share
// (localStorage does not exist in a service worker). A page that gives `Pombo.init` this storage also tells its
// service worker which service and app its pushes belong to (worker.ts), and the receipts the worker could not send
// wait here for the next push or the next page load. Every method answers a promise, which the SDK awaits; where
// there is no IndexedDB (Node, a private mode that refuses it) they reject, and the SDK reports it and keeps the
// values in memory for the run.
import type { StorageAdapter } from './storage.js'

export const DEFAULT_DATABASE = 'pombo'
const STORE = 'kv'

interface Idb {
  open(name: string, version?: number): IDBOpenDBRequest
}

export class IndexedDbStorage implements StorageAdapter {
  /** Read by `Pombo.init`: this storage is shared with the service worker of the origin. */
  readonly sharedWithServiceWorker = true
  #db: Promise<IDBDatabase> | null = null

  /** `database`: the IndexedDB database's name (default `pombo`; the service worker part reads that one). */
  constructor(readonly database: string = DEFAULT_DATABASE) {}

  #open(): Promise<IDBDatabase> {
    this.#db ??= new Promise<IDBDatabase>((resolve, reject) => {
      const idb = (globalThis as { indexedDB?: Idb }).indexedDB
      if (!idb) throw new Error('IndexedDB indisponível neste ambiente')
      const req = idb.open(this.database, 1)
      req.onupgradeneeded = () => req.result.createObjectStore(STORE)
      req.onsuccess = () => {
        const db = req.result
        // Another context upgrading or deleting the database: let it, and open again next time.
        db.onversionchange = () => {
          db.close()
          this.#db = null
        }
        resolve(db)
      }
      req.onerror = () => reject(req.error)
      req.onblocked = () => reject(new Error('IndexedDB bloqueado por outra aba'))
    }).catch((err) => {
      this.#db = null
      throw err
    })
    return this.#db
  }

  async #run<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.#open()
    return new Promise<T>((resolve, reject) => {
      const tx = db.transaction(STORE, mode)
      const req = fn(tx.objectStore(STORE))
      tx.oncomplete = () => resolve(req.result)
      tx.onerror = () => reject(tx.error)
      tx.onabort = () => reject(tx.error ?? new Error('transação IndexedDB abortada'))
    })
  }

  async getItem(key: string): Promise<string | null> {
    const v = await this.#run('readonly', (s) => s.get(key))
    return typeof v === 'string' ? v : null
  }

  async setItem(key: string, value: string): Promise<void> {
    await this.#run('readwrite', (s) => s.put(String(value), key))
  }

  async removeItem(key: string): Promise<void> {
    await this.#run('readwrite', (s) => s.delete(key))
  }
}
