// The dispatcher's opened signing secrets, by destination: a destination's secret never changes (a new secret is a
// new destination), so an entry never goes stale; the cache is an LRU bounded by PM_APP_CACHE_MAX, so a deployment
// with more destinations than that reopens the least recently used ones instead of growing without end.
import { Lru } from '../core/lru'
import type { Vault } from '../core/vault'
import { secretAad } from './store'

export class WebhookSecrets {
  readonly #opened: Lru<string, string>

  constructor(
    private readonly vault: Vault,
    max: number,
  ) {
    this.#opened = new Lru({ max })
  }

  /** The destination's secret, opened from its sealed form on first use. */
  get(dest: { id: string; app_id: string; sealed_secret: Buffer }): string {
    let s = this.#opened.get(dest.id)
    if (s === undefined) {
      s = this.vault.open(dest.sealed_secret, secretAad(dest.app_id, dest.id)).toString()
      this.#opened.set(dest.id, s)
    }
    return s
  }

  get size(): number {
    return this.#opened.size
  }
}
