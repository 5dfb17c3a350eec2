// Entry: the `pombo` CLI (docs/spec/contract.md). The only module that reads process.env. Bad input exits non-zero with a
// one-line reason and writes nothing.
import { byOperator } from './audit/record'
import { parseArgs } from 'node:util'
import { AuditCliError, auditCommand } from './cli/audit'
import { credentialsCommand } from './cli/credentials'
import { ErasureError, eraseCommand } from './cli/erasure'
import { withOperatorTools } from './cli/operator'
import { PartitionsCliError, partitionsCommand } from './cli/partitions'
import { orgCommand, orgId, userCommand } from './cli/people'
import { WebhookCliError, webhookCommand } from './cli/webhook'
import { type Config, ConfigError, loadConfig } from './core/config'
import { migrate, migrationStatus } from './db/migrate'
import { ApiError } from './core/errors'
import { GROUP_MEMBER_ENV } from './group/messages'
import { PeopleError } from './people/service'
import { ResizeRefused } from './redis/partitions'
import { localDefaults } from './core/local-env'
import { ALL_ROLES, type Role } from './service/roles'
import { SIMULATE_USAGE } from './simulate/args'
import { SimulateError } from './simulate/errors'

const USAGE = `usage:
  pombo serve [--roles api,worker,dashboard]
  pombo migrate [--status]         (--status: applied, pending and unknown migrations; changes nothing)
  pombo app create --nome NAME [--sandbox] [--rate-por-min N] [--org ORG_ID]
  pombo app pause APP_ID | pombo app resume APP_ID
  pombo app plan APP_ID free|pro
  pombo app delete APP_ID --yes    (erases the app: every row, Redis key, stream entry, export file; resumable)
  pombo app rotate-key APP_ID [--sandbox]
  pombo key revoke APP_ID [--kid KID]
  pombo credentials fcm APP_ID SERVICE_ACCOUNT.json [--config google-services.json] [--package NAME]
  pombo credentials apns APP_ID --p8 FILE --key-id ID --team-id ID --bundle-id ID --env sandbox|production
  pombo credentials apns-env APP_ID sandbox|production
  pombo credentials delete APP_ID fcm|apns
  pombo webhook enable APP_ID
  pombo org create --nome NAME [--plan free|pro]
  pombo org delete ORG_ID --yes    (erases the organisation, its apps and its people)
  pombo user create --email EMAIL (--org ORG_ID | --operador) --senha-stdin
  pombo user invite --email EMAIL --org ORG_ID   (prints a one-time sign-up link, valid 72 h)
  pombo user invites [--org ORG_ID]               (pending invitations, one JSON object a line)
  pombo user invite cancel (--id INVITE_ID | --email EMAIL [--org ORG_ID])
  pombo user remove --email EMAIL                 (the person and every session of theirs, at once)
  pombo user signout --email EMAIL                (ends every session of the person; the person stays)
  pombo audit [--app APP_ID | --org ORG_ID] [--desde RFC3339]
                                   (the audit log, oldest first: one JSON object a line, em quem acao org_id app_id detalhes)
  pombo partitions                 (each partition: owner, stream length, pending, oldest pending age)
  pombo partitions resize N        (every process of the deployment stopped first)
  ${SIMULATE_USAGE}`

class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function appId(v: string | undefined): string {
  if (!v || !UUID.test(v)) throw new UsageError(`APP_ID: expected a UUID, got "${v ?? ''}"`)
  return v.toLowerCase()
}

function parseRoles(v: string | undefined): Role[] {
  if (!v) return [...ALL_ROLES]
  const roles = v.split(',').map((s) => s.trim())
  for (const r of roles)
    if (!ALL_ROLES.includes(r as Role)) throw new UsageError(`--roles: unknown role "${r}" (api, worker, dashboard)`)
  return roles as Role[]
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv
  const cfg = loadConfig({ ...localDefaults(cmd), ...process.env })
  switch (cmd) {
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE)
      return
    case 'serve':
      // Loaded on demand: the servers, the delivery engine and what only they use (gRPC, uWebSockets.js, the OpenAPI
      // document) stay out of every one-shot command, which then starts in about half the time.
      return (await import('./serve.js')).serve(
        cfg,
        parseRoles(parseArgs({ args: rest, options: { roles: { type: 'string' } } }).values.roles),
        process.env[GROUP_MEMBER_ENV] !== undefined,
      )
    case 'migrate': {
      const { values } = parseArgs({ args: rest, options: { status: { type: 'boolean' } } })
      if (values.status) {
        const st = await migrationStatus(cfg.databaseDirectUrl, cfg.dbSchema)
        console.log(
          JSON.stringify({
            aplicadas: st.applied.map((a) => ({ versao: a.version, em: a.appliedAt.toISOString() })),
            pendentes: st.pending,
            desconhecidas: st.unknown,
          }),
        )
        return
      }
      const r = await migrate(cfg.databaseDirectUrl, cfg.dbSchema)
      console.log(JSON.stringify({ aplicadas: r.applied, total: r.total }))
      return
    }
    case 'app':
      if (rest[0] === 'delete') return eraseCommand(cfg, 'app', rest.slice(1))
      return appCommand(cfg, rest)
    case 'key':
      return keyCommand(cfg, rest)
    case 'credentials':
      return credentialsCommand(cfg, rest)
    case 'webhook':
      return webhookCommand(cfg, rest)
    case 'partitions':
      return partitionsCommand(cfg, rest)
    case 'org':
      if (rest[0] === 'delete') return eraseCommand(cfg, 'org', rest.slice(1))
      return orgCommand(cfg, rest)
    case 'user':
      return userCommand(cfg, rest)
    case 'audit':
      return auditCommand(cfg, rest)
    case 'simulate':
      // Loaded on demand: the device SDK it drives is a workspace package built separately, and no other command
      // (nor `serve`) may depend on it being there
      return (await loadSimulate()).simulateCommand(cfg, rest)
    default:
      throw new UsageError(cmd ? `unknown command "${cmd}"` : 'missing command')
  }
}

async function loadSimulate(): Promise<typeof import('./simulate/command.js')> {
  try {
    return await import('./simulate/command.js')
  } catch (err) {
    if (/@pombo\/sdk/.test(String((err as Error).message))) {
      throw new SimulateError('the device SDK is not built (packages/sdk/dist): run npm run build, or node scripts/build-sdk.mjs')
    }
    throw err
  }
}

async function appCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      nome: { type: 'string' },
      sandbox: { type: 'boolean' },
      'rate-por-min': { type: 'string' },
      org: { type: 'string' },
    },
  })
  switch (sub) {
    case 'create': {
      const name = values.nome?.trim()
      if (!name) throw new UsageError('--nome: required and non-empty')
      if (Buffer.byteLength(name) > cfg.limits.appNameMaxBytes || !name.isWellFormed()) {
        throw new UsageError(`--nome: at most ${cfg.limits.appNameMaxBytes} bytes of well-formed text`)
      }
      const rateRaw = values['rate-por-min']
      if (rateRaw !== undefined && !/^[1-9]\d{0,9}$/.test(rateRaw))
        throw new UsageError('--rate-por-min: expected an integer > 0')
      const org = values.org === undefined ? undefined : orgId(values.org)
      const created = await withOperatorTools(cfg, (t) =>
        t.apps.create(
          { name, sandbox: values.sandbox ?? false, ratePerMin: rateRaw ? Number(rateRaw) : undefined, orgId: org },
          byOperator('pombo app create'),
        ),
      )
      console.log(JSON.stringify(created, null, 2))
      return
    }
    case 'pause':
    case 'resume': {
      const id = appId(positionals[0])
      await withOperatorTools(cfg, (t) => t.apps.setPaused(id, sub === 'pause', byOperator(`pombo app ${sub}`)))
      console.log(JSON.stringify({ id, pausado: sub === 'pause' }))
      return
    }
    case 'plan': {
      const id = appId(positionals[0])
      const plan = positionals[1]
      if (plan !== 'free' && plan !== 'pro') throw new UsageError('plan: expected free or pro')
      await withOperatorTools(cfg, (t) => t.apps.setPlan(id, plan, byOperator('pombo app plan')))
      console.log(JSON.stringify({ id, plano: plan }))
      return
    }
    case 'rotate-key': {
      const id = appId(positionals[0])
      console.log(
        JSON.stringify(
          await withOperatorTools(cfg, (t) => t.apps.rotate(id, values.sandbox, byOperator('pombo app rotate-key'))),
          null,
          2,
        ),
      )
      return
    }
    default:
      throw new UsageError(`unknown app command "${sub ?? ''}"`)
  }
}

async function keyCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { kid: { type: 'string' } } })
  if (sub !== 'revoke') throw new UsageError(`unknown key command "${sub ?? ''}"`)
  const id = appId(positionals[0])
  if (values.kid !== undefined && !/^[a-z0-9]{8}$/.test(values.kid)) throw new UsageError('--kid: expected 8 characters [a-z0-9]')
  const n = await withOperatorTools(cfg, (t) => t.apps.revokeKeys(id, values.kid, byOperator('pombo key revoke')))
  console.log(JSON.stringify({ id, revogadas: n }))
}

/** docs/spec/contract.md: bad input exits non-zero with a one-line reason (the usage is `pombo help`). */
function fail(err: unknown): never {
  if (err instanceof UsageError) console.error(`pombo: ${err.message} (pombo help lists the commands)`)
  else if (
    err instanceof ConfigError ||
    err instanceof WebhookCliError ||
    err instanceof PartitionsCliError ||
    err instanceof ResizeRefused ||
    err instanceof PeopleError ||
    err instanceof ErasureError ||
    err instanceof AuditCliError ||
    err instanceof SimulateError
  )
    console.error(`pombo: ${err.message}`)
  else if (err instanceof ApiError) console.error(`pombo: ${err.texts().erro} ${err.texts().causa}`)
  else console.error(`pombo: ${((err as Error).message ?? String(err)).split('\n')[0]}`)
  process.exit(2)
}

main(process.argv.slice(2)).catch(fail)
