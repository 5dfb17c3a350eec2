// `pombo org create`, `pombo user create`, `pombo user invite` (docs/spec/contract.md): organisations and the people of the
// dashboard. Bad input: one line (PeopleError), exit 2, nothing written.
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { insertOrg } from '../orgs/store'
import { PeopleError, PeopleService } from '../people/service'
import { systemClock } from '../core/time'
import { withOperatorTools } from './operator'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function orgId(v: string | undefined, flag = '--org'): string {
  if (!v || !UUID.test(v)) throw new PeopleError(`${flag}: expected an organisation id (UUID), got "${v ?? ''}"`)
  return v.toLowerCase()
}

export async function orgCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub !== 'create') throw new PeopleError(`unknown org command "${sub ?? ''}" (pombo help lists the commands)`)
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { nome: { type: 'string' }, plan: { type: 'string' } },
  })
  if (positionals.length > 0) throw new PeopleError(`unexpected argument "${positionals[0]}"`)
  const name = values.nome?.trim()
  if (!name) throw new PeopleError('--nome: required and non-empty')
  if (Buffer.byteLength(name) > cfg.limits.appNameMaxBytes || !name.isWellFormed()) {
    throw new PeopleError(`--nome: at most ${cfg.limits.appNameMaxBytes} bytes of well-formed text`)
  }
  const plan = values.plan ?? cfg.defaultPlan
  if (plan !== 'free' && plan !== 'pro') throw new PeopleError('--plan: expected free or pro')
  const org = await withOperatorTools(cfg, (t) => insertOrg(t.db, { name, plan, at: new Date() }))
  console.log(JSON.stringify(org))
}

/** Standard input, whole (the password of `user create --senha-stdin`); one trailing newline is not part of it. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  let n = 0
  for await (const c of process.stdin) {
    n += (c as Buffer).length
    if (n > 64 * 1024) throw new PeopleError('--senha-stdin: standard input is larger than 64 KB')
    chunks.push(c as Buffer)
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}

export async function userCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      org: { type: 'string' },
      operador: { type: 'boolean' },
      'senha-stdin': { type: 'boolean' },
    },
  })
  if (positionals.length > 0) throw new PeopleError(`unexpected argument "${positionals[0]}"`)
  if (!values.email) throw new PeopleError('--email: required')
  switch (sub) {
    case 'create': {
      if (values.operador && values.org !== undefined) throw new PeopleError('--org and --operador: choose one')
      if (!values.operador && values.org === undefined) throw new PeopleError('--org ORG_ID or --operador: one is required')
      if (!values['senha-stdin']) throw new PeopleError('--senha-stdin: required (the password is read from standard input)')
      const org = values.operador ? null : orgId(values.org)
      const password = await readStdin()
      const email = values.email
      const p = await withOperatorTools(cfg, (t) =>
        new PeopleService(t.db, systemClock).create({ email, orgId: org, operator: values.operador === true, password }),
      )
      console.log(JSON.stringify({ id: p.id, email: p.email }))
      return
    }
    case 'invite': {
      if (values.operador || values['senha-stdin']) throw new PeopleError('invite takes --email and --org only')
      const org = orgId(values.org)
      const email = values.email
      const inv = await withOperatorTools(cfg, (t) =>
        new PeopleService(t.db, systemClock, cfg.dashboard.inviteTtlMs).invite(email, org),
      )
      console.log(`${cfg.dashboard.url}/convite/${inv.token}`)
      return
    }
    default:
      throw new PeopleError(`unknown user command "${sub ?? ''}" (pombo help lists the commands)`)
  }
}
