// Redis connections. Commands fail fast while Redis is down (no offline queue), so a request answers a named 503
// instead of hanging; the client keeps reconnecting in the background.
import Redis from 'ioredis'

export type RedisClient = Redis

export async function connectRedis(url: string, name: string): Promise<Redis> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectionName: name,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(times * 100, 2_000),
  })
  // Without a listener ioredis prints every reconnect failure; outages surface as 503s and health logs instead.
  r.on('error', () => {})
  await r.connect()
  return r
}
