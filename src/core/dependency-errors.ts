// Recognises "the database or Redis is unreachable" among thrown errors, so the answer is a named 503, not a 500.
export type Dependency = 'postgres' | 'redis'

const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'])
// Postgres SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, cannot connect now).
const REDIS_CLUSTER_DOWN =
  /^(Too many Cluster redirections|CLUSTERDOWN|Cluster isn't ready|None of startup nodes is available|Failed to refresh slots cache|Cluster is ended)/
const PG_STATES = /^(08(?!P01)|57P|53300)/

export function dependencyOf(err: unknown): Dependency | null {
  if (!(err instanceof Error)) return null
  const e = err as Error & { code?: string; dependency?: Dependency }
  if (e.dependency) return e.dependency
  if (e.name === 'MaxRetriesPerRequestError' || /Connection is closed|Stream isn't writeable/.test(e.message)) return 'redis'
  // A Redis Cluster with a master gone: redirected to the dead node until ioredis gives up, or the cluster is down.
  if (e.name === 'ClusterAllFailedError' || REDIS_CLUSTER_DOWN.test(e.message)) return 'redis'
  if (typeof e.code === 'string' && PG_STATES.test(e.code)) return 'postgres'
  if (/Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(e.message)) {
    return 'postgres'
  }
  if (typeof e.code === 'string' && NET_CODES.has(e.code)) return 'postgres'
  return null
}
