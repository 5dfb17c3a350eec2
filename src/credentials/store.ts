// Delivery credentials at rest (table `credentials`, 0004_delivery.sql): sealed with the vault under AAD
// `credential:<app_id>:<platform>`, beside a non-secret `meta`. The delivery engine reads them with loadCredential
// and drops what it cached when onCredentialChange fires (spec: deleting a credential stops deliveries at once).
import type { AppDirectory } from '../apps/directory'
import { type Db, query, type Tx } from '../db/pool'
import { type RedisClient, subscribe } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Vault } from '../core/vault'
import type { CredentialOf, FirebaseParams, MetaOf, Platform } from './validate'

export interface StoredCredential<P extends Platform> {
  credential: CredentialOf<P>
  meta: MetaOf<P>
  updatedAt: Date
}

/** Binds a sealed credential to its row: a ciphertext copied to another app or platform does not open. */
export const credentialAad = (appId: string, platform: Platform): string => `credential:${appId}:${platform}`

/** Seals and upserts one credential; returns its `updated_at`. Publishing the change is the caller's (after commit). */
export async function saveCredential<P extends Platform>(
  db: Db | Tx,
  vault: Vault,
  appId: string,
  platform: P,
  credential: CredentialOf<P>,
  meta: MetaOf<P>,
  at: Date = new Date(),
): Promise<Date> {
  const sealed = vault.seal(JSON.stringify(credential), credentialAad(appId, platform))
  await query(
    db,
    `INSERT INTO credentials (app_id, platform, sealed, meta, updated_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (app_id, platform) DO UPDATE SET sealed = EXCLUDED.sealed, meta = EXCLUDED.meta, updated_at = EXCLUDED.updated_at`,
    [appId, platform, sealed, JSON.stringify(meta), at],
  )
  return at
}

/** The opened credential, or null when the app has none for this platform. `forUpdate` locks the row (in a Tx). */
export async function loadCredential<P extends Platform>(
  db: Db | Tx,
  vault: Vault,
  appId: string,
  platform: P,
  forUpdate = false,
): Promise<StoredCredential<P> | null> {
  const r = await query<{ sealed: Buffer; meta: MetaOf<P>; updated_at: Date }>(
    db,
    `SELECT sealed, meta, updated_at FROM credentials WHERE app_id = $1 AND platform = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [appId, platform],
  )
  const row = r.rows[0]
  if (!row) return null
  const credential = JSON.parse(vault.open(row.sealed, credentialAad(appId, platform)).toString('utf8')) as CredentialOf<P>
  return { credential, meta: row.meta, updatedAt: row.updated_at }
}

/** Returns whether a credential was there. */
export async function deleteCredential(db: Db | Tx, appId: string, platform: Platform): Promise<boolean> {
  const r = await query(db, 'DELETE FROM credentials WHERE app_id = $1 AND platform = $2', [appId, platform])
  return (r.rowCount ?? 0) > 0
}

/** The non-secret side only (no vault needed): what `pombo credentials` may print. */
export async function credentialMeta<P extends Platform>(db: Db | Tx, appId: string, platform: P): Promise<MetaOf<P> | null> {
  const r = await query<{ meta: MetaOf<P> }>(db, 'SELECT meta FROM credentials WHERE app_id = $1 AND platform = $2', [
    appId,
    platform,
  ])
  return r.rows[0]?.meta ?? null
}

export async function setFirebaseParams(db: Db | Tx, appId: string, params: FirebaseParams): Promise<void> {
  await query(db, 'UPDATE apps SET firebase_params = $2 WHERE id = $1', [appId, JSON.stringify(params)])
}

// ---- change notification ----

export interface CredentialChange {
  appId: string
  platform: Platform
}

/**
 * Tells every instance that an app's credential changed: the app cache (firebase_params) through the directory, and
 * delivery workers through the credentials channel, so they drop cached providers at once.
 */
export async function publishCredentialChange(
  redis: RedisClient,
  keys: Keys,
  dir: AppDirectory,
  appId: string,
  platform: Platform,
): Promise<void> {
  await dir.invalidate(appId)
  await redis.publish(keys.credentials(), `${appId}:${platform}`)
}

/**
 * Subscribes to credential changes on a dedicated connection. `cb('all')` after a reconnect: messages sent while
 * the connection was down are lost, so everything cached must be dropped. Returns a function that unsubscribes.
 */
export async function onCredentialChange(
  redis: RedisClient,
  keys: Keys,
  cb: (change: CredentialChange | 'all') => void,
): Promise<() => void> {
  return subscribe(
    redis,
    [keys.credentials()],
    (_ch, msg) => {
      const [appId, platform] = msg.split(':')
      if (appId && (platform === 'fcm' || platform === 'apns')) cb({ appId, platform })
    },
    () => cb('all'),
  )
}
