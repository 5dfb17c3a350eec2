// The dashboard's connection test (the spec: "a connection test for each credential"): it really talks to the
// provider with the stored credential and nothing is delivered.
//   FCM   an OAuth access token from the account's token_uri (the delivery engine's own FcmAuth), then a
//         `validate_only: true` message to a topic: FCM checks the credential and the message and delivers nothing.
//   APNs  a push to a placeholder device token signed with the key (the engine's own ApnsTokens): `BadDeviceToken`
//         means Apple accepted the key, team and topic and only refused the made-up token.
// A refusal is told in words a person understands, with the provider's own reason code in front (e.g.
// BadEnvironmentKeyIdInToken). Nothing else of a remote answer is ever shown: no message, no description, no body,
// no network error text (issue #31: a page that echoes what an address answered is a probe of that address).
import type { Db } from '../db/pool'
import { ApnsTokens, signingKeyId } from '../providers/apns-token'
import { APNS_PRODUCTION, APNS_SANDBOX } from '../providers/apns'
import { apnsReason, parseFcmError } from '../providers/classify'
import { FcmAuth } from '../providers/fcm-auth'
import { providerRoute } from '../providers/index'
import type { Outcome } from '../providers/types'
import type { H2Pool } from '../h2/pool'
import type { H2Failure } from '../h2/types'
import { type Clock, systemClock } from '../core/time'
import type { Vault } from '../core/vault'
import { loadCredential } from './store'
import type { Platform } from './validate'

export type ConnectionResult = { ok: true } | { ok: false; motivo: string }

/** A device token of the right form (64 hex) that no device has. */
export const PLACEHOLDER_APNS_TOKEN = '0'.repeat(64)
/** The topic of FCM's dry run: nobody subscribes to it, and validate_only sends nothing anyway. */
export const TEST_TOPIC = 'pombo-teste-de-conexao'

/** What a provider's reason means for the person looking at the dashboard. */
const EXPLAIN: Record<string, string> = {
  BadEnvironmentKeyIdInToken:
    'a chave não vale no ambiente escolhido (sandbox × production). Troque o Ambiente da credencial ou use uma chave do outro ambiente.',
  BadEnvironmentKeyInToken:
    'a chave não vale no ambiente escolhido (sandbox × production). Troque o Ambiente da credencial ou use uma chave do outro ambiente.',
  InvalidProviderToken:
    'a Apple recusou a assinatura. Confira o Key ID, o Team ID e se o arquivo .p8 é o dessa chave (ou se ela foi revogada).',
  ExpiredProviderToken: 'a Apple considerou a assinatura vencida. Confira o relógio do servidor.',
  MissingProviderToken: 'a Apple não recebeu a assinatura da chave.',
  DeviceTokenNotForTopic: 'o Bundle ID não corresponde a esta chave ou time. Confira o Bundle ID.',
  TopicDisallowed: 'o Bundle ID não é permitido para esta chave. Confira o Bundle ID e o Team ID.',
  BadTopic: 'o Bundle ID é inválido para a Apple. Confira o Bundle ID.',
  MissingTopic: 'falta o Bundle ID.',
  Forbidden: 'a Apple recusou a chave.',
  TooManyProviderTokenUpdates: 'a Apple pediu para esperar antes de um novo teste. Tente de novo em alguns minutos.',
  InternalServerError: 'erro interno da Apple. Tente de novo em alguns minutos.',
  ServiceUnavailable: 'serviço da Apple indisponível. Tente de novo em alguns minutos.',
  UNAUTHENTICATED: 'o Google recusou o token de acesso da conta de serviço.',
  PERMISSION_DENIED:
    'a conta de serviço não tem permissão para enviar pelo FCM neste projeto. Confira o projeto e o papel da conta.',
  SENDER_ID_MISMATCH: 'a conta de serviço é de outro projeto Firebase.',
  THIRD_PARTY_AUTH_ERROR: 'o FCM recusou a credencial APNs/web push configurada no projeto Firebase.',
  NOT_FOUND: 'o projeto Firebase não foi encontrado. Confira o project_id da conta de serviço.',
  INVALID_ARGUMENT: 'o FCM recusou a mensagem de teste.',
  QUOTA_EXCEEDED: 'cota do FCM excedida. Tente de novo em alguns minutos.',
  UNAVAILABLE: 'FCM indisponível. Tente de novo em alguns minutos.',
  INTERNAL: 'erro interno do FCM. Tente de novo em alguns minutos.',
  invalid_grant: 'o Google recusou a conta de serviço (chave apagada, revogada ou de outra conta).',
  invalid_client: 'o Google não reconhece a conta de serviço.',
  invalid_scope: 'o Google recusou o escopo pedido.',
}

export function explainReason(reason: string): string {
  const code = reason.replace(/^oauth /, '').split(/[:\s]/)[0] ?? ''
  const words = EXPLAIN[code]
  return words ? `${reason} — ${words}` : reason
}

function failed(reason: string): ConnectionResult {
  return { ok: false, motivo: explainReason(reason) }
}

/** A provider's reason code as it may be shown: FCM's and gRPC's enums, APNs's reasons, OAuth's error codes. */
const CODE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

/** `v` when it has the form of a reason code; null for anything else a remote answer put there. */
export function reasonCode(v: string | undefined): string | null {
  return v !== undefined && CODE.test(v) ? v : null
}

/** No answer: only which of our failure kinds (timeout, connection, closed), never the error's text. */
function network(kind: H2Failure['failure']): ConnectionResult {
  return { ok: false, motivo: `sem resposta do provedor (${kind}). Confira a rede e tente de novo.` }
}

/**
 * The token step's outcome (src/providers/fcm-auth.ts): a failure to reach the endpoint shows its kind only; the
 * endpoint's refusal `oauth <code>[: <description>]` shows the code only; anything else is our own words (the
 * token_uri refused by the rule, a key that does not sign, a simulator credential refused).
 */
function tokenFailed(o: Outcome): ConnectionResult {
  const reason = 'reason' in o ? o.reason : o.kind
  const kind = /^(timeout|connection|closed):/.exec(reason)?.[1] as H2Failure['failure'] | undefined
  if (o.kind === 'transient' && kind) return network(kind)
  if (reason.startsWith('oauth ')) return failed((reason.split(': ')[0] as string).slice(0, 80))
  return failed(reason)
}

export interface ConnectionTestDeps {
  db: Db
  vault: Vault
  pool: H2Pool
  fcmBaseUrl: string
  apnsBaseUrl: string | null
  clock?: Clock
  /** cfg.allowSimulators, and the pools of simulator credentials (src/providers/index.ts providerRoute). */
  allowSimulators?: boolean
  simulatorPool?: (ca: string) => H2Pool
}

export class ConnectionTester {
  readonly #clock: Clock

  constructor(private readonly d: ConnectionTestDeps) {
    this.#clock = d.clock ?? systemClock
  }

  /** null when the app has no credential for the platform. */
  async test(appId: string, platform: Platform): Promise<ConnectionResult | null> {
    return platform === 'fcm' ? this.#fcm(appId) : this.#apns(appId)
  }

  async #fcm(appId: string): Promise<ConnectionResult | null> {
    const stored = await loadCredential(this.d.db, this.d.vault, appId, 'fcm')
    if (!stored) return null
    const cred = stored.credential
    const route = providerRoute(cred, this.d)
    if ('refused' in route) return failed(route.refused)
    const base = new URL(route.fcmBaseUrl)
    // As in delivery, the token_uri is checked against the base URL before the request (src/providers/endpoints.ts).
    const auth = new FcmAuth(cred, route.pool, { clock: this.#clock, fcmBaseUrl: route.fcmBaseUrl })
    const t = await auth.token()
    if ('outcome' in t) return tokenFailed(t.outcome)
    const path = `${base.pathname.replace(/\/+$/, '')}/v1/projects/${encodeURIComponent(cred.project_id)}/messages:send`
    const body = JSON.stringify({ validate_only: true, message: { topic: TEST_TOPIC, data: { pm_teste: '1' } } })
    const r = await route.pool.request(
      base.origin,
      { ':method': 'POST', ':path': path, authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body,
    )
    if ('failure' in r) return network(r.failure)
    if (r.status >= 200 && r.status < 300) return { ok: true }
    const e = parseFcmError(r.body)
    return failed(reasonCode(e.errorCode) ?? reasonCode(e.status) ?? `HTTP ${r.status}`)
  }

  async #apns(appId: string): Promise<ConnectionResult | null> {
    const stored = await loadCredential(this.d.db, this.d.vault, appId, 'apns')
    if (!stored) return null
    const cred = stored.credential
    const route = providerRoute(cred, this.d)
    if ('refused' in route) return failed(route.refused)
    const origin = new URL(route.apnsBaseUrl ?? (cred.env === 'production' ? APNS_PRODUCTION : APNS_SANDBOX)).origin
    const now = this.#clock()
    // A token of its own (not the engine's shared cache): the test must sign with exactly the stored key.
    const t = new ApnsTokens().get(cred, signingKeyId(cred), now)
    if ('outcome' in t) return failed('reason' in t.outcome ? t.outcome.reason : t.outcome.kind)
    const r = await route.pool.request(
      origin,
      {
        ':method': 'POST',
        ':path': `/3/device/${PLACEHOLDER_APNS_TOKEN}`,
        authorization: `bearer ${t.token}`,
        'apns-topic': cred.bundleId,
        'apns-push-type': 'alert',
        'apns-priority': '5',
        'apns-expiration': '0',
      },
      JSON.stringify({ aps: { alert: { body: 'Teste de conexão do Pombo' } } }),
      { group: `teste:${signingKeyId(cred)}` },
    )
    if ('failure' in r) return network(r.failure)
    const reason = reasonCode(apnsReason(r.body))
    // BadDeviceToken: key, team and topic accepted, only the placeholder token refused. 200 (a test double that
    // accepts any token) proves the same.
    if (r.status === 200 || (r.status === 400 && reason === 'BadDeviceToken')) return { ok: true }
    return failed(reason ?? `HTTP ${r.status}`)
  }
}
