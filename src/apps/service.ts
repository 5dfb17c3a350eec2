// Apps and keys: creation ((new) org + app + key + sealed receipt key in one transaction), rotation with a 24 h overlap,
// pause/resume, plans, revocation. Every change is published so every instance's cache follows within a second.
import { randomUUID } from 'node:crypto'
import { type Action, type Actor, BY_CODE, record } from '../audit/record'
import type { Config } from '../core/config'
import { type Db, query, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import { insertOrg } from '../orgs/store'
import { type Clock, isoWithOffset } from '../core/time'
import type { Vault } from '../core/vault'
import type { AppDirectory } from './directory'
import { type NewKey, newApiKey, newReceiptKey } from './key-format'
import * as store from './store'

export interface CreateAppInput {
  name: string
  ratePerMin?: number
  sandbox?: boolean
  /** Join this organisation (its plan and allowance); absent: a new organisation of its own, named after the app. */
  orgId?: string
}

export interface CreatedApp {
  id: string
  nome: string
  api_key: string
  kid: string
  receipt_key: string
  rate_por_min: number
  criado_em: string
}

export interface RotatedKey {
  id: string
  api_key: string
  kid: string
  anterior_expira_em: string | null
}

/** The AAD that binds a sealed receipt key to its app. */
export const receiptKeyAad = (appId: string): string => `receipt_key:${appId}`

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23505'
}

export class AppService {
  constructor(
    private readonly db: Db,
    private readonly dir: AppDirectory,
    private readonly vault: Vault,
    private readonly cfg: Pick<Config, 'defaultPlan' | 'limits'>,
    private readonly now: Clock,
  ) {}

  /** `by`: who asked (the audit log's `quem`); the app, its organisation when new, and their records commit together. */
  async create(input: CreateAppInput, by: Actor = BY_CODE): Promise<CreatedApp> {
    this.vault.require()
    const id = randomUUID()
    const receiptKey = newReceiptKey()
    const createdAt = new Date(this.now())
    const ratePerMin = input.ratePerMin ?? this.cfg.limits.defaultRatePerMin
    const sandbox = input.sandbox ?? false
    const orgId = input.orgId ?? randomUUID()
    const key = await this.#retryOnKidCollision(async () => {
      const k = newApiKey(sandbox)
      await tx(this.db, async (c) => {
        if (input.orgId) {
          // KEY SHARE on the organisation: it cannot be deleted under the new app.
          const org = await query(c, 'SELECT 1 FROM orgs WHERE id = $1 FOR KEY SHARE', [input.orgId])
          if (org.rows.length === 0) throw new ApiError('ORG_NOT_FOUND')
        } else {
          await insertOrg(c, { id: orgId, name: input.name, plan: this.cfg.defaultPlan, at: createdAt })
        }
        await store.insertApp(c, {
          id,
          orgId,
          name: input.name,
          ratePerMin,
          inappCapHours: this.cfg.limits.inappCapHoursDefault,
          sandbox,
          receiptKeyEnc: this.vault.seal(receiptKey, receiptKeyAad(id)),
          createdAt,
        })
        await store.insertKey(c, id, k, createdAt)
        if (!input.orgId)
          await record(
            c,
            { by, action: 'org.criada', orgId, details: { name: input.name, plan: this.cfg.defaultPlan } },
            createdAt,
          )
        await record(
          c,
          {
            by,
            action: 'app.criado',
            orgId,
            appId: id,
            details: { name: input.name, sandbox, rate_per_min: ratePerMin, kid: k.kid },
          },
          createdAt,
        )
        await record(
          c,
          { by, action: 'chave.criada', orgId, appId: id, details: { kid: k.kid, sandbox, first: true } },
          createdAt,
        )
      })
      return k
    })
    // Its key is new to every instance's cache: no instance may still hold a miss for its kid. Best effort: the app
    // exists once committed, and a miss for a kid nobody could have known lives PM_KEY_CACHE_MISS_TTL_MS at most.
    await this.dir.invalidate(id).catch(() => {})
    return {
      id,
      nome: input.name,
      api_key: key.apiKey,
      kid: key.kid,
      receipt_key: receiptKey,
      rate_por_min: ratePerMin,
      criado_em: isoWithOffset(createdAt),
    }
  }

  /** the spec, Authentication 7: the previous key stays valid for the overlap, then answers 401; rotation itself never 401s. */
  async rotate(appId: string, sandbox?: boolean, by: Actor = BY_CODE): Promise<RotatedKey> {
    const at = new Date(this.now())
    const deadline = new Date(at.getTime() + this.cfg.limits.rotationOverlapMs)
    let out: { key: NewKey; previous: Date | null }
    try {
      out = await this.#retryOnKidCollision(() =>
        tx(this.db, async (c) => {
          const app = await store.findApp(c, appId, true)
          if (!app) throw new ApiError('APP_NOT_FOUND')
          // Without an explicit choice the new key keeps the app's environment.
          const key = newApiKey(sandbox ?? app.sandbox)
          const previous = await store.expireCurrentKey(c, appId, deadline)
          await store.insertKey(c, appId, key, at)
          if (key.sandbox !== app.sandbox) await store.setAppSandbox(c, appId, key.sandbox)
          await record(
            c,
            {
              by,
              action: 'chave.girada',
              orgId: app.orgId,
              appId,
              details: { kid: key.kid, sandbox: key.sandbox, previous_expires_at: previous?.toISOString() ?? null },
            },
            at,
          )
          return { key, previous }
        }),
      )
    } catch (err) {
      if (err instanceof ApiError || (err as { dependency?: string }).dependency) throw err
      throw new ApiError('KEY_WRITE_FAILED')
    }
    await this.dir.invalidate(appId)
    const { key, previous } = out
    return { id: appId, api_key: key.apiKey, kid: key.kid, anterior_expira_em: previous ? isoWithOffset(previous) : null }
  }

  /**
   * A key beside the app's own, expiring by itself after `ttlMs` (`pombo simulate` makes one for its run and revokes it
   * at the end): not the app's current key, so a later rotation leaves it alone and the app's own key is untouched.
   */
  async issueExpiringKey(
    appId: string,
    ttlMs: number,
    by: Actor = BY_CODE,
  ): Promise<{ api_key: string; kid: string; expires_at: Date }> {
    const at = new Date(this.now())
    const expiresAt = new Date(at.getTime() + ttlMs)
    const key = await this.#retryOnKidCollision(() =>
      tx(this.db, async (c) => {
        const app = await store.findApp(c, appId)
        if (!app) throw new ApiError('APP_NOT_FOUND')
        const key = newApiKey(app.sandbox)
        await store.insertKey(c, appId, key, at, expiresAt)
        await record(
          c,
          { by, action: 'chave.criada', orgId: app.orgId, appId, details: { kid: key.kid, expires_at: expiresAt.toISOString() } },
          at,
        )
        return key
      }),
    )
    await this.dir.invalidate(appId)
    return { api_key: key.apiKey, kid: key.kid, expires_at: expiresAt }
  }

  async setPaused(appId: string, paused: boolean, by: Actor = BY_CODE): Promise<void> {
    await this.#change(appId, by, async (c, app) => {
      await store.setPaused(c, appId, paused)
      return { action: paused ? 'app.pausado' : 'app.retomado', details: { was_paused: app.paused } }
    })
  }

  async setRatePerMin(appId: string, rate: number, by: Actor = BY_CODE): Promise<void> {
    await this.#change(appId, by, async (c, app) => {
      await store.setRatePerMin(c, appId, rate)
      return { action: 'limite.alterado', details: { rate_per_min: rate, previous: app.ratePerMin } }
    })
  }

  /** The plan is the organisation's: its record names the organisation and the app it was changed from. */
  async setPlan(appId: string, plan: store.Plan, by: Actor = BY_CODE): Promise<void> {
    await this.#change(appId, by, async (c, app) => {
      await store.setPlan(c, appId, plan)
      return { action: 'plano.alterado', details: { plan, previous: app.plan } }
    })
  }

  /** Revoked keys stop working at once on every instance (the spec, API key). Recorded when a key stopped. */
  async revokeKeys(appId: string, kid?: string, by: Actor = BY_CODE): Promise<number> {
    const at = new Date(this.now())
    const n = await tx(this.db, async (c) => {
      const n = await store.revokeKeys(c, appId, at, kid)
      if (n > 0) await record(c, { by, action: 'chave.revogada', appId, details: { kid: kid ?? null, revoked: n } }, at)
      return n
    })
    await this.dir.invalidate(appId)
    return n
  }

  /** One change of the app (row locked), its audit record in the same transaction; 404 for an unknown app. */
  async #change(
    appId: string,
    by: Actor,
    apply: (c: Tx, app: store.AppRecord) => Promise<{ action: Action; details: Record<string, unknown> }>,
  ): Promise<void> {
    const at = new Date(this.now())
    await tx(this.db, async (c) => {
      const app = await store.findApp(c, appId, true)
      if (!app) throw new ApiError('APP_NOT_FOUND')
      const r = await apply(c, app)
      await record(c, { by, action: r.action, orgId: app.orgId, appId, details: r.details }, at)
    })
    await this.dir.invalidate(appId)
  }

  /** A random kid can collide with an existing one (36^8 space): the whole transaction is retried with a new key. */
  async #retryOnKidCollision<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write()
      } catch (err) {
        if (attempt < 3 && isUniqueViolation(err)) continue
        throw err
      }
    }
  }
}
