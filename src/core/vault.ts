// The one place that encrypts and decrypts secrets (receipt keys, webhook secrets, delivery credentials):
// AES-256-GCM under PM_VAULT_KEY. Sealed form: version byte | 12-byte nonce | 16-byte tag | ciphertext.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { ApiError } from './errors'

const VERSION = 1

export class Vault {
  constructor(private readonly key: Buffer | null) {
    if (key && key.length !== 32) throw new Error('vault key must be 32 bytes')
  }

  get configured(): boolean {
    return this.key !== null
  }

  /** Throws the named 503 when PM_VAULT_KEY is not set: writes that need the vault answer 503. */
  require(): void {
    if (!this.key) throw new ApiError('VAULT_UNSET')
  }

  /** `aad` binds a ciphertext to its owner (e.g. the app id), so a sealed value cannot be moved to another row. */
  seal(plain: Buffer | string, aad: string): Buffer {
    this.require()
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.key as Buffer, iv)
    c.setAAD(Buffer.from(aad))
    const ct = Buffer.concat([c.update(plain), c.final()])
    return Buffer.concat([Buffer.from([VERSION]), iv, c.getAuthTag(), ct])
  }

  open(sealed: Buffer, aad: string): Buffer {
    this.require()
    if (sealed[0] !== VERSION || sealed.length < 29) throw new Error('vault: unknown sealed format')
    const d = createDecipheriv('aes-256-gcm', this.key as Buffer, sealed.subarray(1, 13))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(sealed.subarray(13, 29))
    return Buffer.concat([d.update(sealed.subarray(29)), d.final()])
  }
}
