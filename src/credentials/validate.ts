// Validation of delivery credentials (the spec, Delivery credentials table) and of the optional google-services.json
// (the spec, App, firebase_params). Pure: text in, opened credential + non-secret meta out, or one CredentialError whose
// message is one line and never quotes a secret.
import { createPrivateKey, type KeyObject } from 'node:crypto'
import type { ApnsCredential, FcmCredential, Platform } from '../providers/credentials'
import { checkTokenUri, simulatorTargetRefusal } from '../providers/endpoints'
import { findUnstorable, pathText } from '../core/json-guard'

/** Bad credential input; the message is one line, safe to print (it never contains key material). */
export class CredentialError extends Error {}

export type { Platform }
export const PLATFORMS: readonly Platform[] = ['fcm', 'apns']
export type ApnsEnv = ApnsCredential['env']
export const APNS_ENVS: readonly ApnsEnv[] = ['sandbox', 'production']

/** What may be shown about a stored FCM credential (the `meta` column; CLI output). */
export interface FcmMeta {
  project_id: string
  client_email: string
  token_uri: string
  /** Google's id of the key inside the file (public: it names the key's certificate), when the file has it. */
  private_key_id?: string
  /** A simulator credential's (`pombo simulate`). */
  simulator?: true
}

/** What may be shown about a stored APNs credential. */
export interface ApnsMeta {
  key_id: string
  team_id: string
  bundle_id: string
  env: ApnsEnv
  /** A simulator credential's (`pombo simulate`). */
  simulator?: true
}

export type CredentialOf<P extends Platform> = P extends 'fcm' ? FcmCredential : ApnsCredential
export type MetaOf<P extends Platform> = P extends 'fcm' ? FcmMeta : ApnsMeta

/** The five public parameters served by GET /api/v1/apps/{id}/firebase_params as `android` (the spec, App). */
export interface FirebaseParams {
  project_id: string
  sender_id: string
  app_id: string
  api_key: string
  package_name: string
}

/** Google's service-account e-mail suffix (spec: "the provider's service-account suffix"). */
export const SERVICE_ACCOUNT_SUFFIX = '.iam.gserviceaccount.com'
/** Used when the service-account JSON has no token_uri (Google's clients do the same). */
export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token'

const PEM_BEGIN = '-----BEGIN PRIVATE KEY-----'
const PEM_END = '-----END PRIVATE KEY-----'
const ALNUM10 = /^[A-Za-z0-9]{10}$/
/** Reverse-DNS: at least two dot-separated labels of letters, digits and hyphens (com.example.app). */
const REVERSE_DNS = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/
const FIREBASE_APP_ID = /^1:\d+:android:[0-9A-Za-z]+$/

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim() !== ''

function parseKey(pem: string): KeyObject | null {
  try {
    return createPrivateKey(pem)
  } catch {
    return null
  }
}

/**
 * The service-account JSON (spec table, Android and web push). A file that is not JSON but one line is taken for
 * the legacy server key, refused by name; its text is never echoed (it is a secret too).
 */
/** Parts of these files are stored and served back (firebase_params, meta): only values kept exactly are accepted. */
function storable(doc: unknown, what: string): void {
  const p = findUnstorable(doc, 32)
  if (p) throw new CredentialError(`${what}: ${pathText(p.path) || 'the document'} ${p.motivo}`)
}

/**
 * With `fcmBaseUrl` (the CLI and the dashboard: cfg.fcmBaseUrl) the token_uri must also be one Pombo may call
 * (src/providers/endpoints.ts), refused here naming the file; CredentialService.save checks it again for every path.
 */
export function parseServiceAccount(
  text: string,
  what = 'SERVICE_ACCOUNT.json',
  fcmBaseUrl?: string,
): { credential: FcmCredential; meta: FcmMeta } {
  const body = text.replace(/^\uFEFF/, '').trim()
  if (body === '') throw new CredentialError(`${what}: the file is empty`)
  let doc: unknown
  try {
    doc = JSON.parse(body)
  } catch {
    if (!body.includes('\n')) {
      throw new CredentialError(
        `${what}: this looks like the legacy FCM server key, which is not accepted; use a service-account JSON (Firebase console > Project settings > Service accounts > Generate new private key)`,
      )
    }
    throw new CredentialError(`${what}: not valid JSON; expected the service-account JSON downloaded from the Firebase console`)
  }
  if (typeof doc === 'string') {
    throw new CredentialError(
      `${what}: this looks like the legacy FCM server key, which is not accepted; use a service-account JSON`,
    )
  }
  if (!isObject(doc)) throw new CredentialError(`${what}: expected a JSON object (the service-account file)`)
  storable(doc, what)
  if (isObject(doc.project_info) && Array.isArray(doc.client)) {
    throw new CredentialError(
      `${what}: this is google-services.json (the app's config); pass the service-account JSON here and this file with --config`,
    )
  }

  if (!nonEmpty(doc.project_id)) throw new CredentialError(`${what}: project_id must be a non-empty string`)
  const email = doc.client_email
  if (typeof email !== 'string' || !email.includes('@') || !email.toLowerCase().endsWith(SERVICE_ACCOUNT_SUFFIX)) {
    throw new CredentialError(`${what}: client_email must contain @ and end with ${SERVICE_ACCOUNT_SUFFIX}`)
  }
  const key = doc.private_key
  if (typeof key !== 'string' || !key.includes(PEM_BEGIN) || !key.includes(PEM_END)) {
    throw new CredentialError(`${what}: private_key must be a PEM with the ${PEM_BEGIN} block`)
  }
  // "With its line breaks": the parsed string holds real newlines (written \n inside the JSON text). A key whose
  // newlines were lost, or escaped twice (a literal backslash-n after parsing), is not the file Google issued.
  if (!key.includes('\n')) {
    throw new CredentialError(
      `${what}: private_key has lost its line breaks${key.includes('\\n') ? ' (\\n escaped twice)' : ''}; use the file exactly as downloaded`,
    )
  }
  const parsed = parseKey(key)
  if (parsed?.asymmetricKeyType !== 'rsa') {
    throw new CredentialError(`${what}: private_key is not a readable RSA private key (FCM signs its token requests with RS256)`)
  }

  let tokenUri = DEFAULT_TOKEN_URI
  if (doc.token_uri !== undefined) {
    let url: URL | null = null
    try {
      url = typeof doc.token_uri === 'string' ? new URL(doc.token_uri) : null
    } catch {}
    if (url?.protocol !== 'https:') throw new CredentialError(`${what}: token_uri must be an https URL`)
    tokenUri = doc.token_uri as string
  }
  if (fcmBaseUrl !== undefined) {
    const allowed = checkTokenUri(doc.token_uri, fcmBaseUrl)
    if (!allowed.ok) throw new CredentialError(`${what}: ${allowed.reason}`)
  }
  // The mark of `pombo simulate`'s own credentials (src/providers/credentials.ts): never taken from a file.
  if (Object.hasOwn(doc, 'simulator')) {
    throw new CredentialError(`${what}: "simulator" is not a service-account field (it marks pombo simulate's own credentials)`)
  }

  const credential: FcmCredential = {
    ...doc,
    project_id: doc.project_id,
    client_email: email,
    private_key: key,
    token_uri: tokenUri,
  }
  const meta: FcmMeta = { project_id: doc.project_id, client_email: email, token_uri: tokenUri }
  if (nonEmpty(doc.private_key_id)) meta.private_key_id = doc.private_key_id
  return { credential, meta }
}

/**
 * google-services.json → the five public parameters. The file lists every app of the Firebase project; the Android
 * ones are the clients with a package name. Several of them: `packageName` chooses (spec: package_name required
 * when the project has several Android apps).
 */
export function parseGoogleServices(text: string, packageName?: string, what = 'google-services.json'): FirebaseParams {
  let doc: unknown
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''))
  } catch {
    throw new CredentialError(`${what}: not valid JSON`)
  }
  if (!isObject(doc) || !isObject(doc.project_info) || !Array.isArray(doc.client)) {
    throw new CredentialError(`${what}: expected project_info and client[] (the file Firebase gives for an Android app)`)
  }
  storable(doc, what)
  const info = doc.project_info
  if (!nonEmpty(info.project_id)) throw new CredentialError(`${what}: project_info.project_id must be a non-empty string`)
  if (typeof info.project_number !== 'string' || !/^\d+$/.test(info.project_number)) {
    throw new CredentialError(`${what}: project_info.project_number must be a numeric string (the sender id)`)
  }

  const android = doc.client.filter(
    (c): c is Record<string, unknown> & { client_info: { android_client_info: { package_name: string } } } =>
      isObject(c) &&
      isObject(c.client_info) &&
      isObject(c.client_info.android_client_info) &&
      nonEmpty(c.client_info.android_client_info.package_name),
  )
  if (android.length === 0) throw new CredentialError(`${what}: no Android app in client[]`)
  const names = android.map((c) => c.client_info.android_client_info.package_name)
  let client: (typeof android)[number] | undefined
  if (packageName !== undefined) {
    client = android.find((c) => c.client_info.android_client_info.package_name === packageName)
    if (!client) throw new CredentialError(`--package: ${packageName} is not in ${what} (it has ${names.join(', ')})`)
  } else if (android.length > 1) {
    throw new CredentialError(`${what} has several Android apps (${names.join(', ')}); choose one with --package NAME`)
  } else {
    client = android[0]
  }
  if (!client) throw new CredentialError(`${what}: no Android app in client[]`)
  const pkg = client.client_info.android_client_info.package_name

  const appId = (client.client_info as Record<string, unknown>).mobilesdk_app_id
  if (typeof appId !== 'string' || !FIREBASE_APP_ID.test(appId)) {
    throw new CredentialError(`${what}: client ${pkg}: mobilesdk_app_id must have the shape 1:<number>:android:<hash>`)
  }
  const keys = client.api_key
  const apiKey = Array.isArray(keys) && isObject(keys[0]) ? keys[0].current_key : undefined
  if (!nonEmpty(apiKey)) throw new CredentialError(`${what}: client ${pkg}: api_key[0].current_key must be a non-empty string`)

  return { project_id: info.project_id, sender_id: info.project_number, app_id: appId, api_key: apiKey, package_name: pkg }
}

export interface ApnsInput {
  p8: string
  keyId: string | undefined
  teamId: string | undefined
  bundleId: string | undefined
  env: string | undefined
}

/** How each input is named in a refusal: the CLI's flags, or the dashboard's field labels. */
export interface ApnsLabels {
  p8: string
  keyId: string
  teamId: string
  bundleId: string
  env: string
}
export const CLI_APNS_LABELS: ApnsLabels = {
  p8: '--p8',
  keyId: '--key-id',
  teamId: '--team-id',
  bundleId: '--bundle-id',
  env: '--env',
}

/** The iOS rows of the spec table; the .p8 must also be a P-256 key, since APNs provider tokens are ES256. */
export function parseApns(
  input: ApnsInput,
  labels: ApnsLabels = CLI_APNS_LABELS,
): { credential: ApnsCredential; meta: ApnsMeta } {
  const what = labels.p8
  const p8 = input.p8.replace(/^\uFEFF/, '')
  if (!p8.includes(PEM_BEGIN) || !p8.includes(PEM_END)) {
    throw new CredentialError(`${what}: expected the .p8 file contents with the ${PEM_BEGIN} block`)
  }
  const key = parseKey(p8)
  if (key?.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new CredentialError(`${what}: not a readable P-256 (ES256) private key; use the .p8 file Apple issued`)
  }
  const keyId = input.keyId ?? ''
  if (!ALNUM10.test(keyId)) throw new CredentialError(`${labels.keyId}: expected exactly 10 letters or digits`)
  const teamId = input.teamId ?? ''
  if (!ALNUM10.test(teamId)) throw new CredentialError(`${labels.teamId}: expected exactly 10 letters or digits`)
  const bundleId = input.bundleId ?? ''
  if (!REVERSE_DNS.test(bundleId))
    throw new CredentialError(`${labels.bundleId}: expected reverse-DNS form, e.g. com.example.app`)
  const env = parseApnsEnv(input.env, labels.env)
  return { credential: { p8, keyId, teamId, bundleId, env }, meta: { key_id: keyId, team_id: teamId, bundle_id: bundleId, env } }
}

/**
 * The Android upload: the service account and, optionally, the app's google-services.json. Both must be of one
 * Firebase project: the service account sends through its own project, and tokens minted under another project's
 * sender id would all be refused, so a mismatch is a setup mistake caught here rather than at the first send.
 */
export function parseFcmUpload(
  account: { text: string; what?: string; fcmBaseUrl?: string },
  config?: { text: string; what?: string; packageName?: string },
): { credential: FcmCredential; meta: FcmMeta; params?: FirebaseParams } {
  const { credential, meta } = parseServiceAccount(account.text, account.what, account.fcmBaseUrl)
  if (!config) return { credential, meta }
  const params = parseGoogleServices(config.text, config.packageName, config.what)
  if (params.project_id !== meta.project_id) {
    throw new CredentialError(
      `${config.what ?? 'google-services.json'} is for project ${params.project_id} but the service account is for ${meta.project_id}; use files of the same Firebase project`,
    )
  }
  return { credential, meta, params }
}

/**
 * The addresses inside a credential about to be stored, whatever path it came by: the token_uri against the FCM base
 * URL in effect (the instance's, or a simulator credential's own simulator), and a simulator credential only where
 * the instance allows simulators, with an https loopback address. The same rule is applied again at every use
 * (src/providers/fcm-auth.ts, src/providers/index.ts providerRoute).
 */
export function checkStorable(
  platform: Platform,
  credential: FcmCredential | ApnsCredential,
  cfg: { fcmBaseUrl: string; allowSimulators: boolean },
): void {
  const target = credential.simulator
  if (target !== undefined) {
    if (!cfg.allowSimulators) {
      throw new CredentialError('simulator credentials are stored only where PM_ALLOW_SIMULATORS is on')
    }
    const bad = simulatorTargetRefusal(target.url)
    if (bad) throw new CredentialError(bad)
  }
  if (platform !== 'fcm') return
  const allowed = checkTokenUri((credential as FcmCredential).token_uri, target?.url ?? cfg.fcmBaseUrl)
  if (!allowed.ok) throw new CredentialError(`service account: ${allowed.reason}`)
}

export function parseApnsEnv(v: string | undefined, what = 'environment'): ApnsEnv {
  if (v !== 'sandbox' && v !== 'production') throw new CredentialError(`${what}: expected sandbox or production`)
  return v
}

export function parsePlatform(v: string | undefined): Platform {
  if (v !== 'fcm' && v !== 'apns') throw new CredentialError(`platform: expected fcm or apns, got "${v ?? ''}"`)
  return v
}
