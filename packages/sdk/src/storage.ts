// Where the SDK keeps what must survive a restart: the install id, the registration, the receipts and in-app events
// still to send, the in-app package and display history. The host gives any localStorage-like object; methods may
// answer directly (localStorage, AsyncStorage-style wrappers) or with a promise (IndexedDB in a service worker).
// A storage that throws (quota, private mode) never breaks the SDK: the failure is reported and the value lives on
// in memory for this run.

export interface StorageAdapter {
  getItem(key: string): string | null | undefined | Promise<string | null | undefined>
  setItem(key: string, value: string): unknown
  removeItem(key: string): unknown
}

/** The default storage: a Map, gone when the process ends. */
export class MemoryStorage implements StorageAdapter {
  readonly #map = new Map<string, string>()
  getItem(key: string): string | null {
    return this.#map.get(key) ?? null
  }
  setItem(key: string, value: string): void {
    this.#map.set(key, String(value))
  }
  removeItem(key: string): void {
    this.#map.delete(key)
  }
  /** Number of keys held (tests). */
  get size(): number {
    return this.#map.size
  }
}

/** JSON values under one app's prefix, with every adapter failure caught and reported. */
export class Store {
  /** The last value written per key, so a failing adapter still gives this run a consistent view. */
  readonly #shadow = new Map<string, string | null>()

  constructor(
    private readonly adapter: StorageAdapter,
    private readonly prefix: string,
    private readonly report: (err: unknown, what: string) => void,
  ) {}

  async get<T>(name: string): Promise<T | undefined> {
    const key = this.prefix + name
    let raw: string | null | undefined
    try {
      raw = await this.adapter.getItem(key)
    } catch (err) {
      this.report(err, `storage.getItem(${key})`)
      raw = this.#shadow.get(key)
    }
    if (raw === null || raw === undefined) return undefined
    try {
      return JSON.parse(raw) as T
    } catch {
      return undefined // a value another program wrote, or a torn write: treated as absent
    }
  }

  async set(name: string, value: unknown): Promise<void> {
    const key = this.prefix + name
    const raw = JSON.stringify(value)
    this.#shadow.set(key, raw)
    try {
      await this.adapter.setItem(key, raw)
    } catch (err) {
      this.report(err, `storage.setItem(${key})`)
    }
  }

  async remove(name: string): Promise<void> {
    const key = this.prefix + name
    this.#shadow.set(key, null)
    try {
      await this.adapter.removeItem(key)
    } catch (err) {
      this.report(err, `storage.removeItem(${key})`)
    }
  }
}
