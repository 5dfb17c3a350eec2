// `npm start` leaves the addresses and keys of the services it started in .data/local-env.json (scripts/start.mjs),
// so a `pombo …` command run from the same checkout talks to them without any setting. Only the keys npm start
// writes are read, each only as a string: the file is not a second environment (a PM_TRUST_PROXY or
// PM_WEBHOOK_ALLOW_PRIVATE left in it must not reach a server). `serve` does not take PM_ALLOW_SIMULATORS from it:
// a server started by hand keeps simulators off unless its own environment turns them on (npm start passes it).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './root'

/** What npm start writes, and so what a command may read. */
export const LOCAL_ENV_KEYS = ['DATABASE_URL', 'REDIS_URL', 'PM_PLATFORM_KEY', 'PM_VAULT_KEY', 'PM_ALLOW_SIMULATORS'] as const

/** Read by every command but `serve`. */
const NOT_FOR_SERVE = new Set<string>(['PM_ALLOW_SIMULATORS'])

/** The file's known keys with string values, for `command`; nothing when the file is missing or unreadable. */
export function localDefaults(command: string | undefined, file = join(ROOT, '.data', 'local-env.json')): Record<string, string> {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return {}
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return {}
  const out: Record<string, string> = {}
  for (const k of LOCAL_ENV_KEYS) {
    const v = (raw as Record<string, unknown>)[k]
    if (typeof v !== 'string' || (command === 'serve' && NOT_FOR_SERVE.has(k))) continue
    out[k] = v
  }
  return out
}
