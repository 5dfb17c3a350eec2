// APNs provider API simulator: POST /3/device/<token> over TLS HTTP/2 only, authenticated by an ES256 provider
// token (kid = Key ID, iss = Team ID, iat). Status codes and reasons follow Apple's "Handling notification responses
// from APNs" and "Establishing a token-based connection to APNs"; docs/simulators.md says what is verified.
// A placeholder device token (all zeros, as a connection test sends) answers BadDeviceToken once the key is
// accepted, as Apple does for a token it never issued.
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import type { Http2Session } from 'node:http2'
import jwt from 'jsonwebtoken'
import { type Behaviour, COMMON_STEPS, Script, type Step } from './behaviour'
import { type ConditionOptions, Conditions } from './conditions'
import { H2Simulator, readBody, Recorder, type Req, type Res, send } from './h2-server'
import { type SimulatorTls, simulatorTls } from './tls'

export type ApnsEnvironment = 'sandbox' | 'production'
export const APNS_STEPS = [
  ...COMMON_STEPS,
  'bad-device-token',
  'device-token-not-for-topic',
  'unregistered',
  'expired-token',
  'too-many',
  'internal',
  'unavailable',
  'shutdown',
] as const

export interface ApnsOptions extends ConditionOptions {
  /** Certificate to serve (default: a fresh one for this process, see tls.ts). */
  tls?: SimulatorTls
  /** Listening address (default 127.0.0.1 on a free port). */
  host?: string
  port?: number
  /** Called with every notification answered 200: the simulated device's delivery. */
  onDeliver?: (n: ApnsDelivery) => void
  /** Device tokens answered BadDeviceToken whatever their script (default: only zeros). */
  placeholderToken?: RegExp
  /** Which APNs this simulator plays (default 'production'); changeable with setEnvironment. */
  environment?: ApnsEnvironment
  /** When set, apns-topic must be this Bundle ID or one of its suffixed topics (`<id>.voip`, ...). */
  bundleId?: string
  /** Team ID of keys made by key() (default: random 10 characters). */
  teamId?: string
  /** Reason for a key used in the wrong environment (Apple answers both spellings). */
  envMismatchReason?: 'BadEnvironmentKeyIdInToken' | 'BadEnvironmentKeyInToken'
  /** Device tokens not matching this answer 400 BadDeviceToken (default: any non-empty token). */
  tokenFormat?: RegExp
  /** A connection that presents a new provider token sooner than this after the previous one gets 429
   *  TooManyProviderTokenUpdates (Apple: refresh no more than once every 20 minutes). Default: not checked. */
  minTokenUpdateIntervalMs?: number
  /** SETTINGS_MAX_CONCURRENT_STREAMS (default 1000). */
  maxConcurrentStreams?: number
  /** Keep headers and bodies (default true); false keeps counts only. */
  record?: boolean
  now?: () => number
  defaultBehaviour?: Behaviour
}

/** A notification APNs accepted for delivery. */
export interface ApnsDelivery {
  token: string
  topic: string
  pushType: string | undefined
  // biome-ignore lint/suspicious/noExplicitAny: the payload as the client sent it (null when it was not JSON)
  payload: any
  apnsId: string
  /** When the answer was written (ms since epoch). */
  at: number
}

export interface ApnsKey {
  /** The .p8 file's contents: PKCS#8 PEM of a P-256 key. */
  p8: string
  keyId: string
  teamId: string
  environment: ApnsEnvironment | 'both'
}

export interface ApnsRequest {
  at: number
  token: string
  headers: Record<string, string | string[] | undefined>
  // biome-ignore lint/suspicious/noExplicitAny: the payload as the client sent it
  body: any
  /** Set when the body was not JSON (APNs would not display such a notification). */
  bodyError?: string
  status: number | null
  reason: string | null
  step: string
  keyId: string | null
  teamId: string | null
  apnsId: string
}

interface Key {
  teamId: string
  publicKey: string
  environment: ApnsEnvironment | 'both'
}

const PUSH_TYPES = new Set([
  'alert',
  'background',
  'location',
  'voip',
  'complication',
  'fileprovider',
  'mdm',
  'liveactivity',
  'pushtotalk',
  'widgets',
  'controls',
])
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/
const MAX_PAYLOAD_BYTES = 4096 // Apple: 4 KB for regular remote notifications (5 KB for VoIP)
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const id10 = () => Array.from(randomBytes(10), (b) => ALNUM[b % ALNUM.length]).join('')

const PLACEHOLDER = /^0+$/

export type ApnsSimulator = Awaited<ReturnType<typeof startApnsSimulator>>

export async function startApnsSimulator(opts: ApnsOptions = {}) {
  const now = opts.now ?? Date.now
  const teamId = opts.teamId ?? id10()
  let environment: ApnsEnvironment = opts.environment ?? 'production'
  const script = new Script(APNS_STEPS, opts.defaultBehaviour ?? 'ok')
  const conditions = new Conditions(opts, new Set(APNS_STEPS))
  const placeholder = opts.placeholderToken ?? PLACEHOLDER
  const requests = new Recorder<ApnsRequest>(opts.record ?? true)
  const delivered = new Recorder<ApnsRequest>(opts.record ?? true)
  const keys = new Map<string, Key>()
  const devices = new Map<string, { environment?: ApnsEnvironment; topic?: string }>()
  const verified = new Map<string, { keyId: string; iat: number }>() // provider token → claims, once its signature checked
  const lastToken = new WeakMap<Http2Session, { token: string; at: number }>()
  const providerTokens = new Set<string>()
  const byReason: Record<string, number> = {}

  const h2 = await H2Simulator.start({
    tls: opts.tls ?? simulatorTls(),
    host: opts.host,
    port: opts.port,
    allowHTTP1: false,
    maxConcurrentStreams: opts.maxConcurrentStreams ?? 1000,
    onRequest: (req, res) => void onRequest(req, res),
  })

  async function onRequest(req: Req, res: Res): Promise<void> {
    const raw = await readBody(req, 64 * 1024)
    const apnsId = typeof req.headers['apns-id'] === 'string' ? req.headers['apns-id'] : randomUUID()
    const rec: ApnsRequest = {
      at: now(),
      token: '',
      headers: { ...req.headers },
      body: null,
      status: null,
      reason: null,
      step: 'refused',
      keyId: null,
      teamId: null,
      apnsId,
    }
    const fail = (status: number, reason: string, extra: Record<string, unknown> = {}) => {
      rec.status = status
      rec.reason = reason
      requests.push(rec)
      byReason[reason] = (byReason[reason] ?? 0) + 1
      send(res, status, { 'apns-id': apnsId }, { reason, ...extra })
    }
    if (req.method !== 'POST') return fail(405, 'MethodNotAllowed')
    const m = /^\/3\/device\/([^/?]*)$/.exec(req.url)
    if (!m) return fail(404, 'BadPath')
    rec.token = decodeURIComponent(m[1] as string)
    if (!rec.token) return fail(400, 'MissingDeviceToken')

    const auth = authenticate(String(req.headers.authorization ?? ''), req.stream.session)
    if ('reason' in auth) return fail(auth.status, auth.reason)
    rec.keyId = auth.keyId
    rec.teamId = auth.teamId

    const h = req.headers
    const topic = typeof h['apns-topic'] === 'string' ? h['apns-topic'] : ''
    if (!topic) return fail(400, 'MissingTopic')
    if (opts.bundleId && topic !== opts.bundleId && !topic.startsWith(`${opts.bundleId}.`))
      return fail(400, 'DeviceTokenNotForTopic')
    if (h['apns-push-type'] !== undefined && !PUSH_TYPES.has(String(h['apns-push-type']))) return fail(400, 'InvalidPushType')
    if (h['apns-priority'] !== undefined && !['10', '5', '1'].includes(String(h['apns-priority'])))
      return fail(400, 'BadPriority')
    if (h['apns-expiration'] !== undefined && !/^\d+$/.test(String(h['apns-expiration']))) return fail(400, 'BadExpirationDate')
    if (h['apns-id'] !== undefined && !UUID.test(String(h['apns-id']))) return fail(400, 'BadMessageId')
    if (h['apns-collapse-id'] !== undefined && Buffer.byteLength(String(h['apns-collapse-id'])) > 64)
      return fail(400, 'BadCollapseId')
    if (raw === null || raw.length > MAX_PAYLOAD_BYTES) return fail(413, 'PayloadTooLarge')
    if (raw.length === 0) return fail(400, 'PayloadEmpty')
    try {
      rec.body = JSON.parse(raw.toString('utf8'))
    } catch (err) {
      rec.bodyError = (err as Error).message
    }
    if (placeholder.test(rec.token)) return fail(400, 'BadDeviceToken')
    if (opts.tokenFormat && !opts.tokenFormat.test(rec.token)) return fail(400, 'BadDeviceToken')
    const device = devices.get(rec.token)
    if (device?.environment && device.environment !== environment) return fail(400, 'BadDeviceToken')
    if (device?.topic && device.topic !== topic) return fail(400, 'DeviceTokenNotForTopic')

    const step = conditioned(script.next(rec.token), rec.token)
    rec.step = step.name
    const a = stepAnswer(step.name)
    rec.status = step.name === 'drop' || step.name === 'drop-session' || step.name === 'hang' ? null : a.status
    rec.reason = a.reason
    requests.push(rec)
    h2.perform(
      step,
      req,
      res,
      () => {
        if (a.status === 200) {
          delivered.push(rec)
          // The device's delivery must not break the provider's answer (a device's fault is not Apple's)
          if (opts.onDeliver) {
            try {
              opts.onDeliver({
                token: rec.token,
                topic,
                pushType: h['apns-push-type'] as string | undefined,
                payload: rec.body ?? null,
                apnsId,
                at: now(),
              })
            } catch {}
          }
          send(res, 200, { 'apns-id': apnsId, ...(environment === 'sandbox' ? { 'apns-unique-id': randomUUID() } : {}) })
          return
        }
        byReason[a.reason as string] = (byReason[a.reason as string] ?? 0) + 1
        const body = a.status === 410 ? { reason: a.reason, timestamp: now() } : { reason: a.reason }
        send(res, a.status, { 'apns-id': apnsId }, body)
      },
      conditions.delay(),
    )
  }

  /** A scripted success may still meet the network's conditions: a dead token, a drawn transient failure. */
  function conditioned(step: Step, token: string): Step {
    if (step.name !== 'ok') return step
    if (conditions.isDead(token)) return { ...step, name: 'unregistered' }
    const failure = conditions.failure()
    return failure ? { ...step, name: failure } : step
  }

  type Auth = { keyId: string; teamId: string } | { status: number; reason: string }
  function authenticate(header: string, session: Http2Session | undefined): Auth {
    const token = /^bearer (.+)$/i.exec(header)?.[1]
    if (!token) return { status: 403, reason: 'MissingProviderToken' }
    let claims = verified.get(token)
    if (!claims) {
      const d = jwt.decode(token, { complete: true })
      const kid = d?.header.kid
      const key = kid ? keys.get(kid) : undefined
      if (!d || typeof d.payload === 'string' || d.header.alg !== 'ES256' || !kid || !key)
        return { status: 403, reason: 'InvalidProviderToken' }
      if (d.payload.iss !== key.teamId || typeof d.payload.iat !== 'number')
        return { status: 403, reason: 'InvalidProviderToken' }
      try {
        jwt.verify(token, key.publicKey, { algorithms: ['ES256'], ignoreExpiration: true, ignoreNotBefore: true })
      } catch {
        return { status: 403, reason: 'InvalidProviderToken' }
      }
      claims = { keyId: kid, iat: d.payload.iat }
      verified.set(token, claims)
    }
    const key = keys.get(claims.keyId)
    if (!key) return { status: 403, reason: 'InvalidProviderToken' } // revoked since
    const ageS = now() / 1000 - claims.iat
    if (ageS > 3600) return { status: 403, reason: 'ExpiredProviderToken' } // Apple: older than one hour is rejected
    if (ageS < -60) return { status: 403, reason: 'InvalidProviderToken' }
    if (key.environment !== 'both' && key.environment !== environment) {
      return { status: 403, reason: opts.envMismatchReason ?? 'BadEnvironmentKeyIdInToken' }
    }
    providerTokens.add(token)
    if (opts.minTokenUpdateIntervalMs !== undefined && session) {
      const last = lastToken.get(session)
      if (last && last.token !== token && now() - last.at < opts.minTokenUpdateIntervalMs) {
        return { status: 429, reason: 'TooManyProviderTokenUpdates' }
      }
      if (!last || last.token !== token) lastToken.set(session, { token, at: now() })
    }
    return { keyId: claims.keyId, teamId: key.teamId }
  }

  return {
    url: h2.url,
    /** The CA clients must trust to reach this simulator. */
    caPem: (opts.tls ?? simulatorTls()).caPem,
    /** A fresh signing key this simulator trusts: what Apple's developer portal hands out (.p8, Key ID, Team ID). */
    key(o: { environment?: ApnsEnvironment | 'both'; teamId?: string } = {}): ApnsKey {
      const { privateKey, publicKey } = generateKeyPairSync('ec', {
        namedCurve: 'prime256v1',
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        publicKeyEncoding: { type: 'spki', format: 'pem' },
      })
      const keyId = id10()
      const k: Key = { teamId: o.teamId ?? teamId, publicKey, environment: o.environment ?? 'both' }
      keys.set(keyId, k)
      return { p8: privateKey, keyId, teamId: k.teamId, environment: k.environment }
    },
    /** The key is revoked in the portal: tokens it signed answer 403 InvalidProviderToken. */
    revokeKey(keyId: string): void {
      keys.delete(keyId)
    },
    /** Binds a device token to an environment and/or topic: used elsewhere it answers BadDeviceToken / DeviceTokenNotForTopic. */
    registerDevice(token: string, o: { environment?: ApnsEnvironment; topic?: string }): void {
      devices.set(token, o)
    },
    get environment(): ApnsEnvironment {
      return environment
    },
    setEnvironment(env: ApnsEnvironment): void {
      environment = env
    },
    requests: requests.items,
    delivered: delivered.items,
    script: (token: string | RegExp, b: Behaviour) => script.set(token, b),
    /** The token is dead from now on: every notification to it answers 410 Unregistered. */
    markDead: (token: string) => conditions.markDead(token),
    setDefaultBehaviour: (b: Behaviour) => script.setDefault(b),
    waitForRequests: (n: number, timeoutMs = 5_000) => requests.waitFor(n, timeoutMs, 'APNs requests'),
    waitForDelivered: (n: number, timeoutMs = 5_000) => delivered.waitFor(n, timeoutMs, 'accepted notifications'),
    stats: () => ({
      requests: requests.count,
      delivered: delivered.count,
      byReason: { ...byReason },
      providerTokensSeen: providerTokens.size,
      sessionsOpened: h2.sessionsOpened,
    }),
    reset(): void {
      requests.clear()
      delivered.clear()
      script.reset()
    },
    /** GOAWAY to every connection, carrying APNs's JSON reason as debug data, then a graceful close. */
    goaway: (reason = 'Shutdown', o: { refuseInFlight?: boolean } = {}) => h2.goaway(Buffer.from(JSON.stringify({ reason })), o),
    dropAll: () => h2.dropAll(),
    setMaxConcurrentStreams: (n: number) => h2.setMaxConcurrentStreams(n),
    get sessions(): number {
      return h2.sessions.size
    },
    close: () => h2.close(),
  }
}

function stepAnswer(step: string): { status: number; reason: string | null } {
  switch (step) {
    case 'bad-device-token':
      return { status: 400, reason: 'BadDeviceToken' }
    case 'device-token-not-for-topic':
      return { status: 400, reason: 'DeviceTokenNotForTopic' }
    case 'unregistered':
      return { status: 410, reason: 'Unregistered' }
    case 'expired-token':
      return { status: 410, reason: 'ExpiredToken' }
    case 'too-many':
      return { status: 429, reason: 'TooManyRequests' }
    case 'internal':
      return { status: 500, reason: 'InternalServerError' }
    case 'unavailable':
      return { status: 503, reason: 'ServiceUnavailable' }
    case 'shutdown':
      return { status: 503, reason: 'Shutdown' }
    default:
      return { status: 200, reason: null }
  }
}
