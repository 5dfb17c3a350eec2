// The fuzzer's world: one real service (own schema and Redis prefix, through test/helpers/service.ts), the apps it
// fuzzes, a bystander app whose valid traffic runs alongside every case, and a snapshot of what the fuzzed apps
// have in Postgres (to prove a refused request wrote nothing).
import { randomUUID } from 'node:crypto'
import { proof } from '../../src/delivery/proof'
import { PLATFORM_KEY, startService, type TestService } from '../helpers/service'
import { EscapeRecorder } from './escapes'

interface Tap {
  teardown(fn: () => unknown): void
}

export interface FuzzApp {
  id: string
  apiKey: string
  receiptKey: Buffer
}

/** Ids the generators aim at. A is fuzzed on every route; C takes the confirmation changes (so A stays in
 * `consulta` mode and its send reads keep answering); D takes the key rotations (so A's and C's keys stay valid). */
export interface FuzzContext {
  platformKey: string
  a: FuzzApp
  c: FuzzApp
  d: FuzzApp
  /** The bystander: another tenant whose requests must all succeed while A is fuzzed. */
  b: FuzzApp
  playerA: string
  sendA: string
}

export interface FuzzEnv {
  s: TestService
  port: number
  ctx: FuzzContext
  escapes: EscapeRecorder
  bystander: Bystander
  /** What the fuzzed apps (every app but B) hold in Postgres: per table, row count and a digest of the rows. */
  snapshot(): Promise<Record<string, string>>
}

async function makeApp(s: TestService, nome: string): Promise<FuzzApp> {
  const a = await s.createApp({ nome })
  return { id: a.id, apiKey: a.api_key, receiptKey: Buffer.from(a.receipt_key, 'hex') }
}

async function register(s: TestService, app: FuzzApp, identifier: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })
  if (r.status !== 200) throw new Error(`fuzz setup: registration ${r.status} ${r.text}`)
  return r.json.id
}

async function sendTo(s: TestService, app: FuzzApp, player: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'fuzz' }, include_player_ids: [player] },
    headers: { authorization: `Basic ${app.apiKey}` },
  })
  if (r.status !== 200 || !r.json.id) throw new Error(`fuzz setup: send ${r.status} ${r.text}`)
  return r.json.id
}

/**
 * Starts the service for a fuzz run. One writer per group commit (PM_SEND_WRITERS=1 and the like, a legitimate
 * setting) so that a fuzzed request and the bystander's requests queue behind one another and share batches: the
 * case "one tenant's bad job fails the others' batch" is then met on almost every run instead of by chance.
 */
export async function startFuzz(t: Tap): Promise<FuzzEnv> {
  const escapes = new EscapeRecorder()
  t.teardown(() => escapes.stop())
  const s = await startService(t, {
    limits: { ipPerMin: 0, sendWriters: 1, registrationWriters: 1, receiptWriters: 1, exportsPerSec: 1000 },
  })
  const port = s.svc.api?.port as number
  const [a, b, c, d] = [
    await makeApp(s, 'fuzz A'),
    await makeApp(s, 'bystander B'),
    await makeApp(s, 'fuzz C'),
    await makeApp(s, 'fuzz D'),
  ]
  const playerA = await register(s, a, 'fuzz-a-device')
  const sendA = await sendTo(s, a, playerA)
  const playerB = await register(s, b, 'bystander-device')
  const sendB = await sendTo(s, b, playerB)
  const ctx: FuzzContext = { platformKey: PLATFORM_KEY, a, b, c, d, playerA, sendA }

  const tables = await s.sql<{ table_name: string; keyed: boolean }>(
    `SELECT t.table_name, bool_or(c.column_name = 'app_id') AS keyed
       FROM information_schema.tables t JOIN information_schema.columns c USING (table_schema, table_name)
      WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      GROUP BY t.table_name ORDER BY t.table_name`,
  )
  async function snapshot(): Promise<Record<string, string>> {
    const parts: string[] = []
    for (const { table_name: name, keyed } of tables) {
      if (name === 'schema_migrations' || name === 'orgs' || name === 'org_mau') continue
      const where = keyed ? 'WHERE x.app_id <> $1' : name === 'apps' ? 'WHERE x.id <> $1' : 'WHERE $1::uuid IS NOT NULL'
      // An export row is finished by a background job after its 200: only new rows count as writes there.
      const digest = name === 'exports' ? `''` : `md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))`
      parts.push(`SELECT '${name}' AS t, count(*)::text || ':' || ${digest} AS v FROM "${name}" x ${where}`)
    }
    const rows = await s.sql<{ t: string; v: string }>(parts.join(' UNION ALL '), [b.id])
    return Object.fromEntries(rows.map((r) => [r.t, r.v]))
  }

  return { s, port, ctx, escapes, bystander: new Bystander(s, b, playerB, sendB), snapshot }
}

export interface BystanderFailure {
  op: string
  detail: string
}

/**
 * Valid traffic of app B: registrations, sends and receipts, launched alongside a fuzzed request. Every one must
 * answer 200 and leave its row behind.
 */
export class Bystander {
  #n = 0

  constructor(
    private readonly s: TestService,
    private readonly b: FuzzApp,
    private readonly player: string,
    private readonly send: string,
  ) {}

  /** Starts `n` requests now (a mix of the three kinds); resolves with what went wrong, once all are answered. */
  async burst(n = 6): Promise<BystanderFailure[]> {
    const ops: Array<Promise<BystanderFailure | null>> = []
    for (let i = 0; i < n; i++) {
      const k = this.#n++
      const op = [() => this.#register(k), () => this.#send(k), () => this.#receipt()][
        k % 3
      ] as () => Promise<BystanderFailure | null>
      // Staggered over a few milliseconds, so that some of them queue behind the fuzzed request's job and share
      // its batch whatever the timing of its parsing.
      ops.push(i < 3 ? op() : new Promise((r) => setTimeout(r, 2 * i)).then(op))
    }
    return (await Promise.all(ops)).filter((f): f is BystanderFailure => f !== null)
  }

  async #register(k: number): Promise<BystanderFailure | null> {
    const identifier = `bystander-${k}`
    const r = await this.s.call('POST', '/api/v1/players', {
      body: { app_id: this.b.id, device_type: 1, identifier, tags: { k } },
    })
    if (r.status !== 200) return { op: `POST /api/v1/players (${identifier})`, detail: `${r.status} ${r.text.slice(0, 200)}` }
    const rows = await this.s.sql('SELECT 1 FROM devices WHERE app_id = $1 AND id = $2 AND identifier = $3', [
      this.b.id,
      r.json.id,
      identifier,
    ])
    return rows.length === 1
      ? null
      : { op: `POST /api/v1/players (${identifier})`, detail: `200 but no devices row for ${r.json.id}` }
  }

  async #send(k: number): Promise<BystanderFailure | null> {
    const r = await this.s.call('POST', '/api/v1/notifications', {
      body: { app_id: this.b.id, contents: { en: `bystander ${k}` }, include_player_ids: [this.player] },
      headers: { authorization: `Basic ${this.b.apiKey}` },
    })
    if (r.status !== 200 || !r.json?.id)
      return { op: 'POST /api/v1/notifications', detail: `${r.status} ${r.text.slice(0, 200)}` }
    const rows = await this.s.sql('SELECT 1 FROM sends WHERE app_id = $1 AND id = $2', [this.b.id, r.json.id])
    return rows.length === 1 ? null : { op: 'POST /api/v1/notifications', detail: `200 but no sends row for ${r.json.id}` }
  }

  async #receipt(): Promise<BystanderFailure | null> {
    // The route only needs the send to exist for the app: a fresh device id makes a fresh receipt every time.
    const device = randomUUID()
    const body = {
      app_id: this.b.id,
      notification_id: this.send,
      player_id: device,
      rcpt: proof(this.b.receiptKey, this.send, device),
    }
    const r = await this.s.call('POST', '/api/v1/receipts', { body })
    if (r.status !== 200 || r.json?.ok !== true)
      return { op: 'POST /api/v1/receipts', detail: `${r.status} ${r.text.slice(0, 200)}` }
    const rows = await this.s.sql('SELECT 1 FROM receipts WHERE app_id = $1 AND send_id = $2 AND device_id = $3', [
      this.b.id,
      this.send,
      device,
    ])
    return rows.length >= 1 ? null : { op: 'POST /api/v1/receipts', detail: `200 but no receipts row for device ${device}` }
  }
}
