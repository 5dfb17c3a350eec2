// APNs provider API over the shared HTTP/2 pool: POST /3/device/<token> with a provider token (apns-token.ts), the
// notification headers and the JSON payload (developer.apple.com "Sending notification requests to APNs",
// "Generating a remote notification"). Host by the credential's environment unless cfg.apnsBaseUrl overrides it.
//   headers   apns-topic = Bundle ID; apns-push-type background when content_available and no text, else alert;
//             apns-priority 10 for lane 0, 5 for lane 1 and always 5 for background (Apple: background must be 5);
//             apns-expiration now + ttl in epoch seconds (0 = once); apns-collapse-id (≤ 64 bytes, checked at the door).
//   payload   aps {alert {title, subtitle, body} by pickTextIos (`en`, `pt`, first alphabetical), sound,
//             mutable-content, content-available}; then the caller's data as JSON values (pm_url among them),
//             pm_msg_id, pm_rcpt (the spec, Payload carried to the device); pm_att = {name: url} media for the SDK's
//             notification service extension (ios_attachments, else {big_picture: url}); and the full language
//             maps (pmx_contents/pmx_headings/pmx_subtitle) when the payload still fits APNs's 4,096 bytes.
import { pickTextIos } from '../message/payload'
import { type Clock, systemClock } from '../core/time'
import type { ApnsCredential } from './credentials'
import { classifyApns, failureOutcome, apnsReason } from './classify'
import { apnsExpiration, rendering } from './fcm-body'
import { ApnsTokens, signingKeyId } from './apns-token'
import type { H2Pool } from '../h2/pool'
import type { Outcome, Provider, Push, Target } from './types'

export const APNS_PRODUCTION = 'https://api.push.apple.com'
export const APNS_SANDBOX = 'https://api.sandbox.push.apple.com'
/** Apple: 4 KB for a regular remote notification payload. */
export const APNS_PAYLOAD_LIMIT_BYTES = 4096

export interface ApnsDeps {
  /** cfg.apnsBaseUrl: null picks Apple's host by the credential's environment. */
  baseUrl?: string | null
  pool: H2Pool
  clock?: Clock
  /** Shared across providers so one signing key has one token (index.ts); default: its own. */
  tokens?: ApnsTokens
}

export interface ApnsRequest {
  headers: Record<string, string>
  payload: Record<string, unknown>
}

/** Headers (without auth and path) and payload for one device: pure, unit-tested. */
export function apnsRequest(cred: Pick<ApnsCredential, 'bundleId'>, push: Push, nowMs: number): ApnsRequest {
  const m = rendering(push)
  const title = pickTextIos(m.headings)
  const subtitle = pickTextIos(m.subtitle)
  const body = pickTextIos(m.contents)
  const background = m.content_available && !title && !subtitle && !body
  const aps: Record<string, unknown> = {}
  if (!background) {
    const alert: Record<string, string> = {}
    if (title) alert.title = title
    if (subtitle) alert.subtitle = subtitle
    if (body !== undefined) alert.body = body
    aps.alert = alert
    if (m.ios_sound !== undefined) aps.sound = m.ios_sound
  }
  if (m.mutable_content) aps['mutable-content'] = 1
  if (m.content_available) aps['content-available'] = 1
  // `aps` and `aps.*` are refused in the caller's data (the spec, Reserved keys), so nothing below can replace it.
  const payload: Record<string, unknown> = { aps, ...m.data, pm_msg_id: push.sendId, pm_rcpt: push.proof }
  const att = m.ios_attachments ?? (m.big_picture ? { big_picture: m.big_picture } : undefined)
  if (att) payload.pm_att = att
  const maps: Record<string, unknown> = { pmx_contents: m.contents }
  if (m.headings) maps.pmx_headings = m.headings
  if (m.subtitle) maps.pmx_subtitle = m.subtitle
  const withMaps = { ...payload, ...maps }
  const fits = Buffer.byteLength(JSON.stringify(withMaps)) <= APNS_PAYLOAD_LIMIT_BYTES
  const headers: Record<string, string> = {
    'apns-topic': cred.bundleId,
    'apns-push-type': background ? 'background' : 'alert',
    'apns-priority': background || push.lane === 1 ? '5' : '10',
    'apns-expiration': String(apnsExpiration(push.ttlS, nowMs)),
  }
  if (m.collapse_id !== undefined) headers['apns-collapse-id'] = m.collapse_id
  return { headers, payload: fits ? withMaps : payload }
}

export class ApnsProvider implements Provider {
  readonly tokens: ApnsTokens
  readonly apnsEnv: 'sandbox' | 'production'
  readonly #origin: string
  readonly #key: string
  readonly #pool: H2Pool
  readonly #clock: Clock

  constructor(
    private readonly cred: ApnsCredential,
    d: ApnsDeps,
  ) {
    this.#pool = d.pool
    this.#clock = d.clock ?? systemClock
    this.tokens = d.tokens ?? new ApnsTokens()
    this.apnsEnv = cred.env
    this.#origin = new URL(d.baseUrl ?? (cred.env === 'production' ? APNS_PRODUCTION : APNS_SANDBOX)).origin
    this.#key = signingKeyId(cred)
  }

  async send(target: Target, push: Push): Promise<Outcome> {
    let req: ApnsRequest
    let body: string
    try {
      req = apnsRequest(this.cred, push, this.#clock())
      body = JSON.stringify(req.payload)
    } catch (err) {
      return { kind: 'rejected', reason: `message not buildable: ${(err as Error).message}` }
    }
    const path = `/3/device/${encodeURIComponent(target.token)}`
    for (let attempt = 0; ; attempt++) {
      const t = this.tokens.get(this.cred, this.#key, this.#clock())
      if ('outcome' in t) return t.outcome
      const r = await this.#pool.request(
        this.#origin,
        { ':method': 'POST', ':path': path, authorization: `bearer ${t.token}`, ...req.headers },
        body,
        { group: this.#key }, // one signing key per connection (TooManyProviderTokenUpdates is per connection)
      )
      if ('failure' in r) return failureOutcome(r)
      if (attempt === 0 && r.status === 403 && apnsReason(r.body) === 'ExpiredProviderToken') {
        this.tokens.invalidate(this.#key, t.token) // older than an hour on Apple's clock: sign anew, try once more
        continue
      }
      return classifyApns(r.status, r.headers, r.body, this.#clock())
    }
  }

  /** The pool is shared by every provider of the process; its owner closes it. */
  close(): Promise<void> {
    return Promise.resolve()
  }
}
