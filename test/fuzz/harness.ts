// The fuzzer's world: one real service (own schema and Redis prefix, through test/helpers/service.ts), the apps it
// fuzzes, a bystander app whose valid traffic runs alongside every case, and a snapshot of what the fuzzed apps
// have in Postgres (to prove a refused request wrote nothing).
import { randomUUID } from 'node:crypto'
import { loadUws } from '../../src/http/uws'
import { proof } from '../../src/message/proof'
import { CARD } from '../helpers/inapp'
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

/** A campaign state the fuzzer can ask for, made fresh for one case (see `FuzzEnv.freshCampaign`). */
export type FreshState = 'rascunho' | 'ativa' | 'encerrada'

/** Ids the generators aim at. A is fuzzed on every route; C takes the confirmation changes (so A stays in
 * `consulta` mode and its send reads keep answering); D takes the key rotations (so A's and C's keys stay valid);
 * E takes the in-app campaign management and the in-app config (so that A's package, polled by the device routes,
 * never changes: a poll then writes nothing, and a refused case's digest is not disturbed by a `servidos` row
 * written in the background after an earlier 200). */
export interface FuzzContext {
  platformKey: string
  a: FuzzApp
  c: FuzzApp
  d: FuzzApp
  e: FuzzApp
  /** The bystander: another tenant whose requests must all succeed while A is fuzzed. */
  b: FuzzApp
  playerA: string
  sendA: string
  /** A's in-app side: one active campaign (no cap on occurrences) served to one device kept for in-app only. */
  inappA: InappTarget
  /** An active campaign of E (reads, PATCH, alcance, funil). */
  campaignE: string
}

export interface InappTarget {
  campaign: string
  player: string
  /** The campaign's proof for the player, as a real `GET /api/v1/inapp/pending` package gave it. */
  prova: string
  /** That package's ETag (a poll with it in If-None-Match gets a 304 until the 6-hour proof epoch turns). */
  etag: string
}

export interface FuzzEnv {
  s: TestService
  port: number
  /** The uWebSockets.js build the service loaded (it runs in this process): some answers are that build's own. */
  build: string
  ctx: FuzzContext
  escapes: EscapeRecorder
  bystander: Bystander
  /** What the fuzzed apps (every app but B) hold in Postgres: per table, row count and a digest of the rows. */
  snapshot(): Promise<Record<string, string>>
  /** A new campaign of E in that state (made through the real routes, before the case's first snapshot). */
  freshCampaign(state: FreshState): Promise<string>
}

/** Tables the digest must cover (a refused in-app request writes none of them); checked at start. */
export const INAPP_TABLES = ['inapp_campaigns', 'inapp_served', 'inapp_events', 'inapp_reactivations']

async function makeApp(s: TestService, nome: string): Promise<FuzzApp> {
  const a = await s.createApp({ nome })
  return { id: a.id, apiKey: a.api_key, receiptKey: Buffer.from(a.receipt_key, 'hex') }
}

async function register(s: TestService, app: FuzzApp, identifier: string): Promise<string> {
  const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier } })
  if (r.status !== 200) throw new Error(`fuzz setup: registration ${r.status} ${r.text}`)
  return r.json.id
}

async function inappCall(s: TestService, app: FuzzApp, method: string, path: string, body?: unknown) {
  return s.call(method, path, { body, headers: { authorization: `Basic ${app.apiKey}` } })
}

/** Switches the app's in-app channel on and creates a campaign of CARD (`regras` as given), published or not. */
async function inappCampaign(s: TestService, app: FuzzApp, state: FreshState | 'none', regras?: object): Promise<string> {
  const r = await inappCall(s, app, 'POST', '/api/v1/in_app_messages', {
    app_id: app.id,
    nome: 'fuzz campaign',
    conteudo: CARD,
    ...(regras ? { regras } : {}),
  })
  if (r.status !== 201) throw new Error(`fuzz setup: campaign ${r.status} ${r.text}`)
  const id = r.json.id as string
  const ops = state === 'ativa' ? ['publicar'] : state === 'encerrada' ? ['publicar', 'encerrar'] : []
  for (const op of ops) {
    const o = await inappCall(s, app, 'POST', `/api/v1/in_app_messages/${id}/${op}?app_id=${app.id}`)
    if (o.status !== 200) throw new Error(`fuzz setup: ${op} ${o.status} ${o.text}`)
  }
  return id
}

async function inappOn(s: TestService, app: FuzzApp): Promise<void> {
  const r = await inappCall(s, app, 'PUT', '/api/v1/in_app_messages/config', { app_id: app.id, inapp_ativo: true })
  if (r.status !== 200) throw new Error(`fuzz setup: in-app config ${r.status} ${r.text}`)
}

/**
 * An app's in-app target: channel on, an active campaign with no cap on occurrences, a device of its own, and the
 * proof and ETag of a real package; returns once the package's `servidos` row is written (the only write a poll
 * makes, once per campaign and device: later polls of this device write nothing).
 */
async function inappTarget(s: TestService, app: FuzzApp, identifier: string): Promise<InappTarget> {
  await inappOn(s, app)
  const campaign = await inappCampaign(s, app, 'ativa', { cap_total: 0 })
  const player = await register(s, app, identifier)
  const r = await s.call('GET', `/api/v1/inapp/pending?app_id=${app.id}&player_id=${player}&schema=0.6`)
  const item = r.json?.messages?.find((m: { campanha_id: string }) => m.campanha_id === campaign)
  if (r.status !== 200 || !item?.prova) throw new Error(`fuzz setup: pending ${r.status} ${r.text}`)
  for (let i = 0; ; i++) {
    const rows = await s.sql('SELECT 1 FROM inapp_served WHERE campanha_id = $1 AND device_id = $2', [campaign, player])
    if (rows.length === 1) break
    if (i > 200) throw new Error('fuzz setup: the servidos row of the first package was never written')
    await new Promise((res) => setTimeout(res, 10))
  }
  return { campaign, player, prova: item.prova, etag: r.json.etag }
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
  const [a, b, c, d, e] = [
    await makeApp(s, 'fuzz A'),
    await makeApp(s, 'bystander B'),
    await makeApp(s, 'fuzz C'),
    await makeApp(s, 'fuzz D'),
    await makeApp(s, 'fuzz E'),
  ]
  const playerA = await register(s, a, 'fuzz-a-device')
  const sendA = await sendTo(s, a, playerA)
  const playerB = await register(s, b, 'bystander-device')
  const sendB = await sendTo(s, b, playerB)
  const inappA = await inappTarget(s, a, 'fuzz-a-inapp-device')
  const inappB = await inappTarget(s, b, 'bystander-inapp-device')
  await inappOn(s, e)
  // Devices for alcance/funil to count.
  for (const k of [1, 2]) await register(s, e, `fuzz-e-device-${k}`)
  const campaignE = await inappCampaign(s, e, 'ativa')
  const ctx: FuzzContext = { platformKey: PLATFORM_KEY, a, b, c, d, e, playerA, sendA, inappA, campaignE }

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
  const covered = new Set(tables.filter((x) => x.keyed).map((x) => x.table_name))
  for (const name of INAPP_TABLES)
    if (!covered.has(name)) throw new Error(`fuzz setup: ${name} is not in the row digest (no app_id column?)`)

  return {
    s,
    port,
    build: loadUws().choice.build,
    ctx,
    escapes,
    bystander: new Bystander(s, b, playerB, sendB, inappB),
    snapshot,
    freshCampaign: (state) => inappCampaign(s, e, state),
  }
}

export interface BystanderFailure {
  op: string
  detail: string
}

/**
 * Valid traffic of app B: registrations, sends, receipts, in-app polls and in-app event batches, launched alongside
 * a fuzzed request. Every one must answer 200 and leave its row behind (a poll: its campaign in the package).
 */
export class Bystander {
  #n = 0

  constructor(
    private readonly s: TestService,
    private readonly b: FuzzApp,
    private readonly player: string,
    private readonly send: string,
    private readonly inapp: InappTarget,
  ) {}

  /** Starts `n` requests now (a mix of the five kinds); resolves with what went wrong, once all are answered. */
  async burst(n = 6): Promise<BystanderFailure[]> {
    const ops: Array<Promise<BystanderFailure | null>> = []
    for (let i = 0; i < n; i++) {
      const k = this.#n++
      const op = [
        () => this.#register(k),
        () => this.#send(k),
        () => this.#receipt(),
        () => this.#pending(),
        () => this.#events(k),
      ][k % 5] as () => Promise<BystanderFailure | null>
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

  async #pending(): Promise<BystanderFailure | null> {
    const { campaign, player } = this.inapp
    const r = await this.s.call('GET', `/api/v1/inapp/pending?app_id=${this.b.id}&player_id=${player}&schema=0.6`)
    const op = 'GET /api/v1/inapp/pending'
    if (r.status !== 200) return { op, detail: `${r.status} ${r.text.slice(0, 200)}` }
    const served = r.json?.messages?.some((m: { campanha_id?: string }) => m.campanha_id === campaign)
    return served ? null : { op, detail: `200 without campaign ${campaign}: ${r.text.slice(0, 200)}` }
  }

  async #events(k: number): Promise<BystanderFailure | null> {
    // A fresh occurrence while there are some left (3 events x 500 occurrences), then duplicates: both are a 200.
    const { campaign, player, prova } = this.inapp
    const evento = (['impressao', 'clique', 'fechou'] as const)[Math.floor(k / 500) % 3] as string
    const n = 1 + (k % 500)
    const item = { campanha_id: campaign, prova, evento, ocorrencia_n: n, em: new Date().toISOString() }
    const r = await this.s.call('POST', '/api/v1/inapp/eventos', {
      body: { app_id: this.b.id, player_id: player, eventos: [item] },
    })
    const op = `POST /api/v1/inapp/eventos (${evento} ${n})`
    const verdict = r.json?.resultados?.[0]
    if (r.status !== 200 || (verdict !== 'aceito' && verdict !== 'duplicado'))
      return { op, detail: `${r.status} ${r.text.slice(0, 200)}` }
    const code = { impressao: 1, clique: 2, fechou: 3 }[evento]
    const rows = await this.s.sql(
      'SELECT 1 FROM inapp_events WHERE app_id = $1 AND campanha_id = $2 AND device_id = $3 AND evento = $4 AND ocorrencia_n = $5',
      [this.b.id, campaign, player, code, n],
    )
    return rows.length === 1 ? null : { op, detail: `200 ${verdict} but no inapp_events row` }
  }
}
