// FCM HTTP v1 simulator: the OAuth2 token endpoint of a service account (RS256 JWT bearer grant) and
// POST /v1/projects/{project}/messages:send, over one TLS server (HTTP/2, and HTTP/1.1 for token clients).
// Answers and error bodies follow firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode and
// developers.google.com/identity/protocols/oauth2/service-account; docs/simulators.md says what is verified.
// `validate_only` messages are checked and answered like FCM does, never delivered.
import { generateKeyPairSync, randomBytes, randomInt } from 'node:crypto'
import jwt from 'jsonwebtoken'
import { type Behaviour, COMMON_STEPS, Script, type Step } from './behaviour'
import { type ConditionOptions, Conditions } from './conditions'
import { checkMessage, fcmError, tokenError } from './fcm-wire'
import { H2Simulator, readBody, Recorder, type Req, type Res, send } from './h2-server'
import { RandomHex } from './random-hex'
import { type SimulatorTls, simulatorTls } from './tls'

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging'
const CLOUD_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'
export const FCM_STEPS = [
  ...COMMON_STEPS,
  'unregistered',
  'invalid-argument',
  'sender-id-mismatch',
  'quota',
  'unavailable',
  'internal',
  'third-party-auth-error',
] as const

export interface FcmOptions extends ConditionOptions {
  /** Certificate to serve (default: a fresh one for this process, see tls.ts). */
  tls?: SimulatorTls
  /** Listening address (default 127.0.0.1 on a free port). */
  host?: string
  port?: number
  /** Called with every message answered 200 (validate_only ones excepted): the simulated device's delivery. */
  onDeliver?: (m: FcmDelivery) => void
  /** Keep headers and bodies of every request (default true); false keeps counts only, for the bench. */
  record?: boolean
  /** SETTINGS_MAX_CONCURRENT_STREAMS advertised per connection (default 100, as Google front ends do). */
  maxConcurrentStreams?: number
  /** Lifetime of issued access tokens (default 3600 s). */
  accessTokenTtlS?: number
  /** Clock for token lifetimes and assertion checks (default Date.now). */
  now?: () => number
  /** Behaviour of tokens without a script (default 'ok'). */
  defaultBehaviour?: Behaviour
}

export interface ServiceAccount {
  type: 'service_account'
  project_id: string
  private_key_id: string
  private_key: string
  client_email: string
  client_id: string
  auth_uri: string
  token_uri: string
  auth_provider_x509_cert_url: string
  client_x509_cert_url: string
  universe_domain: string
}

export interface FcmRequest {
  at: number
  httpVersion: string
  project: string
  headers: Record<string, string | string[] | undefined>
  // biome-ignore lint/suspicious/noExplicitAny: the message as the client sent it
  body: any
  /** message.token, or 'topic:<t>' / 'condition:<c>' */
  target: string | null
  /** Status answered (null: dropped or never answered). */
  status: number | null
  step: string
  clientEmail: string | null
  validateOnly: boolean
}

/** A message FCM accepted for delivery. */
export interface FcmDelivery {
  project: string
  /** message.token, or 'topic:<t>' / 'condition:<c>' */
  target: string
  // biome-ignore lint/suspicious/noExplicitAny: the message as the client sent it (checked by checkMessage)
  message: any
  /** The name answered, `projects/<p>/messages/<id>`. */
  name: string
  /** When the answer was written (ms since epoch). */
  at: number
}

export interface TokenRequest {
  at: number
  status: number
  clientEmail: string | null
  error?: string
  claims?: Record<string, unknown>
}

interface Account {
  projectId: string
  keyId: string
  publicKey: string
}
interface Issued {
  clientEmail: string
  projectId: string
  scopes: Set<string>
  expiresAtMs: number
}

export type FcmSimulator = Awaited<ReturnType<typeof startFcmSimulator>>

/**
 * The RSA key pairs of the service accounts this process's simulators make: a simulator's n-th account takes the
 * process's n-th pair. Generating a pair costs about 100 ms of CPU, and a test run makes hundreds of accounts (it was
 * the largest single CPU cost of the test suite). The accounts of one simulator still each have a key of their own,
 * as Google's do, and a simulator trusts only the accounts it made, whatever their key.
 */
const accountKeys: Array<{ privateKey: string; publicKey: string }> = []

/**
 * Key pairs made in advance, taken when none is held yet: the test suite's fixture (test/fakes/fcm.ts), so its test
 * processes do not each generate the same dozens of pairs.
 */
export function useAccountKeys(pairs: ReadonlyArray<{ privateKey: string; publicKey: string }>): void {
  if (accountKeys.length === 0) accountKeys.push(...pairs)
}

function accountKey(n: number): { privateKey: string; publicKey: string } {
  while (accountKeys.length <= n)
    accountKeys.push(
      generateKeyPairSync('rsa', {
        modulusLength: 2048,
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        publicKeyEncoding: { type: 'spki', format: 'pem' },
      }),
    )
  return accountKeys[n] as { privateKey: string; publicKey: string }
}

export async function startFcmSimulator(opts: FcmOptions = {}) {
  const now = opts.now ?? Date.now
  const ttlS = opts.accessTokenTtlS ?? 3600
  const script = new Script(FCM_STEPS, opts.defaultBehaviour ?? 'ok')
  const conditions = new Conditions(opts, new Set(FCM_STEPS))
  const requests = new Recorder<FcmRequest>(opts.record ?? true)
  const delivered = new Recorder<FcmRequest>(opts.record ?? true)
  const tokenRequests: TokenRequest[] = []
  const accounts = new Map<string, Account>()
  /** Accounts made so far: the next takes the process's next key pair (accountKey). */
  let made = 0
  const issued = new Map<string, Issued>()
  const byStatus: Record<number, number> = {}
  let tokensIssued = 0
  let seq = 0
  const ids = new RandomHex(8)

  const h2 = await H2Simulator.start({
    tls: opts.tls ?? simulatorTls(),
    host: opts.host,
    port: opts.port,
    allowHTTP1: true,
    maxConcurrentStreams: opts.maxConcurrentStreams ?? 100,
    onRequest: (req, res) => {
      const path = req.url.split('?')[0] ?? ''
      if (req.method === 'POST' && path === '/token') return void onToken(req, res)
      const m = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(path)
      if (req.method === 'POST' && m) return void onSend(req, res, decodeURIComponent(m[1] as string))
      send(res, 404, {}, fcmError(404, 'NOT_FOUND', `The requested URL ${path} was not found on this server.`))
    },
  })
  const tokenUri = `${h2.url}/token`

  function answer(res: Res, status: number, headers: Record<string, string>, body: unknown): void {
    byStatus[status] = (byStatus[status] ?? 0) + 1
    send(res, status, headers, body)
  }

  async function onToken(req: Req, res: Res): Promise<void> {
    const raw = await readBody(req, 64 * 1024)
    const form = new URLSearchParams(raw?.toString('utf8') ?? '')
    const rec: TokenRequest = { at: now(), status: 400, clientEmail: null }
    tokenRequests.push(rec)
    const refuse = (error: string, description: string) => {
      rec.error = error
      send(res, 400, {}, tokenError(error, description))
    }
    if (form.get('grant_type') !== JWT_BEARER)
      return refuse('unsupported_grant_type', `Invalid grant_type: ${form.get('grant_type') ?? ''}`)
    const assertion = form.get('assertion')
    if (!assertion) return refuse('invalid_request', 'Missing required parameter: assertion')
    const decoded = jwt.decode(assertion, { complete: true })
    if (!decoded || typeof decoded.payload === 'string') return refuse('invalid_grant', 'Invalid JWT Signature.')
    const claims = decoded.payload as Record<string, unknown>
    rec.claims = claims
    rec.clientEmail = typeof claims.iss === 'string' ? claims.iss : null
    const acct = rec.clientEmail ? accounts.get(rec.clientEmail) : undefined
    if (!acct) return refuse('invalid_grant', 'Invalid grant: account not found')
    if (decoded.header.alg !== 'RS256') return refuse('invalid_grant', 'Invalid JWT Signature.')
    if (decoded.header.kid !== undefined && decoded.header.kid !== acct.keyId)
      return refuse('invalid_grant', 'Invalid JWT Signature.')
    try {
      jwt.verify(assertion, acct.publicKey, { algorithms: ['RS256'], ignoreExpiration: true, ignoreNotBefore: true })
    } catch {
      return refuse('invalid_grant', 'Invalid JWT Signature.')
    }
    if (claims.aud !== tokenUri)
      return refuse('invalid_grant', `Invalid JWT: Failed audience check. The right audience is ${tokenUri}`)
    const nowS = Math.floor(now() / 1000)
    const { iat, exp } = claims
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > 3600 || exp <= nowS || iat > nowS + 300) {
      return refuse(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      )
    }
    const scopes = new Set(typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [])
    if (scopes.size === 0) return refuse('invalid_scope', 'Invalid OAuth scope or ID token audience provided.')
    const accessToken = `ya29.c.fake-${randomBytes(24).toString('base64url')}`
    issued.set(accessToken, {
      clientEmail: rec.clientEmail as string,
      projectId: acct.projectId,
      scopes,
      expiresAtMs: now() + ttlS * 1000,
    })
    tokensIssued++
    rec.status = 200
    send(res, 200, {}, { access_token: accessToken, expires_in: ttlS, token_type: 'Bearer' })
  }

  async function onSend(req: Req, res: Res, project: string): Promise<void> {
    const raw = await readBody(req, 1024 * 1024)
    const rec: FcmRequest = {
      at: now(),
      httpVersion: req.httpVersion,
      project,
      // Counts only (the bench): the copy of every request's headers is a measurable part of the simulator's cost.
      headers: requests.keep ? { ...req.headers } : {},
      body: null,
      target: null,
      status: null,
      step: 'refused',
      clientEmail: null,
      validateOnly: false,
    }
    const refuse = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      rec.status = status
      requests.push(rec)
      answer(res, status, headers, body)
    }
    const bearer = /^Bearer (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1]
    const grant = bearer ? issued.get(bearer) : undefined
    if (!grant || grant.expiresAtMs <= now()) {
      return refuse(
        401,
        fcmError(
          401,
          'UNAUTHENTICATED',
          'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        ),
        { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
      )
    }
    rec.clientEmail = grant.clientEmail
    if (!grant.scopes.has(FCM_SCOPE) && !grant.scopes.has(CLOUD_SCOPE)) {
      return refuse(403, fcmError(403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.'))
    }
    if (grant.projectId !== project) {
      return refuse(
        403,
        fcmError(
          403,
          'PERMISSION_DENIED',
          `Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/${project}' (or it may not exist).`,
        ),
      )
    }
    let body: unknown
    try {
      body = JSON.parse(raw?.toString('utf8') ?? '')
    } catch {
      return refuse(400, fcmError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unexpected token.'))
    }
    rec.body = body
    const checked = checkMessage(body)
    if ('error' in checked) return refuse(400, checked.error)
    rec.target = checked.target
    rec.validateOnly = checked.validateOnly
    const name = checked.validateOnly
      ? `projects/${project}/messages/fake_message_id`
      : `projects/${project}/messages/0:${Date.now()}${String(++seq).padStart(6, '0')}%${ids.next()}`
    if (checked.validateOnly) {
      rec.step = 'validate-only'
      return refuse(200, { name })
    }
    const step = conditioned(script.next(checked.target), checked.target)
    rec.step = step.name
    rec.status = statusOf(step.name)
    requests.push(rec)
    const message = (body as { message: unknown }).message
    h2.perform(
      step,
      req,
      res,
      () => {
        const a = stepAnswer(step.name, step.arg, name)
        if (a.status === 200) {
          delivered.push(rec)
          // The device's delivery must not break the provider's answer (a device's fault is not FCM's)
          if (opts.onDeliver) {
            try {
              opts.onDeliver({ project, target: checked.target, message, name, at: now() })
            } catch {}
          }
        }
        answer(res, a.status, a.headers, a.body)
      },
      conditions.delay(),
    )
  }

  /** A scripted success may still meet the network's conditions: a dead token, a drawn transient failure. */
  function conditioned(step: Step, target: string): Step {
    if (step.name !== 'ok') return step
    if (conditions.isDead(target)) return { ...step, name: 'unregistered' }
    const failure = conditions.failure()
    return failure ? { ...step, name: failure } : step
  }

  return {
    url: h2.url,
    tokenUri,
    /** The CA clients must trust to reach this simulator. */
    caPem: (opts.tls ?? simulatorTls()).caPem,
    /** A service account JSON (an RSA key none of this simulator's other accounts has) that this simulator trusts;
     *  its token_uri points here. */
    serviceAccount(projectId = 'pombo-test'): ServiceAccount {
      const { privateKey, publicKey } = accountKey(made++)
      const keyId = randomBytes(20).toString('hex')
      const clientEmail = `pombo-fcm-${randomBytes(3).toString('hex')}@${projectId}.iam.gserviceaccount.com`
      accounts.set(clientEmail, { projectId, keyId, publicKey })
      return {
        type: 'service_account',
        project_id: projectId,
        private_key_id: keyId,
        private_key: privateKey,
        client_email: clientEmail,
        client_id: String(randomInt(10 ** 11, 10 ** 12)) + String(randomInt(10 ** 9, 10 ** 10)),
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: tokenUri,
        auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
        client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(clientEmail)}`,
        universe_domain: 'googleapis.com',
      }
    },
    /** The account's key is deleted: its assertions are refused and its access tokens stop working. */
    revoke(clientEmail: string): void {
      accounts.delete(clientEmail)
      for (const [t, g] of issued) if (g.clientEmail === clientEmail) issued.delete(t)
    },
    /** Every issued access token expires now (the next send answers 401 until a new token is fetched). */
    expireAccessTokens(): void {
      for (const g of issued.values()) g.expiresAtMs = 0
    },
    /** Every messages:send attempt, in arrival order (including refused ones, with their status). */
    requests: requests.items,
    /** Accepted (200) messages, in the order they were answered. */
    delivered: delivered.items,
    tokenRequests,
    get tokensIssued(): number {
      return tokensIssued
    },
    script: (token: string | RegExp, b: Behaviour) => script.set(token, b),
    /** The token is dead from now on: every message to it answers 404 UNREGISTERED. */
    markDead: (token: string) => conditions.markDead(token),
    setDefaultBehaviour: (b: Behaviour) => script.setDefault(b),
    waitForRequests: (n: number, timeoutMs = 5_000) => requests.waitFor(n, timeoutMs, 'messages:send requests'),
    waitForDelivered: (n: number, timeoutMs = 5_000) => delivered.waitFor(n, timeoutMs, 'accepted messages'),
    stats: () => ({
      requests: requests.count,
      delivered: delivered.count,
      byStatus: { ...byStatus },
      tokensIssued,
      sessionsOpened: h2.sessionsOpened,
    }),
    /** Forgets recorded requests and scripts (accounts and tokens stay). */
    reset(): void {
      requests.clear()
      delivered.clear()
      tokenRequests.length = 0
      script.reset()
    },
    /** GOAWAY to every connection; see H2Fake.goaway for refuseInFlight. */
    goaway: (o: { refuseInFlight?: boolean } = {}) => h2.goaway(undefined, o),
    dropAll: () => h2.dropAll(),
    setMaxConcurrentStreams: (n: number) => h2.setMaxConcurrentStreams(n),
    get sessions(): number {
      return h2.sessions.size
    },
    close: () => h2.close(),
  }
}

function statusOf(step: string): number | null {
  return step === 'drop' || step === 'drop-session' || step === 'hang' ? null : stepAnswer(step, undefined, '').status
}

/** The real answers (ErrorCode reference; bodies as FCM renders them). */
function stepAnswer(
  step: string,
  arg: number | undefined,
  name: string,
): { status: number; headers: Record<string, string>; body: unknown } {
  const retry: Record<string, string> = arg === undefined ? {} : { 'retry-after': String(arg) }
  switch (step) {
    case 'unregistered':
      return { status: 404, headers: {}, body: fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED') }
    case 'invalid-argument':
      return {
        status: 400,
        headers: {},
        body: fcmError(
          400,
          'INVALID_ARGUMENT',
          'The registration token is not a valid FCM registration token',
          'INVALID_ARGUMENT',
        ),
      }
    case 'sender-id-mismatch':
      return { status: 403, headers: {}, body: fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH') }
    case 'third-party-auth-error':
      return {
        status: 401,
        headers: {},
        body: fcmError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'),
      }
    case 'quota':
      return {
        status: 429,
        headers: { 'retry-after': String(arg ?? 1) },
        body: fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for sending messages.', 'QUOTA_EXCEEDED'),
      }
    case 'unavailable':
      return {
        status: 503,
        headers: retry,
        body: fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'),
      }
    case 'internal':
      return { status: 500, headers: {}, body: fcmError(500, 'INTERNAL', 'Internal error encountered.', 'INTERNAL') }
    default:
      return { status: 200, headers: {}, body: { name } }
  }
}
