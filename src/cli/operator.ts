// What an operator's one-shot command needs (pool, Redis for cache invalidation, the app service), opened and closed
// around the command, so `pombo app …` behaves exactly like the routes and every running instance sees the change.
import { AppDirectory } from '../apps/directory'
import { AppService } from '../apps/service'
import type { Config } from '../core/config'
import { migrate } from '../db/migrate'
import { createPool, type Db } from '../db/pool'
import { createLogger } from '../core/log'
import { connectRedis, type RedisClient } from '../redis/client'
import { Keys } from '../redis/keys'
import { systemClock } from '../core/time'
import { Vault } from '../core/vault'

export interface OperatorTools {
  apps: AppService
  db: Db
  redis: RedisClient
  keys: Keys
  dir: AppDirectory
  vault: Vault
}

export async function withOperatorTools<T>(cfg: Config, fn: (t: OperatorTools) => Promise<T>): Promise<T> {
  await migrate(cfg.databaseDirectUrl, cfg.dbSchema)
  const db = createPool(cfg, 2)
  const redis = await connectRedis(cfg, 'pombo-cli')
  try {
    const keys = new Keys(cfg.redisPrefix)
    const dir = new AppDirectory(db, redis, keys, createLogger('silent'), cfg.limits.keyCacheTtlMs, systemClock, {
      max: cfg.limits.keyCacheMax,
      missMax: cfg.limits.keyCacheMissMax,
      missTtlMs: cfg.limits.keyCacheMissTtlMs,
    })
    const vault = new Vault(cfg.vaultKey)
    return await fn({ apps: new AppService(db, dir, vault, cfg, systemClock), db, redis, keys, dir, vault })
  } finally {
    redis.disconnect()
    await db.end()
  }
}
