// `pombo app delete APP_ID --yes` and `pombo org delete ORG_ID --yes`: the thin command over src/erasure/. Without
// --yes it refuses in one line saying what would go; with it, progress goes to stderr and the summary of what was
// removed to stdout as JSON.
import { byOperator } from '../audit/record'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { systemClock } from '../core/time'
import { Eraser, ErasureError, type Removed } from '../erasure/erase'
import { withOperatorTools } from './operator'

export { ErasureError }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function what(r: Removed, apps?: number): string {
  const parts = Object.entries(r.rows)
    .filter(([, n]) => n > 0)
    .map(([t, n]) => `${n} ${t}`)
  if (apps !== undefined) parts.unshift(`${apps} apps`)
  if (r.redisKeys > 0) parts.push(`${r.redisKeys} Redis keys`)
  return parts.join(', ') || 'nothing but the record itself'
}

function summary(r: Removed): Record<string, unknown> {
  return { rows: r.rows, redis_keys: r.redisKeys, stream_entries: r.streamEntries, files: r.files }
}

export async function eraseCommand(cfg: Config, kind: 'app' | 'org', argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { yes: { type: 'boolean' } },
  })
  const label = kind === 'app' ? 'APP_ID' : 'ORG_ID'
  const raw = positionals[0]
  if (!raw || !UUID.test(raw) || positionals.length > 1)
    throw new ErasureError(`${label}: expected one UUID, got "${positionals.join(' ')}"`)
  const id = raw.toLowerCase()
  await withOperatorTools(cfg, async (t) => {
    const eraser = new Eraser({
      db: t.db,
      redis: t.redis,
      keys: t.keys,
      exportDir: cfg.exportDir,
      batch: cfg.eraseBatch,
      invalidate: (appId) => t.dir.invalidate(appId),
      progress: (line) => process.stderr.write(`${line}\n`),
      now: systemClock,
    })
    const exists = kind === 'app' ? await eraser.appExists(id) : await eraser.orgExists(id)
    if (!exists) throw new ErasureError(`${kind === 'app' ? 'app' : 'organisation'} ${id} not found (nothing to erase)`)
    if (!values.yes) {
      const c = kind === 'app' ? await eraser.countApp(id) : await eraser.countOrg(id)
      const apps = 'apps' in c ? (c.apps as number) : undefined
      throw new ErasureError(
        `refusing to erase ${kind} ${id} without --yes: it would remove ${what(c, apps)}, its stream entries and export files; run \`pombo ${kind} delete ${id} --yes\` to erase it`,
      )
    }
    if (kind === 'app') {
      const r = await eraser.eraseApp(id, byOperator('pombo app delete'))
      console.log(JSON.stringify({ app_id: id, deleted: true, ...summary(r) }))
    } else {
      const r = await eraser.eraseOrg(id, byOperator('pombo org delete'))
      console.log(JSON.stringify({ org_id: id, deleted: true, apps: r.apps, ...summary(r) }))
    }
  })
}
