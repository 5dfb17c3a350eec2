// The configuration as a person starting Pombo at a terminal wants it: where each role answers and what it uses, in
// a few lines (the JSON log format carries the whole redacted configuration instead).
import type { Config } from './config'
import { redactUrl } from './redact'

/** `scheme://host:port/db` with no user or password: the summary names where, never who. Parsed after redaction: a
 *  password holding `#` or `/` would otherwise be read as part of the host or the port. */
function where(url: string): string {
  try {
    const u = new URL(redactUrl(url))
    return `${u.hostname}:${u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)}${u.pathname === '/' ? '' : u.pathname}`
  } catch {
    return '(unreadable URL)'
  }
}

export function configSummary(cfg: Config, roles: readonly string[]): string[] {
  const on = (port: number | null) => (port === null ? 'off' : `${cfg.host}:${port}`)
  const lines = [`roles ${roles.join(', ')}`]
  const ports: string[] = []
  if (roles.includes('api')) ports.push(`API http://${cfg.host}:${cfg.port}`, `gRPC ${on(cfg.grpcPort)}`)
  if (roles.includes('dashboard')) ports.push(`dashboard ${cfg.dashboard.url}`)
  ports.push(`operations ${on(cfg.opsPort)}`)
  lines.push(ports.join(' · '))
  const redis = cfg.redisClusterNodes?.length
    ? `Redis Cluster ${cfg.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`
    : `Redis ${where(cfg.redisUrl)}`
  lines.push(`Postgres ${where(cfg.databaseUrl)} (schema ${cfg.dbSchema}) · ${redis} (prefix ${cfg.redisPrefix})`)
  lines.push(`${cfg.partitions} partitions · ${cfg.serveWorkers} worker process(es) · log ${cfg.logLevel}`)
  return lines
}
