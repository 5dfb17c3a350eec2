// The per-app package cache (the spec, In-app device routes; no per-item round trip on a hot path). Every device
// of an app polls `pending`; what they are served comes from the app's active campaigns and the app's switches,
// loaded once and kept in memory. A campaign change, a config change or any app change (pause, keys) is published on
// Redis and every instance drops the app's entry (as the key cache does); entries also expire after a minute in
// case a message was lost, and everything is dropped when the subscription reconnects. Past `maxApps` apps the least
// recently polled leaves first (src/core/lru.ts); freshness is judged here by the clock.
import { createHash } from 'node:crypto'
import { Lru } from '../core/lru'
import type { Logger } from 'pino'
import { DEFAULT_LIMITS } from '../core/config'
import { type Db, query } from '../db/pool'
import { type RedisClient, subscribe } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'
import { inAudience } from './audience'
import type { Profile } from './device-profiles'
import { activeCampaigns } from './store'
import { type TargetKind, schemaMin } from './validate'

export interface PackCampaign {
  id: string
  priority: number
  targetKind: TargetKind
  targets: Set<string> | null
  /** SDK capability of the trigger (5: 0.5, 6: 0.6); a future `inicia_em` needs 6 until it passes. */
  level: number
  startMs: number | null
  endMs: number | null
  /** The item of `messages[]` as JSON, up to the opening quote of the proof's value. */
  head: string
}

export interface AppPack {
  paused: boolean
  active: boolean
  capH: number
  /** Sorted by prioridade (higher first), then creation, then id: the package order. */
  campaigns: PackCampaign[]
  /** Digest of everything above: part of every ETag, equal on every instance for equal state. */
  digest: string
}

interface Entry {
  pack: AppPack | null
  at: number
}

export class PackageCache {
  readonly #map: Lru<string, Entry>
  readonly #loading = new Map<string, Promise<AppPack | null>>()
  #generation = 0
  #unsubscribe: (() => void) | null = null

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly ttlMs: number,
    maxApps: number = DEFAULT_LIMITS.appCacheMax,
  ) {
    this.#map = new Lru({ max: maxApps })
  }

  /** Subscribes to the in-app channel and to the apps' invalidation channel on a dedicated connection. */
  async start(): Promise<void> {
    this.#unsubscribe = await subscribe(
      this.redis,
      [this.keys.inappChanges(), this.keys.invalidations()],
      (_ch, appId) => this.drop(appId),
      () => this.clear(),
    )
  }

  stop(): void {
    this.#unsubscribe?.()
    this.#unsubscribe = null
  }

  /** Tells every instance (this one included) that an app's campaigns or in-app config changed. */
  async invalidate(appId: string): Promise<void> {
    this.drop(appId)
    await this.redis.publish(this.keys.inappChanges(), appId)
  }

  clear(): void {
    this.#generation++
    this.#map.clear()
    this.#loading.clear()
  }

  /** The cached pack (null: no such app), or undefined when it must be loaded. */
  peek(appId: string): AppPack | null | undefined {
    const e = this.#map.get(appId)
    if (!e || this.clock() - e.at >= this.ttlMs) return undefined
    return e.pack
  }

  load(appId: string): Promise<AppPack | null> {
    let p = this.#loading.get(appId)
    if (p) return p
    const generation = this.#generation
    const at = this.clock()
    p = this.#read(appId, at).then(
      (pack) => {
        this.#loading.delete(appId)
        if (generation === this.#generation) {
          this.#map.set(appId, { pack, at })
        }
        return pack
      },
      (err) => {
        this.#loading.delete(appId)
        throw err
      },
    )
    this.#loading.set(appId, p)
    return p
  }

  /** Forgets the app's entry here (the app directory calls it as it drops the app: same instance, no delay). */
  drop(appId: string): void {
    this.#generation++
    this.#map.delete(appId)
    this.#loading.delete(appId)
  }

  async #read(appId: string, nowMs: number): Promise<AppPack | null> {
    const [app, rows] = await Promise.all([
      query<{ paused: boolean; inapp_ativo: boolean; inapp_cap_horas: number }>(
        this.db,
        'SELECT paused, inapp_ativo, inapp_cap_horas FROM apps WHERE id = $1',
        [appId],
      ),
      activeCampaigns(this.db, appId),
    ])
    const a = app.rows[0]
    if (!a) return null
    const campaigns = rows
      .sort((x, y) => y.prioridade - x.prioridade || x.criado_em.getTime() - y.criado_em.getTime() || (x.id < y.id ? -1 : 1))
      .map((r): PackCampaign => {
        const d = r.definition
        const item = {
          campanha_id: r.id,
          formato: d.formato,
          conteudo: d.conteudo,
          estilo: d.estilo,
          gatilho: d.gatilho,
          regras: d.regras,
          inicia_em: d.inicia_em,
          termina_em: d.termina_em,
        }
        const json = JSON.stringify(item)
        return {
          id: r.id,
          priority: r.prioridade,
          targetKind: d.alvo_tipo,
          targets: d.alvo.length > 0 ? new Set(d.alvo) : null,
          level: schemaMin({ gatilho: d.gatilho, inicia_em: null }, nowMs),
          startMs: d.inicia_em ? Date.parse(d.inicia_em) : null,
          endMs: d.termina_em ? Date.parse(d.termina_em) : null,
          head: `${json.slice(0, -1)},"prova":"`,
        }
      })
    const h = createHash('sha256').update(`${a.paused}|${a.inapp_ativo}|${a.inapp_cap_horas}`)
    for (const r of rows) h.update(`|${r.id}:${r.atualizado_em.getTime()}`)
    this.log.debug({ app_id: appId, campaigns: campaigns.length }, 'in-app package cache loaded')
    return {
      paused: a.paused,
      active: a.inapp_ativo,
      capH: a.inapp_cap_horas,
      campaigns,
      digest: h.digest('base64url').slice(0, 16),
    }
  }
}

/**
 * The campaigns of a device's package: active, in its audience, not ended, within its capability (`level`: the
 * `schema` it reported; a future `inicia_em` is sent ahead only to 0.6+, which schedule it), at most `max`.
 */
export function selectFor(
  pack: AppPack,
  deviceId: string,
  p: Profile,
  level: number | null,
  nowMs: number,
  max: number,
): PackCampaign[] {
  const out: PackCampaign[] = []
  if (level === null) return out
  for (const c of pack.campaigns) {
    if (c.endMs !== null && c.endMs <= nowMs) continue
    const future = c.startMs !== null && c.startMs > nowMs
    if ((future ? Math.max(c.level, 6) : c.level) > level) continue
    if (!inAudience(c.targetKind, c.targets, deviceId, p)) continue
    out.push(c)
    if (out.length >= max) break
  }
  return out
}
