// `pombo webhook enable APP_ID` (docs/spec/contract.md; the spec, Webhook destination "re-enabled from the dashboard"): clears
// the disable of the app's active destination and its failure streak; a running dispatcher drains the queue at its
// next look (PM_WEBHOOK_POLL_MS). Prints JSON; no active destination exits 2 with one line.
import { byOperator } from '../audit/record'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { enableDestination } from '../confirmations/store'
import { withOperatorTools } from './operator'

export class WebhookCliError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function webhookCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub !== 'enable') throw new WebhookCliError(`unknown webhook command "${sub ?? ''}"`)
  const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} })
  const raw = positionals[0]
  if (!raw || !UUID.test(raw)) throw new WebhookCliError(`APP_ID: expected a UUID, got "${raw ?? ''}"`)
  if (positionals.length > 1) throw new WebhookCliError(`unexpected argument "${positionals[1]}"`)
  const appId = raw.toLowerCase()
  const r = await withOperatorTools(cfg, (t) => enableDestination(t.db, appId, new Date(), byOperator('pombo webhook enable')))
  if (!r) throw new WebhookCliError(`app ${appId} has no active webhook destination (register one with PUT /api/v1/confirmacoes)`)
  console.log(JSON.stringify({ app_id: appId, ...r }, null, 2))
}
