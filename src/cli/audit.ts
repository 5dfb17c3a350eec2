// `pombo audit [--app APP_ID | --org ORG_ID] [--desde RFC3339]` (docs/spec/contract.md; docs/operations.md "Audit
// log"): the audit log, one JSON object a line (`em`, `quem`, `acao`, `org_id`, `app_id`, `detalhes`), oldest first,
// so the newest line is the last (as a log reads, and as `tail` shows it). Read in keyset pages, so a long log
// streams out without being held in memory. Bad input exits 2 with one line and reads nothing.
import { parseArgs } from 'node:util'
import { type AuditCursor, listAudit } from '../audit/list'
import type { Config } from '../core/config'
import { parseRfc3339 } from '../core/time'
import { withOperatorTools } from './operator'

export class AuditCliError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const PAGE = 1000

function uuid(flag: string, v: string): string {
  if (!UUID.test(v)) throw new AuditCliError(`${flag}: expected a UUID, got "${v}"`)
  return v.toLowerCase()
}

export async function auditCommand(cfg: Config, argv: string[], write = (line: string) => console.log(line)): Promise<void> {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (err) {
    // parseArgs' own refusals (an unknown flag, a flag without its value) in the command's one-line form
    if (err instanceof AuditCliError) throw err
    throw new AuditCliError(
      `${(err as Error).message.split('\n')[0]} (usage: pombo audit [--app APP_ID | --org ORG_ID] [--desde RFC3339])`,
    )
  }
  const { values, positionals } = parsed
  if (positionals.length > 0) throw new AuditCliError(`unexpected argument "${positionals[0]}"`)
  if (values.app !== undefined && values.org !== undefined) throw new AuditCliError('--app and --org: choose one')
  const appId = values.app === undefined ? undefined : uuid('--app', values.app)
  const orgId = values.org === undefined ? undefined : uuid('--org', values.org)
  let since: Date | undefined
  if (values.desde !== undefined) {
    const ms = parseRfc3339(values.desde)
    if (ms === null)
      throw new AuditCliError(`--desde: expected an RFC 3339 date-time such as 2026-01-31T12:00:00Z, got "${values.desde}"`)
    since = new Date(ms)
  }
  await withOperatorTools(cfg, async (t) => {
    let after: AuditCursor | null = null
    for (;;) {
      const page = await listAudit(t.db, { appId, orgId, since, order: 'oldest', after, limit: PAGE })
      for (const r of page.rows) write(JSON.stringify(r))
      if (!page.next) return
      after = page.next
    }
  })
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: { app: { type: 'string' }, org: { type: 'string' }, desde: { type: 'string' } },
  })
}
