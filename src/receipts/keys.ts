// Receipt keys, opened once per process (the spec, Receipt): the sealed key is read and
// decrypted on an app's first receipt and kept; a receipt key never changes for the life of an app.
// Past `maxKeys` apps the least recently used key is dropped (src/core/lru.ts), and read again if that app comes back.
import { Lru } from '../core/lru'
import { receiptKeyAad } from '../apps/service'
import { DEFAULT_LIMITS } from '../core/config'
import type { Vault } from '../core/vault'
import { type Db, query } from '../db/pool'

interface Entry {
  read: Promise<Buffer | null>
  /** The key once read: the in-app warm poll signs with it without waiting. */
  key?: Buffer
}

export class ReceiptKeys {
  readonly #keys: Lru<string, Entry>

  constructor(
    private readonly db: Db,
    private readonly vault: Vault,
    maxKeys: number = DEFAULT_LIMITS.appCacheMax,
  ) {
    this.#keys = new Lru({ max: maxKeys })
  }

  /** The app's key, or null for an app without one (unknown app). A failed read is not cached. */
  get(appId: string): Promise<Buffer | null> {
    const hit = this.#keys.get(appId)
    if (hit) return hit.read
    const read = query<{ receipt_key_enc: Buffer }>(this.db, 'SELECT receipt_key_enc FROM apps WHERE id = $1', [appId]).then(
      (r) => {
        const sealed = r.rows[0]?.receipt_key_enc
        return sealed ? Buffer.from(this.vault.open(sealed, receiptKeyAad(appId)).toString('utf8'), 'hex') : null
      },
    )
    const entry: Entry = { read }
    this.#keys.set(appId, entry)
    const forget = () => {
      if (this.#keys.peek(appId) === entry) this.#keys.delete(appId)
    }
    read.then((key) => {
      if (key === null) forget()
      else entry.key = key
    }, forget)
    return read
  }

  /** The app's key when already read, without waiting (undefined: call get). */
  peek(appId: string): Buffer | undefined {
    return this.#keys.get(appId)?.key
  }
}
