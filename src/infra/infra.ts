// What every feature module is built from: configuration, the two stores, key names, the clock and a logger.
import type { Logger } from 'pino'
import type { Config } from '../core/config'
import type { Db } from '../db/pool'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'

export interface Infra {
  cfg: Config
  db: Db
  redis: RedisClient
  keys: Keys
  clock: Clock
  log: Logger
}
