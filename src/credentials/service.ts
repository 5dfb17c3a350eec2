// Storing, switching and deleting delivery credentials: input already validated (validate.ts); each change is one
// transaction (credential + firebase_params together), published to every instance after it commits.
import { type Actor, BY_CODE, record } from '../audit/record'
import type { AppDirectory } from '../apps/directory'
import { findApp } from '../apps/store'
import { type Db, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'
import type { Vault } from '../core/vault'
import * as store from './store'
import type { ApnsEnv, CredentialOf, FirebaseParams, MetaOf, Platform } from './validate'
import { CredentialError, checkStorable } from './validate'

export interface CredentialDeps {
  db: Db
  vault: Vault
  dir: AppDirectory
  redis: RedisClient
  keys: Keys
  now: Clock
  /** Where a stored credential may point (cfg.fcmBaseUrl) and whether simulator credentials may be stored. */
  cfg: { fcmBaseUrl: string; allowSimulators: boolean }
}

export interface Saved<P extends Platform> {
  meta: MetaOf<P>
  updatedAt: Date
}

/** What an audit record says of a credential: which one, never its key (an allow-list of the public fields). */
export function credentialDetails<P extends Platform>(platform: P, meta: MetaOf<P>): Record<string, unknown> {
  if (platform === 'fcm') {
    const m = meta as MetaOf<'fcm'>
    return { platform, project_id: m.project_id, client_email: m.client_email }
  }
  const m = meta as MetaOf<'apns'>
  return { platform, key_id: m.key_id, team_id: m.team_id, bundle_id: m.bundle_id, env: m.env }
}

export class CredentialService {
  constructor(private readonly d: CredentialDeps) {}

  /** Stores (or replaces) a credential; with `firebaseParams` the app's public parameters change in the same commit. */
  async save<P extends Platform>(
    appId: string,
    platform: P,
    credential: CredentialOf<P>,
    meta: MetaOf<P>,
    firebaseParams?: FirebaseParams,
    by: Actor = BY_CODE,
  ): Promise<Saved<P>> {
    checkStorable(platform, credential, this.d.cfg)
    this.d.vault.require()
    const at = new Date(this.d.now())
    await tx(this.d.db, async (c) => {
      await this.#requireApp(c, appId)
      await store.saveCredential(c, this.d.vault, appId, platform, credential, meta, at)
      if (firebaseParams) await store.setFirebaseParams(c, appId, firebaseParams)
      await record(c, { by, action: 'credencial.salva', appId, details: credentialDetails(platform, meta) }, at)
    })
    await this.#publish(appId, platform)
    return { meta, updatedAt: at }
  }

  /** Switches the APNs environment without a new key (spec: changeable at any time, effective immediately). */
  async setApnsEnv(appId: string, env: ApnsEnv, by: Actor = BY_CODE): Promise<Saved<'apns'>> {
    this.d.vault.require()
    const at = new Date(this.d.now())
    const meta = await tx(this.d.db, async (c) => {
      await this.#requireApp(c, appId)
      const cur = await store.loadCredential(c, this.d.vault, appId, 'apns', true)
      if (!cur) throw new CredentialError('this app has no APNs credential; store one with pombo credentials apns')
      const meta = { ...cur.meta, env }
      await store.saveCredential(c, this.d.vault, appId, 'apns', { ...cur.credential, env }, meta, at)
      await record(
        c,
        { by, action: 'credencial.salva', appId, details: { ...credentialDetails('apns', meta), env_only: true } },
        at,
      )
      return meta
    })
    await this.#publish(appId, 'apns')
    return { meta, updatedAt: at }
  }

  /** Deletes the credential (firebase_params, public, stay); returns whether there was one. */
  async delete(appId: string, platform: Platform, by: Actor = BY_CODE): Promise<boolean> {
    const deleted = await tx(this.d.db, async (c) => {
      await this.#requireApp(c, appId)
      const gone = await store.deleteCredential(c, appId, platform)
      if (gone) await record(c, { by, action: 'credencial.excluida', appId, details: { platform } }, new Date(this.d.now()))
      return gone
    })
    // Published even when nothing was deleted: a worker holding a stale provider drops it all the same.
    await this.#publish(appId, platform)
    return deleted
  }

  async #requireApp(c: Tx, appId: string): Promise<void> {
    if (!(await findApp(c, appId, true))) throw new ApiError('APP_NOT_FOUND')
  }

  #publish(appId: string, platform: Platform): Promise<void> {
    return store.publishCredentialChange(this.d.redis, this.d.keys, this.d.dir, appId, platform)
  }
}
