// One contract for requests: every request schema of docs/openapi.yaml and the validator of its route answer the same
// on the same body. For each schema, hand-written valid bodies (the least the route takes, and every field) and the
// bodies derived from them (test/helpers/schema-cases.ts: a field missing, of each JSON type, at and past its
// bounds, an unknown enum value or format) go to both: ajv with the schema, and the route's own checks in the order
// the route runs them (the JSON guard, the app check where the route makes it, the validate.ts function). Both
// accept, or both refuse.
//
// A few rules cannot be written in JSON Schema (sizes in UTF-8 bytes, dates relative to now, the rendered payload's
// size, content rules of a campaign's blocks): they are listed per schema under `beyond`, each a body the validator
// refuses while the schema accepts it, so the list says exactly what a client can only learn from the answer.
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import fc from 'fast-check'
import pino from 'pino'
import t from 'tap'
import { Auth } from '../../src/apps/auth'
import type { AppDirectory } from '../../src/apps/directory'
import type { KeyRecord } from '../../src/apps/store'
import { parseCreateApp, parseRotate } from '../../src/apps/validate'
import { DEFAULT_LIMITS, loadConfig } from '../../src/core/config'
import { parseChange } from '../../src/confirmations/validate'
import { PROFILE_FIELDS, parseRegistration, parseUpdate } from '../../src/devices/validate'
import { ApiError } from '../../src/core/errors'
import { loadOpenApi } from '../../src/http/openapi'
import type { Request } from '../../src/http/request'
import type { Router } from '../../src/http/router'
import { parseEvents } from '../../src/inapp/events-validate'
import { inappRoutes } from '../../src/inapp/routes'
import type { CampaignService } from '../../src/inapp/service'
import { type CampaignDef, checkDates, parseCampaign } from '../../src/inapp/validate'
import { guardBody } from '../../src/core/json-guard'
import { parseReceipt } from '../../src/receipts/validate'
import { parseSend } from '../../src/sends/validate'
import { cases, type Json, resolve, type Schema } from '../helpers/schema-cases'

type Body = Record<string, Json>

const NOW = Date.parse('2030-01-31T12:00:00Z')
const APP = '0e7a3f9c-4b1d-4c2e-9f8a-1d2c3b4a5e6f'
const UUID = '7c9e6679-7425-40de-944b-e07fc1f90ae7'
const lim = DEFAULT_LIMITS
const cfg = loadConfig({})

// ---- the routes' checks, in the order each route runs them ----

/** req.json(): a value that cannot be stored exactly is refused (or dropped, for the best-effort fields). */
function json(body: Body, lenient?: ReadonlySet<string>): Body {
  const copy = structuredClone(body)
  const problem = guardBody(copy, lim.jsonMaxDepth, lenient)
  if (problem) throw new ApiError('INVALID_FIELD', problem)
  return copy
}

const KEY: KeyRecord = { kid: 'abcd1234', appId: APP, hash: Buffer.alloc(32), expiresAtMs: null, revoked: false }
const dir = { app: async (id: string) => ({ id, paused: false }) } as unknown as AppDirectory
const auth = new Auth(dir, null, pino({ level: 'silent' }), () => NOW)
const fakeReq = (body: Body) => ({
  json: async () => body,
  header: () => undefined,
  ip: '127.0.0.1',
  method: 'PUT',
  path: '/',
  id: 'r',
})
/** Auth#appOf: `app_id` present, a UUID, the key's app (a server route's app check, before its validator). */
const appOf = (body: Body) => auth.appOf(fakeReq(body) as unknown as Request, KEY, body.app_id, 'corpo')

/** PUT /api/v1/in_app_messages/config checks its body inline: the real handler runs, the service is a stub. */
function configRoute(): (body: Body) => Promise<unknown> {
  const handlers = new Map<string, (req: Request) => Promise<unknown>>()
  const add = (m: string) => (path: string, _o: unknown, h: (req: Request) => Promise<unknown>) => handlers.set(`${m} ${path}`, h)
  const router = { get: add('GET'), post: add('POST'), put: add('PUT'), patch: add('PATCH'), del: add('DELETE') }
  const campaigns = { setConfig: async () => ({ inapp_ativo: false, inapp_cap_horas: 6 }) }
  const routeAuth = { appKey: async () => KEY, appOf: auth.appOf.bind(auth) }
  inappRoutes(router as unknown as Router, {
    cfg,
    auth: routeAuth as unknown as Auth,
    campaigns: campaigns as unknown as CampaignService,
  })
  const h = handlers.get('PUT /api/v1/in_app_messages/config') as (req: Request) => Promise<unknown>
  return (body) => h(fakeReq(json(body)) as unknown as Request)
}

const STORED: CampaignDef = parseCampaign({ conteudo: { pt: { titulo: 'Guardada' } } }).def

// ---- rules beyond JSON Schema, by the refusal they give ----

const BYTES = 'a size in bytes of UTF-8'
const URL_PARSER = 'a URL the WHATWG parser refuses'
const invalidField = (err: ApiError) =>
  err.key === 'INVALID_FIELD' ? (err.params as unknown as { campo: string; motivo: string }) : null
/** `excede N bytes`: JSON Schema counts characters, never bytes. */
const bytesRule = (err: ApiError) => (invalidField(err)?.motivo.startsWith('excede') ? BYTES : null)

const SEND_AFTER_FAR = 'send_after at most 28 days ahead'
const NO_SUCH_DAY = 'a calendar day that does not exist'
const PAYLOAD = 'the rendered payload within its size'
const EM_WINDOW = 'em from 7 days past to 5 minutes ahead'
const CONTENT = 'the card content rules (conteudo blocks, estilo)'
/** A campaign's 422: beyond the schema when every problem is one of these rules. */
function campaignRule(err: ApiError): string | null {
  if (err.key !== 'INAPP_CAMPAIGN_INVALID') return null
  const rules = (err.params as unknown as { problemas: Array<{ campo: string; motivo: string }> }).problemas.map(
    ({ campo, motivo }) => {
      if (/^conteudo\.[a-z]{2,3}(-[A-Za-z0-9]{2,8})*(\.|$)/.test(campo) || /^estilo(\.|$)/.test(campo)) return CONTENT
      if (campo === 'termina_em' && motivo.startsWith('deve ser posterior')) return 'termina_em after inicia_em'
      if (campo === 'gatilho.valor' && motivo.includes('casas decimais')) return 'at most 6 decimals'
      if (motivo.startsWith('excede')) return BYTES
      return null
    },
  )
  return rules.every((r) => r === rules[0]) ? (rules[0] ?? null) : null
}

// ---- valid bodies per schema ----

const CONTEUDO = {
  pt: { titulo: 'Olá', corpo: 'Uma mensagem', botao: { texto: 'Ver', acao: { tipo: 'dismiss' } } },
  en: { titulo: 'Hi' },
}

interface Contract {
  /** The operation and the schema's place in docs/openapi.yaml. */
  name: string
  pointer: string
  /** The route's checks: resolves when the body passes them, throws the route's ApiError when it does not. */
  door: (body: Body) => unknown
  valid: Body[]
  /** More bodies to ask both about (rules on values the walk does not derive). */
  extra?: Body[]
  /** Bodies the validator refuses for a rule JSON Schema cannot state (the schema accepts them). */
  beyond?: Array<[string, Body]>
  /**
   * Which of those rules a refusal is (null: none of them). A derived body the schema accepts and the route refuses
   * for one of them is counted as beyond the schema, not as a disagreement.
   */
  beyondRule?: (err: ApiError) => string | null
}

const opSchema = (path: string, method: string) =>
  `#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/requestBody/content/application~1json/schema`

const CONTRACTS: Contract[] = [
  {
    name: 'POST /api/v1/apps (AppCreate)',
    pointer: opSchema('/api/v1/apps', 'post'),
    door: (b) => parseCreateApp(json(b), lim.appNameMaxBytes),
    valid: [{ nome: 'Loja' }, { nome: 'Loja', rate_por_min: 1, sandbox: true }, { nome: ' Loja ', rate_por_min: 2_147_483_647 }],
    extra: [{ nome: '\t\n ' }, { nome: 'x'.repeat(200) }, { nome: 'x', rate_por_min: 2_147_483_648 }],
    beyond: [[BYTES, { nome: 'ç'.repeat(101) }]],
    beyondRule: bytesRule,
  },
  {
    name: 'POST /api/v1/apps/{id}/rotate_key',
    pointer: opSchema('/api/v1/apps/{id}/rotate_key', 'post'),
    door: (b) => parseRotate(json(b)),
    valid: [{}, { sandbox: false }],
  },
  {
    name: 'POST /api/v1/players (DeviceRegistration)',
    pointer: opSchema('/api/v1/players', 'post'),
    door: (b) => parseRegistration(json(b, PROFILE_FIELDS), lim),
    valid: [
      { app_id: APP, device_type: 1, identifier: 'token-1' },
      {
        app_id: APP,
        device_type: 0,
        identifier: 'token-2',
        external_user_id: 'pessoa-1',
        app_version: '1.2.3',
        game_version: '1.2',
        device_model: 'Pixel 8',
        tags: { nivel: 3 },
        language: 'pt',
        timezone: -10_800,
        transporte: 'apns',
        device_os: 'Android 14',
        fabricante: 'Google',
        sdk_versao: '0.6.0',
        timezone_id: 'America/Sao_Paulo',
        pais: 'BR',
        net_type: 'wifi',
        carrier: 'Vivo',
        standby_bucket: 'active',
        instalacao_id: 'inst-1',
        rooted: false,
        bateria_irrestrita: true,
        sessoes: 12,
        notif_permissoes: 3,
      },
    ],
    extra: [
      { app_id: APP, device_type: 1, identifier: 'x'.repeat(194), language: 'x'.repeat(32), external_user_id: 'x'.repeat(128) },
      { app_id: APP, device_type: 1, identifier: 't', sessoes: -1, notif_permissoes: 2_147_483_648, rooted: 'sim', device_os: 7 },
    ],
    beyond: [
      [BYTES, { app_id: APP, device_type: 1, identifier: 'ç'.repeat(98) }],
      [BYTES, { app_id: APP, device_type: 1, identifier: 't', external_user_id: 'ç'.repeat(65) }],
      [BYTES, { app_id: APP, device_type: 1, identifier: 't', language: 'ç'.repeat(17) }],
      [BYTES, { app_id: APP, device_type: 1, identifier: 't', tags: { a: 'x'.repeat(2048) } }],
    ],
    beyondRule: bytesRule,
  },
  {
    name: 'PUT /api/v1/players/{player_id} (DeviceUpdate)',
    pointer: opSchema('/api/v1/players/{player_id}', 'put'),
    door: (b) => parseUpdate(json(b), lim),
    valid: [
      { app_id: APP },
      { app_id: APP, external_user_id: null },
      { app_id: APP, external_user_id: 'pessoa-1', tags: { a: 1 }, app_version: '2.0', transporte: 'fcm' },
    ],
    beyond: [
      [BYTES, { app_id: APP, external_user_id: 'ç'.repeat(65) }],
      [BYTES, { app_id: APP, tags: { a: 'x'.repeat(2048) } }],
    ],
    beyondRule: bytesRule,
  },
  {
    name: 'POST /api/v1/notifications (SendRequest)',
    pointer: opSchema('/api/v1/notifications', 'post'),
    door: async (b) => {
      const body = json(b)
      await appOf(body)
      return parseSend(body, {}, NOW, lim)
    },
    valid: [
      { app_id: APP, contents: { en: 'Olá' }, include_player_ids: [UUID] },
      { app_id: APP, contents: { pt: 'Olá' }, include_external_user_ids: ['pessoa-1'] },
      {
        app_id: APP,
        contents: { en: 'Hello', pt: 'Olá' },
        headings: { en: 'Title' },
        subtitle: { en: 'Sub' },
        included_segments: ['Subscribed Users', 'Active Users'],
        isIos: true,
        isAndroid: false,
        isAnyWeb: true,
        big_picture: 'https://exemplo.com/a.png',
        large_icon: 'http://exemplo.com/b.png',
        small_icon: 'ic_stat',
        android_channel_id: 'promo',
        android_accent_color: '#FF00aa',
        ios_sound: 'ping.caf',
        android_sound: 'ping',
        ios_attachments: { foto: 'https://exemplo.com/c.jpg' },
        content_available: true,
        mutable_content: false,
        name: 'campanha',
        external_id: 'ext-1',
        idempotency_key: 'idem-1',
        data: { pedido: 42, aps_meta: 'livre' },
        url: 'https://exemplo.com',
        app_url: 'app://x',
        web_url: 'https://exemplo.com/web',
        send_after: '2030-02-01T12:00:00-03:00',
        ttl: 3600,
        priority: 'marketing',
        collapse_id: 'placar',
        channel_for_external_user_ids: 'push',
        web_buttons: [{ id: 'b' }],
      },
    ],
    extra: [
      ...['pm_x', 'pmx_y', 'from', 'message_type', 'gcm.n', 'google.c', 'aps', 'aps.alert', 'apsx', 'PM_x', 'fromx'].map(
        (k): Body => ({ app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], data: { [k]: 1 } }),
      ),
      ...['2030-02-01 12:00:00 GMT-0300', '2030-02-01T12:00-03', '2030-02-01T12:00:00+0300', '2030-02-01T12:00:00'].map(
        (s): Body => ({ app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], send_after: s }),
      ),
      { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], include_external_user_ids: [] },
      { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], included_segments: null },
      { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], filters: [] },
      { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], custom_data: null },
    ],
    beyond: [
      [SEND_AFTER_FAR, { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], send_after: '2030-12-01T00:00:00Z' }],
      [BYTES, { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], collapse_id: 'ç'.repeat(33) }],
      [PAYLOAD, { app_id: APP, contents: { en: 'x'.repeat(4000) }, include_player_ids: [UUID] }],
      [NO_SUCH_DAY, { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], send_after: '2030-02-30T12:00:00Z' }],
      [
        URL_PARSER,
        { app_id: APP, contents: { en: 'x' }, include_player_ids: [UUID], big_picture: 'https://exemplo.com:99999/a.png' },
      ],
    ],
    beyondRule: (err) => {
      if (err.key === 'SEND_AFTER_TOO_FAR') return SEND_AFTER_FAR
      if (err.key === 'PAYLOAD_TOO_LARGE') return PAYLOAD
      if (err.key === 'INVALID_MEDIA_URL' || err.key === 'ATTACHMENT_NOT_HTTPS') return URL_PARSER
      if (invalidField(err)?.campo === 'send_after') return NO_SUCH_DAY
      return bytesRule(err)
    },
  },
  {
    name: 'POST /api/v1/receipts (Receipt)',
    pointer: opSchema('/api/v1/receipts', 'post'),
    door: (b) => parseReceipt(json(b), lim.rcptMaxChars),
    valid: [
      { app_id: APP, notification_id: UUID, player_id: UUID, rcpt: 'p'.repeat(32) },
      { app_id: APP, notification_id: UUID, player_id: UUID, rcpt: 'x', evento: 'clique' },
    ],
  },
  {
    name: 'PUT /api/v1/confirmacoes (ConfirmationChange)',
    pointer: opSchema('/api/v1/confirmacoes', 'put'),
    door: async (b) => {
      const body = json(b)
      await appOf(body)
      return parseChange(body)
    },
    valid: [
      { app_id: APP },
      { app_id: APP, modo: 'webhook', url: 'https://exemplo.com/hook' },
      { app_id: APP, modo: 'consulta' },
    ],
    extra: [
      'https://user:pw@exemplo.com/h',
      'https://user@exemplo.com/h',
      'HTTPS://exemplo.com',
      `https://exemplo.com/${'a'.repeat(2100)}`,
      // texts the URL parser would repair into https://exemplo.com/: both sides refuse them as written
      'https:exemplo.com',
      'https:/exemplo.com',
      'https:\\\\exemplo.com',
      'https://@exemplo.com',
      'https://exemplo.com/a b',
    ].map((url): Body => ({ app_id: APP, url })),
    beyond: [[URL_PARSER, { app_id: APP, url: 'https://exemplo.com:99999/' }]],
    beyondRule: (err) => (err.key === 'WEBHOOK_URL_NOT_HTTPS' ? URL_PARSER : null),
  },
  {
    name: 'PUT /api/v1/in_app_messages/config (InappConfigChange)',
    pointer: opSchema('/api/v1/in_app_messages/config', 'put'),
    door: configRoute(),
    valid: [{ app_id: APP }, { app_id: APP, inapp_ativo: true, inapp_cap_horas: 0 }, { app_id: APP, inapp_cap_horas: 168 }],
  },
  {
    name: 'POST /api/v1/in_app_messages (CampaignCreate)',
    pointer: opSchema('/api/v1/in_app_messages', 'post'),
    door: async (b) => {
      const body = json(b)
      await appOf(body)
      return parseCampaign(body, undefined, lim)
    },
    valid: [
      { app_id: APP, conteudo: { pt: { titulo: 'Olá' } } },
      {
        app_id: APP,
        nome: 'Boas-vindas',
        formato: 'banner_top',
        alvo_tipo: 'player_ids',
        alvo: [UUID],
        conteudo: CONTEUDO,
        estilo: { fundo: '#ffffff', raio: 8 },
        gatilho: { tipo: 'evento', chave: 'nivel', comparador: 'maior', valor: 3, atraso_ms: 0 },
        regras: { cap_total: 0, cooldown_h: 24, fechar_apos_ms: 600_000, prioridade: 100 },
        inicia_em: '2030-02-01T00:00:00Z',
        termina_em: '2030-03-01T00:00:00-03:00',
      },
      { app_id: APP, conteudo: CONTEUDO, gatilho: { tipo: 'sessao_duracao', segundos: 60 }, inicia_em: null, termina_em: null },
      {
        app_id: APP,
        conteudo: CONTEUDO,
        alvo_tipo: 'external_ids',
        alvo: ['pessoa-1'],
        gatilho: { tipo: 'inatividade', horas: 48 },
      },
    ],
    beyond: [
      [CONTENT, { app_id: APP, conteudo: { pt: { titulo: 'x'.repeat(81) } } }],
      [
        CONTENT,
        { app_id: APP, conteudo: { pt: { titulo: 'x' } }, estilo: { fechar: { mostrar: false } }, formato: 'banner_top' },
      ],
      [
        'termina_em after inicia_em',
        { app_id: APP, conteudo: { pt: { titulo: 'x' } }, inicia_em: '2030-02-01T00:00:00Z', termina_em: '2030-01-01T00:00:00Z' },
      ],
      [
        'at most 6 decimals',
        {
          app_id: APP,
          conteudo: { pt: { titulo: 'x' } },
          gatilho: { tipo: 'evento', chave: 'k', comparador: 'igual', valor: 0.1234567 },
        },
      ],
      [BYTES, { app_id: APP, conteudo: { pt: { titulo: 'x' } }, alvo_tipo: 'external_ids', alvo: ['ç'.repeat(65)] }],
    ],
    beyondRule: campaignRule,
  },
  {
    name: 'PATCH /api/v1/in_app_messages/{campaign_id} (CampaignFields)',
    pointer: opSchema('/api/v1/in_app_messages/{campaign_id}', 'patch'),
    door: async (b) => {
      const body = json(b)
      await appOf(body)
      checkDates(body)
      return parseCampaign(body, STORED, lim)
    },
    valid: [{ app_id: APP }, { app_id: APP, nome: 'Outro nome', formato: 'modal', inicia_em: null }],
    beyondRule: campaignRule,
  },
  {
    name: 'POST /api/v1/inapp/eventos (InappEvents)',
    pointer: opSchema('/api/v1/inapp/eventos', 'post'),
    door: (b) =>
      parseEvents(json(b), NOW, {
        batchMax: lim.inappEventsBatchMax,
        pastMs: lim.inappEventPastMs,
        futureMs: lim.inappEventFutureMs,
        occurrenceMax: lim.inappOccurrenceMax,
      }),
    valid: [
      {
        app_id: APP,
        player_id: UUID,
        eventos: [
          { campanha_id: UUID, prova: 'p'.repeat(32), evento: 'impressao', ocorrencia_n: 1, em: '2030-01-31T11:59:00Z' },
          { campanha_id: UUID, prova: 'q', evento: 'fechou', ocorrencia_n: 500, em: '2030-01-31T09:00:00-03:00' },
        ],
      },
    ],
    beyondRule: (err) => (err.key === 'INAPP_EVENT_TIME_OUTSIDE' ? EM_WINDOW : null),
    beyond: [
      [
        EM_WINDOW,
        {
          app_id: APP,
          player_id: UUID,
          eventos: [{ campanha_id: UUID, prova: 'p', evento: 'clique', ocorrencia_n: 1, em: '2030-01-01T00:00:00Z' }],
        },
      ],
      [
        EM_WINDOW,
        {
          app_id: APP,
          player_id: UUID,
          eventos: [{ campanha_id: UUID, prova: 'p', evento: 'clique', ocorrencia_n: 1, em: '2030-01-31T12:06:00Z' }],
        },
      ],
    ],
  },
]

// ---- the check ----

const doc = loadOpenApi() as Schema
const ajv = new Ajv2020({ strict: false, allErrors: false })
addFormats(ajv)
ajv.addSchema({ ...doc, $id: 'openapi.json' })

interface Verdict {
  ok: boolean
  why: string
  /** The rule beyond the schema this refusal is, if any. */
  beyond: string | null
}

async function doorVerdict(c: Contract, body: Body): Promise<Verdict> {
  try {
    await c.door(body)
    return { ok: true, why: '', beyond: null }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    return { ok: false, why: `${err.status} ${err.texts().erro}`, beyond: c.beyondRule?.(err) ?? null }
  }
}

const show = (v: unknown) => {
  const s = JSON.stringify(v)
  return s.length > 160 ? `${s.slice(0, 160)}…` : s
}

t.test('eleven request schemas, each checked here', async (t) => {
  const described: string[] = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(item)) if (op.requestBody) described.push(opSchema(path, method))
  }
  t.same(described.sort(), CONTRACTS.map((c) => c.pointer).sort(), 'every operation with a request body has its contract here')
  t.equal(CONTRACTS.length, 11)
})

for (const c of CONTRACTS) {
  t.test(c.name, async (t) => {
    const validate = ajv.getSchema(`openapi.json${c.pointer}`)
    if (!validate) throw new Error(`no schema at ${c.pointer}`)
    const schema = resolve(doc, resolve(doc, { $ref: c.pointer }))
    for (const body of c.valid) {
      t.ok(validate(body), `valid example passes the schema: ${show(body)} ${ajv.errorsText(validate.errors)}`)
      const d = await doorVerdict(c, body)
      t.ok(d.ok, `valid example passes the route: ${show(body)} ${d.why}`)
    }
    for (const [rule, body] of c.beyond ?? []) {
      t.ok(validate(body), `beyond the schema, ${rule}: the schema accepts ${show(body)}`)
      t.equal((await doorVerdict(c, body)).beyond, rule, `beyond the schema, ${rule}: the route refuses it for that rule`)
    }
    // Random bodies too (a fixed seed, so a failure repeats): a valid body with some optional fields left out and
    // one field, named in the schema or not, set to any JSON value.
    const fields = [...Object.keys((schema.properties ?? {}) as Schema), 'zz_qualquer']
    const required = new Set((schema.required ?? []) as string[])
    const random = fc
      .sample(
        fc.record({
          base: fc.constantFrom(...c.valid),
          drop: fc.subarray(fields.filter((f) => !required.has(f))),
          field: fc.constantFrom(...fields),
          value: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined, freq: 4 }),
        }),
        { numRuns: 300, seed: 30 },
      )
      .map(({ base, drop, field, value }) => {
        const body: Body = { ...base }
        for (const f of drop) delete body[f]
        if (value !== undefined) body[field] = value as Json
        return { path: `(random) ${field}`, body }
      })
    const all = [
      ...c.valid.flatMap((b) => cases(doc, schema, b)),
      ...(c.extra ?? []).map((body) => ({ path: '(extra)', body })),
      ...random,
    ]
    const disagree: string[] = []
    const beyond = new Map<string, number>()
    let refused = 0
    for (const { path, body } of all) {
      const bySchema = validate(body) as boolean
      const byDoor = await doorVerdict(c, body)
      if (!byDoor.ok) refused++
      if (bySchema === byDoor.ok) continue
      if (bySchema && byDoor.beyond) {
        beyond.set(byDoor.beyond, (beyond.get(byDoor.beyond) ?? 0) + 1)
        continue
      }
      disagree.push(
        `${path}: schema ${bySchema ? 'accepts' : `refuses (${ajv.errorsText(validate.errors)})`}, route ${byDoor.ok ? 'accepts' : `refuses (${byDoor.why})`}: ${show(body)}`,
      )
    }
    // One failure per disagreement (the first 40), each naming the field, both verdicts and the body.
    for (const d of disagree.slice(0, 40)) t.fail(d)
    if (disagree.length > 40) t.fail(`… and ${disagree.length - 40} more disagreements`)
    const counted = [...beyond].map(([rule, n]) => `${n} ${rule}`).join(', ')
    t.equal(
      disagree.length,
      0,
      `${all.length} bodies, ${refused} refused, schema and route agree${counted ? ` (beyond the schema: ${counted})` : ''}`,
    )
  })
}
