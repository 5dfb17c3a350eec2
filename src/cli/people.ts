// `pombo org create` and `pombo user create | invite | invites | invite cancel | remove | signout`
// (docs/spec/contract.md, docs/dashboard.md): organisations and the people of the dashboard. Bad input: one line
// (PeopleError), exit 2, nothing written.
import { byOperator, record } from '../audit/record'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { type Db, tx } from '../db/pool'
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
  const at = new Date()
  const org = await withOperatorTools(cfg, (t) =>
    tx(t.db, async (c) => {
      const o = await insertOrg(c, { name, plan, at })
      await record(c, { by: byOperator('pombo org create'), action: 'org.criada', orgId: o.id, details: { name, plan } }, at)
      return o
    }),
  )
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
      id: { type: 'string' },
      operador: { type: 'boolean' },
      'senha-stdin': { type: 'boolean' },
    },
  })
  // `user invite cancel …` is the one sub-command with a word after it.
  const cancel = sub === 'invite' && positionals[0] === 'cancel'
  const extra = cancel ? positionals.slice(1) : positionals
  if (extra.length > 0) throw new PeopleError(`unexpected argument "${extra[0]}"`)
  const only = (allowed: string[]): void => {
    const given = Object.keys(values).filter((k) => values[k as keyof typeof values] !== undefined)
    const bad = given.find((k) => !allowed.includes(k))
    if (bad) throw new PeopleError(`--${bad}: not an option of this command`)
  }
  const people = (t: { db: Db }): PeopleService => PeopleService.fromConfig(t.db, systemClock, cfg.dashboard)
  if (cancel) {
    only(['id', 'email', 'org'])
    if ((values.id === undefined) === (values.email === undefined)) {
      throw new PeopleError('invite cancel: --id INVITE_ID, or --email EMAIL [--org ORG_ID]')
    }
    if (values.id !== undefined && values.org !== undefined) throw new PeopleError('--org goes with --email, not --id')
    const id = values.id === undefined ? undefined : inviteId(values.id)
    const org = values.org === undefined ? undefined : orgId(values.org)
    const email = values.email
    const gone = await withOperatorTools(cfg, (t) =>
      people(t).cancelInvites({ id, email, orgId: org }, byOperator('pombo user invite cancel')),
    )
    if (gone.length === 0) throw new PeopleError('no pending invitation matches (used, expired or never made)')
    console.log(JSON.stringify({ cancelados: gone.map((x) => ({ id: x.id, email: x.email })) }))
    return
  }
  switch (sub) {
    case 'create': {
      only(['email', 'org', 'operador', 'senha-stdin'])
      if (!values.email) throw new PeopleError('--email: required')
      if (values.operador && values.org !== undefined) throw new PeopleError('--org and --operador: choose one')
      if (!values.operador && values.org === undefined) throw new PeopleError('--org ORG_ID or --operador: one is required')
      if (!values['senha-stdin']) throw new PeopleError('--senha-stdin: required (the password is read from standard input)')
      const org = values.operador ? null : orgId(values.org)
      const password = await readStdin()
      const email = values.email
      const p = await withOperatorTools(cfg, (t) =>
        people(t).create({ email, orgId: org, operator: values.operador === true, password }, byOperator('pombo user create')),
      )
      console.log(JSON.stringify({ id: p.id, email: p.email }))
      return
    }
    case 'invite': {
      if (values.operador || values['senha-stdin'] || values.id !== undefined)
        throw new PeopleError('invite takes --email and --org only')
      if (!values.email) throw new PeopleError('--email: required')
      const org = orgId(values.org)
      const email = values.email
      const inv = await withOperatorTools(cfg, (t) => people(t).invite(email, org, byOperator('pombo user invite')))
      console.log(`${cfg.dashboard.url}/convite/${inv.token}`)
      return
    }
    case 'invites': {
      only(['org'])
      const org = values.org === undefined ? undefined : orgId(values.org)
      const list = await withOperatorTools(cfg, async (t) => {
        const out = []
        let after: { at: Date; id: string } | null = null
        for (;;) {
          const page = await people(t).invites({ orgId: org, after, limit: 500 })
          out.push(...page)
          const last = page[page.length - 1]
          if (page.length < 500 || !last) return out
          after = { at: last.createdAt, id: last.id }
        }
      })
      for (const i of list) {
        console.log(
          JSON.stringify({
            id: i.id,
            email: i.email,
            org_id: i.orgId,
            criado_em: i.createdAt.toISOString(),
            expira_em: i.expiresAt.toISOString(),
          }),
        )
      }
      return
    }
    case 'remove':
    case 'signout': {
      only(['email'])
      if (!values.email) throw new PeopleError('--email: required')
      const email = values.email
      const out = await withOperatorTools(cfg, async (t) => {
        const p = await people(t).byEmail(email)
        return sub === 'remove'
          ? people(t).remove(p.id, byOperator('pombo user remove'))
          : { person: p, sessions: await people(t).endSessions(p.id, byOperator('pombo user signout')) }
      })
      console.log(JSON.stringify({ id: out.person.id, email: out.person.email, sessoes_encerradas: out.sessions }))
      return
    }
    default:
      throw new PeopleError(`unknown user command "${sub ?? ''}" (pombo help lists the commands)`)
  }
}

function inviteId(v: string): string {
  if (!UUID.test(v)) throw new PeopleError(`--id: expected an invitation id (UUID), got "${v}"`)
  return v.toLowerCase()
}
