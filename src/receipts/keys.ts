// Receipt keys, opened once per process (the spec, Receipt): the sealed key is read and
// decrypted on an app's first receipt and kept; a receipt key never changes for the life of an app.
import { receiptKeyAad } from '../apps/service'
import { DEFAULT_LIMITS } from '../core/config'
import { type Db, query } from '../db/pool'
import type { Vault } from '../core/vault'

export class ReceiptKeys {
  readonly #keys = new Map<string, Promise<Buffer | null>>()

  constructor(
    private readonly db: Db,
    private readonly vault: Vault,
    /** Past this many apps the cache starts over rather than grows. */
    private readonly maxKeys: number = DEFAULT_LIMITS.appCacheMax,
  ) {}

  /** The app's key, or null for an app without one (unknown app). A failed read is not cached. */
  get(appId: string): Promise<Buffer | null> {
    let k = this.#keys.get(appId)
    if (!k) {
      if (this.#keys.size >= this.maxKeys) this.#keys.clear()
      k = query<{ receipt_key_enc: Buffer }>(this.db, 'SELECT receipt_key_enc FROM apps WHERE id = $1', [appId]).then((r) => {
        const sealed = r.rows[0]?.receipt_key_enc
        return sealed ? Buffer.from(this.vault.open(sealed, receiptKeyAad(appId)).toString('utf8'), 'hex') : null
      })
      this.#keys.set(appId, k)
      k.then(
        (v) => {
          if (v === null) this.#keys.delete(appId)
        },
        () => this.#keys.delete(appId),
      )
    }
    return k
  }
}
