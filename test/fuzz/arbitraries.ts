// fast-check generators of requests for every public, app-key and operator route: valid ones (which must succeed,
// also with a proxy's worth of headers or a chunked body), and hostile ones made by one mutation of a valid one
// (path escapes, raw bytes, queries, Authorization forms, broken JSON, lone surrogates, invalid UTF-8, deep
// nesting, huge numbers, wrong types, oversized fields, duplicated keys, bodies over the cap, aborted bodies).
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { proof } from '../../src/delivery/proof'
import type { FuzzApp, FuzzContext } from './harness'
import type { Transfer, WireRequest } from './wire'

/** What the case must get back, beyond the invariants every case has (no 5xx, no escape, the process answers). */
export interface Expectation {
  /** A valid request: 2xx (or one of `statuses` when given). */
  valid: boolean
  /** Exactly one of these statuses. */
  statuses?: number[]
  /** Carries a value that cannot be stored exactly (lone surrogate, invalid UTF-8) in a stored field: a 4xx. */
  mustRefuse?: boolean
  /** No answer is acceptable: 'closed' = the server must close the connection; 'any' = the client gives up itself. */
  noAnswer?: 'closed' | 'any'
  /** A 400 outside the envelope (`{erro}`) is the spec's answer here (malformed `{id}` on /apps/{id}/…). */
  bareIdError?: boolean
}

export interface FuzzCase {
  route: string
  mutation: string
  request: WireRequest
  expect: Expectation
}

type Auth = 'none' | 'a' | 'c' | 'platform'
type Json = Record<string, unknown>

interface RouteDef {
  name: string
  method: string
  /** The path with `{}` where the parameter goes (if any). */
  path: string
  /** The valid parameter. */
  param?: (ctx: FuzzContext) => string
  /** Statuses a malformed parameter (bad %-escape) must get. */
  badParam?: number[]
  bareIdError?: boolean
  query?: (ctx: FuzzContext) => Array<[string, string]>
  auth: Auth
  /** A valid body, made from a random token (so that two valid cases do not collide). */
  body?: (ctx: FuzzContext, token: string) => Json
  /** Body cap of the route (bytes), when it reads a body. */
  cap?: number
  /** Text fields stored as they are (where a lone surrogate / invalid UTF-8 must be refused), as paths. */
  stored?: string[][]
  /** Every field of the body, as paths (for wrong types, huge numbers, oversized values). */
  fields?: string[][]
  /** Object fields (for deep nesting and oversized keys). */
  objects?: string[][]
  headers?: (ctx: FuzzContext) => Array<[string, string]>
  /** Statuses a valid request may get besides 2xx. */
  validAlso?: number[]
}

const DEVICE_CAP = 16 * 1024
const SEND_CAP = 256 * 1024

/** `n` characters of base64 that do not compress (Postgres would squeeze repeated text under its btree limits). */
export function incompressible(n: number, seed = 'fuzz'): string {
  let out = ''
  for (let i = 0; out.length < n; i++) out += createHash('sha256').update(`${seed}:${i}`).digest('base64url')
  return out.slice(0, n)
}

function uuidFrom(token: string): string {
  const h = createHash('sha256').update(token).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export const ROUTES: RouteDef[] = [
  { name: 'GET /', method: 'GET', path: '/', auth: 'none' },
  {
    name: 'POST /api/v1/players',
    method: 'POST',
    path: '/api/v1/players',
    auth: 'none',
    cap: DEVICE_CAP,
    body: (ctx, tok) => ({
      app_id: ctx.a.id,
      device_type: 1,
      identifier: `fz-${tok}`,
      language: 'pt',
      tags: { t: tok },
      timezone: -10800,
    }),
    stored: [['identifier'], ['external_user_id'], ['app_version'], ['device_model'], ['language'], ['tags', 't']],
    fields: [
      ['app_id'],
      ['device_type'],
      ['identifier'],
      ['tags'],
      ['language'],
      ['timezone'],
      ['sessoes'],
      ['rooted'],
      ['transporte'],
    ],
    objects: [['tags']],
  },
  {
    name: 'PUT /api/v1/players/{id}',
    method: 'PUT',
    path: '/api/v1/players/{}',
    param: (ctx) => ctx.playerA,
    badParam: [400, 404],
    auth: 'none',
    cap: DEVICE_CAP,
    body: (ctx, tok) => ({ app_id: ctx.a.id, tags: { t: tok }, app_version: '1.0' }),
    stored: [['external_user_id'], ['app_version'], ['tags', 't']],
    fields: [['app_id'], ['external_user_id'], ['tags'], ['app_version'], ['transporte']],
    objects: [['tags']],
  },
  {
    name: 'POST /api/v1/receipts',
    method: 'POST',
    path: '/api/v1/receipts',
    auth: 'none',
    cap: DEVICE_CAP,
    body: (ctx, tok) => {
      const player = uuidFrom(tok)
      return { app_id: ctx.a.id, notification_id: ctx.sendA, player_id: player, rcpt: proof(ctx.a.receiptKey, ctx.sendA, player) }
    },
    stored: [['rcpt'], ['evento'], ['player_id']],
    fields: [['app_id'], ['notification_id'], ['player_id'], ['rcpt'], ['evento']],
  },
  {
    name: 'GET /api/v1/apps/{id}/firebase_params',
    method: 'GET',
    path: '/api/v1/apps/{}/firebase_params',
    param: (ctx) => ctx.a.id,
    badParam: [400],
    bareIdError: true,
    auth: 'none',
  },
  {
    name: 'POST /api/v1/notifications',
    method: 'POST',
    path: '/api/v1/notifications',
    auth: 'a',
    cap: SEND_CAP,
    body: (ctx, tok) => ({
      app_id: ctx.a.id,
      contents: { en: `fuzz ${tok}` },
      headings: { en: 'fuzz' },
      data: { k: tok },
      include_player_ids: [ctx.playerA],
    }),
    stored: [['contents', 'en'], ['headings', 'en'], ['data', 'k'], ['external_id'], ['idempotency_key'], ['name']],
    fields: [
      ['app_id'],
      ['contents'],
      ['headings'],
      ['data'],
      ['include_player_ids'],
      ['ttl'],
      ['priority'],
      ['send_after'],
      ['collapse_id'],
      ['isIos'],
      ['big_picture'],
    ],
    objects: [['data'], ['contents'], ['headings']],
  },
  {
    name: 'GET /api/v1/notifications',
    method: 'GET',
    path: '/api/v1/notifications',
    auth: 'a',
    query: (ctx) => [
      ['app_id', ctx.a.id],
      ['limit', '5'],
    ],
  },
  {
    name: 'GET /api/v1/notifications/{id}',
    method: 'GET',
    path: '/api/v1/notifications/{}',
    param: (ctx) => ctx.sendA,
    badParam: [400, 404],
    auth: 'a',
    query: (ctx) => [['app_id', ctx.a.id]],
  },
  {
    name: 'GET /api/v1/notifications/stats',
    method: 'GET',
    path: '/api/v1/notifications/stats',
    auth: 'a',
    query: (ctx) => [
      ['app_id', ctx.a.id],
      ['desde', '2026-01-01T00:00:00Z'],
      ['ate', '2027-01-01T00:00:00-03:00'],
    ],
  },
  {
    name: 'GET /api/v1/players/{id}',
    method: 'GET',
    path: '/api/v1/players/{}',
    param: (ctx) => ctx.playerA,
    badParam: [400, 404],
    auth: 'a',
    query: (ctx) => [['app_id', ctx.a.id]],
  },
  {
    name: 'POST /api/v1/players/csv_export',
    method: 'POST',
    path: '/api/v1/players/csv_export',
    auth: 'a',
    query: (ctx) => [['app_id', ctx.a.id]],
    validAlso: [429],
  },
  {
    name: 'GET /api/v1/exports/{file}',
    method: 'GET',
    path: '/api/v1/exports/{}',
    param: () => 'no-such-export.csv.gz',
    badParam: [400, 404],
    auth: 'none',
    validAlso: [404],
  },
  {
    name: 'GET /api/v1/confirmacoes',
    method: 'GET',
    path: '/api/v1/confirmacoes',
    auth: 'c',
    query: (ctx) => [['app_id', ctx.c.id]],
  },
  {
    name: 'PUT /api/v1/confirmacoes',
    method: 'PUT',
    path: '/api/v1/confirmacoes',
    auth: 'c',
    cap: DEVICE_CAP,
    body: (ctx) => ({ app_id: ctx.c.id, modo: 'consulta' }),
    stored: [['url']],
    fields: [['app_id'], ['modo'], ['url']],
  },
  {
    name: 'POST /api/v1/apps',
    method: 'POST',
    path: '/api/v1/apps',
    auth: 'platform',
    cap: DEVICE_CAP,
    body: (_ctx, tok) => ({ nome: `fuzz ${tok}` }),
    stored: [['nome']],
    fields: [['nome'], ['rate_por_min'], ['sandbox']],
  },
  {
    name: 'POST /api/v1/apps/{id}/rotate_key',
    method: 'POST',
    path: '/api/v1/apps/{}/rotate_key',
    param: (ctx) => ctx.d.id,
    badParam: [400],
    bareIdError: true,
    auth: 'platform',
    cap: DEVICE_CAP,
    body: () => ({ sandbox: false }),
    fields: [['sandbox']],
  },
]

/** Malformed or hostile path segments (percent-escapes as written on the wire). */
export const BAD_ESCAPES = [
  '%zz',
  '%',
  '%E0%A4%A',
  '%C3%28',
  '%FF',
  '%C0%AF',
  '%ED%A0%80',
  '%F4%90%80%80',
  '%E0%80%80',
  'abc%',
  '%%',
  '%2',
  '%u0041',
]

/** Path segments that are well-formed but not ids. */
const ODD_SEGMENTS = [
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%00',
  'x'.repeat(5000),
  '%41'.repeat(1000),
  '00000000-0000-0000-0000-000000000000',
  '%20',
]

/** Raw bytes no client library will put in a path. */
const RAW_PATH_BYTES: Buffer[] = [
  Buffer.from([0xff]),
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0x00]),
  Buffer.from([0x7f]),
  Buffer.from('\t'),
  Buffer.from(' '),
  Buffer.from([0xe2, 0x82]),
]

/** Invalid UTF-8 sequences put raw into a JSON string (not as escapes). */
const BAD_UTF8: Buffer[] = [
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0xff, 0x28]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0x80]),
  Buffer.from([0xe2, 0x82]),
]

/** Lone surrogates as JSON escapes (JSON.parse accepts them; Postgres and UTF-8 cannot hold them). */
const LONE_SURROGATES = ['\\ud800', '\\udfff', '\\ud83d', '\\udc00x', 'a\\ud800b', '\\ud800\\ud800']

/** Numbers JSON can spell and JavaScript reads oddly. */
const HUGE_NUMBERS = [
  '1e309',
  '-1e309',
  '-0',
  '18446744073709551616',
  '1e-400',
  '123456789012345678901234567890',
  '0.1e1',
  '2147483648',
  '-2147483649',
  '1.5',
]

// ---------------------------------------------------------------------------------------------------------------
// Building bytes.

const PLACEHOLDER = '\u0001FUZZ\u0001'

function setPath(obj: Json, path: string[], value: unknown): void {
  let o = obj
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i] as string
    if (typeof o[k] !== 'object' || o[k] === null || Array.isArray(o[k])) o[k] = {}
    o = o[k] as Json
  }
  o[path[path.length - 1] as string] = value
}

/** JSON text of `obj` with the placeholder string replaced by `raw` bytes (written as they are into the text). */
function jsonWith(obj: Json, raw: Buffer | string, inString: boolean, prefix = 'x'): Buffer {
  const text = JSON.stringify(obj)
  const marker = JSON.stringify(PLACEHOLDER)
  const at = text.indexOf(marker)
  if (at < 0) return Buffer.from(text)
  const rawBuf = typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw
  const inner = inString ? Buffer.concat([Buffer.from(`"${prefix}`), rawBuf, Buffer.from('x"')]) : rawBuf
  return Buffer.concat([Buffer.from(text.slice(0, at)), inner, Buffer.from(text.slice(at + marker.length))])
}

/** What a stored text field starts with, so that the value is otherwise valid (a URL stays an https URL). */
function prefixOf(path: string[]): string {
  return path[0] === 'url' ? 'https://example.com/' : 'x'
}

function authHeader(auth: Auth, ctx: FuzzContext): Array<[string, string]> {
  if (auth === 'a') return [['Authorization', `Basic ${ctx.a.apiKey}`]]
  if (auth === 'c') return [['Authorization', `Bearer ${ctx.c.apiKey}`]]
  if (auth === 'platform') return [['Authorization', `Bearer ${ctx.platformKey}`]]
  return []
}

interface Draft {
  route: RouteDef
  segment: Buffer
  query: Buffer
  headers: Array<[string, Buffer]>
  body: Buffer | null
  transfer: Transfer
}

function encQuery(q: Array<[string, string]>): string {
  return q.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
}

function draft(route: RouteDef, ctx: FuzzContext, token: string): Draft {
  const body = route.body ? Buffer.from(JSON.stringify(route.body(ctx, token))) : null
  const headers: Array<[string, Buffer]> = authHeader(route.auth, ctx).map(([k, v]) => [k, Buffer.from(v)])
  if (body) headers.push(['Content-Type', Buffer.from('application/json')])
  return {
    route,
    segment: Buffer.from(route.param ? route.param(ctx) : ''),
    query: Buffer.from(route.query ? encQuery(route.query(ctx)) : ''),
    headers,
    body,
    transfer: 'length',
  }
}

function toRequest(d: Draft): WireRequest {
  const [before, after] = d.route.path.split('{}') as [string, string | undefined]
  const parts: Buffer[] = [Buffer.from(before)]
  if (after !== undefined) parts.push(d.segment, Buffer.from(after))
  if (d.query.length > 0) parts.push(Buffer.from('?'), d.query)
  return { method: d.route.method, target: Buffer.concat(parts), headers: d.headers, body: d.body, transfer: d.transfer }
}

// ---------------------------------------------------------------------------------------------------------------
// Mutations: each takes a valid draft and makes it hostile (or keeps it valid, for the legitimate variants).

type Mutation = (d: Draft, ctx: FuzzContext) => fc.Arbitrary<{ d: Draft; mutation: string; expect: Expectation }>

const token = fc.stringMatching(/^[a-z0-9]{6,12}$/)

function validExpect(route: RouteDef): Expectation {
  return { valid: true, ...(route.validAlso ? { statuses: [200, 201, ...route.validAlso] } : {}) }
}

const hostile: Expectation = { valid: false }

/** A proxy's headers: up to 20 ordinary ones, plus at times one long value, the head staying under 4 KB. */
const legitHeaders: Mutation = (d) =>
  fc
    .tuple(
      fc.array(
        fc.tuple(
          fc.constantFrom(
            'X-Forwarded-For',
            'X-Request-Id',
            'Via',
            'X-Amzn-Trace-Id',
            'Traceparent',
            'X-Real-Ip',
            'Cookie',
            'Accept',
          ),
          fc.stringMatching(/^[ -~]{1,100}$/),
        ),
        {
          minLength: 1,
          maxLength: 20,
        },
      ),
      fc.option(fc.integer({ min: 500, max: 1500 }), { nil: undefined }),
    )
    .map(([hs, long]) => {
      const headers = [...d.headers, ...hs.map(([k, v], i): [string, Buffer] => [`${k}-${i}`, Buffer.from(v.trim() || 'v')])]
      if (long) headers.push(['X-Long-Trace', Buffer.from('t'.repeat(long))])
      return { d: { ...d, headers }, mutation: `legitimate headers (${headers.length})`, expect: validExpect(d.route) }
    })

const chunkedBody: Mutation = (d) =>
  fc.constant({ d: { ...d, transfer: 'chunked' as Transfer }, mutation: 'body sent chunked', expect: validExpect(d.route) })

const badEscape: Mutation = (d) =>
  fc.tuple(fc.constantFrom(...BAD_ESCAPES), fc.boolean()).map(([esc, prefixed]) => ({
    d: { ...d, segment: Buffer.from(prefixed ? `${d.segment.toString()}${esc}` : esc) },
    mutation: `malformed escape in the path parameter: ${prefixed ? `<id>${esc}` : esc}`,
    expect: { valid: false, statuses: d.route.badParam, bareIdError: d.route.bareIdError },
  }))

const oddSegment: Mutation = (d) =>
  fc.constantFrom(...ODD_SEGMENTS).map((seg) => ({
    d: { ...d, segment: Buffer.from(seg) },
    mutation: `odd path parameter: ${seg.slice(0, 40)}${seg.length > 40 ? `… (${seg.length})` : ''}`,
    expect: {
      valid: false,
      statuses: d.route.badParam ? [...d.route.badParam, 401, 404, 400] : undefined,
      bareIdError: d.route.bareIdError,
    },
  }))

const rawPathBytes: Mutation = (d) =>
  fc.tuple(fc.constantFrom(...RAW_PATH_BYTES), fc.boolean()).map(([bytes, inQuery]) => {
    const nd =
      inQuery || !d.route.param
        ? { ...d, query: Buffer.concat([d.query, Buffer.from('&x='), bytes]) }
        : { ...d, segment: Buffer.concat([d.segment, bytes]) }
    // A control byte or a space (NUL, TAB, DEL, SP) in the request-target is not HTTP: this uWS build neither
    // answers nor closes (the socket waits for its idle timeout, ~10 s; see README). Other bytes must get an answer.
    const control = bytes.some((b) => b <= 0x20 || b === 0x7f)
    const inPath = !(inQuery || !d.route.param)
    return {
      d: nd,
      mutation: `raw bytes ${bytes.toString('hex')} in the ${inPath ? 'path' : 'query'}`,
      expect: { valid: false, noAnswer: control ? ('any' as const) : undefined, bareIdError: inPath && d.route.bareIdError },
    }
  })

const badQuery: Mutation = (d, ctx) =>
  fc
    .constantFrom<[string, string]>(
      ['app_id missing', ''],
      ['app_id empty', 'app_id='],
      ['app_id not a uuid', 'app_id=x'],
      ['app_id bad escape', 'app_id=%zz'],
      ['app_id lone-surrogate escape', 'app_id=%ED%A0%80'],
      ['app_id of another app', `app_id=${ctx.b.id}`],
      ['app_id twice', `app_id=${ctx.b.id}&app_id=${ctx.a.id}`],
      ['app_id 3 KB', `app_id=${'a'.repeat(3000)}`],
      ['app_id with NUL', `app_id=${ctx.a.id}%00`],
      ['limit huge', `app_id=${ctx.a.id}&limit=1e309`],
      ['limit negative', `app_id=${ctx.a.id}&limit=-1`],
      ['desde garbage', `app_id=${ctx.a.id}&desde=%zz&ate=x`],
      ['2000 params', Array.from({ length: 2000 }, (_, i) => `p${i}=${i}`).join('&')],
    )
    .map(([what, q]) => ({ d: { ...d, query: Buffer.from(q) }, mutation: `query: ${what}`, expect: hostile }))

const AUTH_FORMS: Array<[string, (ctx: FuzzContext) => Buffer | null]> = [
  ['absent', () => null],
  ['"Basic"', () => Buffer.from('Basic')],
  ['"Bearer "', () => Buffer.from('Bearer ')],
  ['Basic garbage', () => Buffer.from('Basic !!!@@@')],
  ['Basic base64(x:key)', (ctx) => Buffer.from(`Basic ${Buffer.from(`x:${ctx.a.apiKey}`).toString('base64')}`)],
  ['Basic base64(garbage)', () => Buffer.from(`Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x00]).toString('base64')}`)],
  ['another app key', (ctx) => Buffer.from(`Basic ${ctx.b.apiKey}`)],
  ['key with a wrong secret', (ctx) => Buffer.from(`Basic ${ctx.a.apiKey.slice(0, -3)}abc`)],
  ['unknown kid', () => Buffer.from(`Basic pm_live_zzzzzzzz_${'A'.repeat(43)}`)],
  ['2 KB key', (ctx) => Buffer.from(`Basic ${ctx.a.apiKey}${'x'.repeat(2000)}`)],
  ['3.5 KB Bearer', () => Buffer.from(`Bearer ${'y'.repeat(3500)}`)],
  ['invalid UTF-8', () => Buffer.concat([Buffer.from('Basic pm_live_'), Buffer.from([0xff, 0xc3, 0x28])])],
  ['lower-case scheme', (ctx) => Buffer.from(`basic ${ctx.a.apiKey}`)],
  ['tab separated', (ctx) => Buffer.from(`Basic\t${ctx.a.apiKey}`)],
  ['three words', (ctx) => Buffer.from(`Basic ${ctx.a.apiKey} extra`)],
  ['platform key', (ctx) => Buffer.from(`Bearer ${ctx.platformKey}`)],
]

const badAuth: Mutation = (d, ctx) =>
  fc.constantFrom(...AUTH_FORMS).map(([what, make]) => {
    const v = make(ctx)
    const headers = d.headers.filter(([k]) => k !== 'Authorization')
    if (v) headers.push(['Authorization', v])
    return { d: { ...d, headers }, mutation: `Authorization: ${what}`, expect: hostile }
  })

const IDEM_KEYS: Array<[string, Buffer]> = [
  ['invalid UTF-8 (C3 28)', Buffer.from([0x6b, 0xc3, 0x28])],
  ['invalid UTF-8 (FF 28)', Buffer.from([0x6b, 0xff, 0x28])],
  ['4 KB', Buffer.from(incompressible(4000))],
  ['empty', Buffer.alloc(0)],
]

const badSendHeaders: Mutation = (d) =>
  fc
    .tuple(fc.constantFrom(...IDEM_KEYS), fc.constantFrom('Idempotency-Key', 'X-Pm-Priority', 'X-Dry-Run', 'Content-Type'))
    .map(([[what, v], name]) => ({
      d: { ...d, headers: [...d.headers, [name, v] as [string, Buffer]] },
      mutation: `${name}: ${what}`,
      expect: { valid: false, mustRefuse: name === 'Idempotency-Key' && what.startsWith('invalid') },
    }))

/** More headers than this uWS build keeps (48), or a head over 4 KB arriving in two reads: absurd, refusable. */
const absurdHeaders: Mutation = (d) =>
  fc.constantFrom<'count' | 'split'>('count', 'split').map((kind) => {
    if (kind === 'count') {
      const headers = [...d.headers, ...Array.from({ length: 60 }, (_, i): [string, Buffer] => [`X-H${i}`, Buffer.from('v')])]
      return { d: { ...d, headers }, mutation: '61+ headers', expect: { valid: false, noAnswer: 'any' as const } }
    }
    const headers: Array<[string, Buffer]> = [...d.headers, ['X-Huge', Buffer.from('h'.repeat(6000))]]
    return {
      d: { ...d, headers, transfer: 'split-head' as Transfer },
      mutation: '6 KB head in two reads',
      expect: { valid: false, noAnswer: 'any' as const },
    }
  })

function bodyMutations(
  d: Draft,
  ctx: FuzzContext,
  tok: string,
): fc.Arbitrary<{ d: Draft; mutation: string; expect: Expectation }> {
  const route = d.route
  const base = (): Json => (route.body ? route.body(ctx, tok) : {})
  const withBody = (body: Buffer, mutation: string, expect: Expectation = hostile) => ({ d: { ...d, body }, mutation, expect })
  const all: Array<fc.Arbitrary<{ d: Draft; mutation: string; expect: Expectation }>> = [
    // Broken JSON: a valid body cut short, stray bytes, non-objects.
    fc.integer({ min: 0, max: 200 }).map((cut) => {
      const text = JSON.stringify(base())
      return withBody(
        Buffer.from(text.slice(0, Math.min(cut, text.length - 1))),
        `JSON cut at byte ${Math.min(cut, text.length - 1)}`,
      )
    }),
    fc
      .constantFrom('[]', '"x"', '42', 'null', 'true', '{', '{"a":}', '\ufeff{}', '{}}', "{'a':1}", 'NaN', '{"a":1,}', '\u0000')
      .map((t) => withBody(Buffer.from(t), `body ${JSON.stringify(t)}`)),
    fc
      .uint8Array({ minLength: 1, maxLength: 64 })
      .map((b) => withBody(Buffer.from(b), `random body bytes ${Buffer.from(b).toString('hex').slice(0, 40)}`)),
    // Over the cap (the route must answer 413 from the declared length or while reading).
    fc
      .constant(route.cap ?? 0)
      .map((cap) =>
        withBody(Buffer.alloc(cap + 1, 0x20), `body of ${cap + 1} bytes (cap ${cap})`, { valid: false, statuses: [413] }),
      ),
    // Aborted: a valid body, the client closes halfway.
    fc.constant({
      d: { ...d, transfer: 'abort' as Transfer },
      mutation: 'body aborted halfway',
      expect: { valid: false, noAnswer: 'any' as const },
    }),
    // Duplicated keys: the last one wins in JSON.parse; `app_id` of another app after the right one.
    fc.constant(null).map(() => {
      const text = JSON.stringify(base())
      return withBody(
        Buffer.from(`{"app_id":"${ctx.a.id}",${text.slice(1, -1)},"app_id":"${ctx.b.id}"}`),
        'duplicated app_id (last: another app)',
      )
    }),
  ]
  if (route.stored?.length) {
    const field = fc.constantFrom(...route.stored)
    all.push(
      fc.tuple(field, fc.constantFrom(...LONE_SURROGATES)).map(([path, s]) => {
        const o = base()
        setPath(o, path, PLACEHOLDER)
        return withBody(jsonWith(o, s, true, prefixOf(path)), `lone surrogate "${s}" in ${path.join('.')}`, {
          valid: false,
          mustRefuse: true,
        })
      }),
      fc.tuple(field, fc.constantFrom(...BAD_UTF8)).map(([path, bytes]) => {
        const o = base()
        setPath(o, path, PLACEHOLDER)
        return withBody(jsonWith(o, bytes, true, prefixOf(path)), `invalid UTF-8 ${bytes.toString('hex')} in ${path.join('.')}`, {
          valid: false,
          mustRefuse: true,
        })
      }),
    )
  }
  if (route.fields?.length) {
    const field = fc.constantFrom(...route.fields)
    all.push(
      fc.tuple(field, fc.constantFrom(...HUGE_NUMBERS)).map(([path, n]) => {
        const o = base()
        setPath(o, path, PLACEHOLDER)
        return withBody(jsonWith(o, n, false), `number ${n} in ${path.join('.')}`)
      }),
      fc.tuple(field, fc.jsonValue({ maxDepth: 2 })).map(([path, v]) => {
        const o = base()
        setPath(o, path, v)
        return withBody(Buffer.from(JSON.stringify(o)), `${path.join('.')} = ${JSON.stringify(v).slice(0, 60)}`)
      }),
      fc.tuple(field, fc.integer({ min: 3000, max: 12000 })).map(([path, n]) => {
        const o = base()
        setPath(o, path, incompressible(n, tok))
        return withBody(Buffer.from(JSON.stringify(o)), `${path.join('.')} of ${n} bytes`)
      }),
    )
  }
  const objects = route.objects?.length ? route.objects : route.body ? [['extra']] : []
  if (objects.length) {
    all.push(
      fc
        // 7,000 levels of `[` still fit in a device route's 16 KB; 10,000 is the issue's case on a send.
        .tuple(fc.constantFrom(...objects), fc.constantFrom(100, 1000, 5000, 7000, 10000), fc.constantFrom('{"a":', '['))
        .map(([path, depth, open]) => {
          const o = base()
          // Beside the valid content, so that the object itself stays an object of the right shape.
          setPath(o, [...path, 'deep'], PLACEHOLDER)
          const close = open === '[' ? ']' : '}'
          const nested = `${open.repeat(depth)}1${close.repeat(depth)}`
          return withBody(jsonWith(o, nested, false), `${depth} levels of ${open} in ${path.join('.')}.deep`)
        }),
      fc.tuple(fc.constantFrom(...objects), fc.integer({ min: 3000, max: 8000 })).map(([path, n]) => {
        const o = base()
        setPath(o, [...path, incompressible(n, tok)], 'v')
        return withBody(Buffer.from(JSON.stringify(o)), `key of ${n} bytes in ${path.join('.')}`)
      }),
    )
  }
  return fc.oneof(...all)
}

/** A request on a route path with a method it does not have, or a random path: the 404 envelope. */
function strayRequest(): fc.Arbitrary<FuzzCase> {
  const segment = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9._~-]{0,20}$/),
    fc.constantFrom(...BAD_ESCAPES),
    fc.constantFrom('api', 'v1', 'v2', 'players', 'apps', 'notifications', 'receipts', 'exports', 'confirmacoes'),
  )
  return fc
    .tuple(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'FOO'),
      fc.array(segment, { minLength: 1, maxLength: 6 }),
    )
    .map(([method, segs]) => ({
      route: 'stray',
      mutation: `${method} on a random path`,
      request: { method, target: Buffer.from(`/${segs.join('/')}`), headers: [], body: null, transfer: 'length' as Transfer },
      // HEAD answers have no body; a method uWS does not know may be refused by closing.
      expect: { valid: false, noAnswer: 'closed' as const },
    }))
}

/** One case: a route, then either a valid request (plain, with a proxy's headers, chunked) or one hostile mutation. */
export function fuzzCase(ctx: FuzzContext): fc.Arbitrary<FuzzCase> {
  const onRoute = fc.tuple(fc.constantFrom(...ROUTES), token).chain(([route, tok]) => {
    const d = draft(route, ctx, tok)
    const muts: Array<fc.WeightedArbitrary<{ d: Draft; mutation: string; expect: Expectation }>> = [
      { weight: 3, arbitrary: fc.constant({ d, mutation: 'valid', expect: validExpect(route) }) },
      { weight: 2, arbitrary: legitHeaders(d, ctx) },
      { weight: 2, arbitrary: badAuth(d, ctx) },
      { weight: 1, arbitrary: rawPathBytes(d, ctx) },
      { weight: 1, arbitrary: absurdHeaders(d, ctx) },
    ]
    if (d.body) {
      muts.push({ weight: 1, arbitrary: chunkedBody(d, ctx) })
      muts.push({ weight: 8, arbitrary: bodyMutations(d, ctx, tok) })
    }
    if (route.param) {
      muts.push({ weight: 4, arbitrary: badEscape(d, ctx) })
      muts.push({ weight: 1, arbitrary: oddSegment(d, ctx) })
    }
    if (route.query) muts.push({ weight: 2, arbitrary: badQuery(d, ctx) })
    if (route.name === 'POST /api/v1/notifications') muts.push({ weight: 2, arbitrary: badSendHeaders(d, ctx) })
    return fc
      .oneof(...muts)
      .map(({ d: nd, mutation, expect }) => ({ route: route.name, mutation, request: toRequest(nd), expect }))
  })
  return fc.oneof({ weight: 12, arbitrary: onRoute }, { weight: 1, arbitrary: strayRequest() })
}

export type { FuzzApp }
