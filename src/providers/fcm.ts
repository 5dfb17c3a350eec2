// FCM HTTP v1 over the shared HTTP/2 pool: POST {base}/v1/projects/{project_id}/messages:send with a Bearer access
// token from the service account (fcm-auth.ts) and one device's message (fcm-body.ts). Answers become Outcomes
// (classify.ts); a 401 for our access token drops it and retries once with a fresh one before answering credential.
import type { OutgoingHttpHeaders } from 'node:http2'
import { type Clock, systemClock } from '../core/time'
import type { FcmCredential } from './credentials'
import { classifyFcm, failureOutcome, fcmTokenRefused, parseFcmError } from './classify'
import { FcmAuth } from './fcm-auth'
import { fcmMessage } from './fcm-body'
import type { H2Pool } from '../h2/pool'
import type { Outcome, Provider, Push, Target } from './types'

export interface FcmDeps {
  /** cfg.fcmBaseUrl: https://fcm.googleapis.com, or a fake's address. */
  baseUrl: string
  pool: H2Pool
  clock?: Clock
  /** Shared when several providers use one credential (index.ts); default: its own. */
  auth?: FcmAuth
}

/**
 * Stand-ins for the two per-device values of a body. The proof's stand-in has a real proof's length, so the body's
 * byte budget (fcm-body.ts) comes out the same.
 */
const TOKEN_MARK = '\u0001pm-token\u0001'
const PROOF_MARK = `\u0001${'p'.repeat(30)}\u0001`
const TEMPLATES_MAX = 64
/** Messages seen once lately (held strongly, so bounded): a message seen again within this many is a fan-out. */
const SEEN_ONCE_MAX = 64

/**
 * One serialised body per (message, device kind, remaining ttl, second), split where the token and the proof go: a
 * device's body is then a few string joins, not a build and a JSON.stringify of the whole message (a fifth of a
 * worker's CPU per delivery went there).
 */
interface Template {
  parts: string[]
  slots: Array<'token' | 'proof'>
}

function makeTemplate(json: string): Template {
  const tokenJson = JSON.stringify(TOKEN_MARK)
  const proofJson = JSON.stringify(PROOF_MARK)
  const parts: string[] = []
  const slots: Array<'token' | 'proof'> = []
  let rest = json
  for (;;) {
    const ti = rest.indexOf(tokenJson)
    const pi = rest.indexOf(proofJson)
    if (ti < 0 && pi < 0) break
    const isToken = ti >= 0 && (pi < 0 || ti < pi)
    const at = isToken ? ti : pi
    parts.push(rest.slice(0, at))
    slots.push(isToken ? 'token' : 'proof')
    rest = rest.slice(at + (isToken ? tokenJson : proofJson).length)
  }
  parts.push(rest)
  return { parts, slots }
}

export class FcmProvider implements Provider {
  /** Per message object (one per send in the actor), so a template can never outlive or mix up its message. */
  readonly #templates = new WeakMap<object, Map<string, Template | null>>()
  /** Messages rendered once and not yet again: a single-device send never gets a templates map of its own. */
  readonly #seenOnce = new Set<object>()
  readonly auth: FcmAuth
  readonly #origin: string
  readonly #path: string
  readonly #pool: H2Pool
  readonly #clock: Clock
  #headersFor: { token: string; headers: OutgoingHttpHeaders } | undefined

  constructor(cred: FcmCredential, d: FcmDeps) {
    this.#clock = d.clock ?? systemClock
    this.#pool = d.pool
    const base = new URL(d.baseUrl)
    // The token_uri is checked against this base URL before every token request (src/providers/endpoints.ts).
    this.auth = d.auth ?? new FcmAuth(cred, d.pool, { clock: this.#clock, fcmBaseUrl: d.baseUrl })
    this.#origin = base.origin
    const prefix = base.pathname.replace(/\/+$/, '')
    this.#path = `${prefix}/v1/projects/${encodeURIComponent(cred.project_id)}/messages:send`
  }

  /** One header object per access token (the request copies it; building one per delivery was pure garbage). */
  #headers(token: string): OutgoingHttpHeaders {
    if (this.#headersFor?.token !== token) {
      this.#headersFor = {
        token,
        headers: { ':method': 'POST', ':path': this.#path, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      }
    }
    return this.#headersFor.headers
  }

  #body(target: Target, push: Push): string {
    const now = this.#clock()
    let byKey = this.#templates.get(push.message)
    if (!byKey) {
      // Most sends are one device: their message is rendered once, directly, with no bookkeeping but a place in a
      // small set. Seen again while there, it is a fan-out and gets its templates from then on.
      if (!this.#seenOnce.has(push.message)) {
        if (this.#seenOnce.size >= SEEN_ONCE_MAX) this.#seenOnce.clear()
        this.#seenOnce.add(push.message)
        return JSON.stringify(fcmMessage(target, push, now))
      }
      this.#seenOnce.delete(push.message)
      byKey = new Map()
      this.#templates.set(push.message, byKey)
    }
    const key = `${push.sendId}:${target.deviceType}:${push.ttlS}:${push.lane}:${Math.floor(now / 1000)}`
    let tpl = byKey.get(key)
    if (tpl === undefined) {
      // A body's first rendering is built directly and its template only from the second: most sends are one
      // device, and a template used once costs a second build and a split on top of the body.
      if (byKey.size >= TEMPLATES_MAX) byKey.clear()
      byKey.set(key, null)
      return JSON.stringify(fcmMessage(target, push, now))
    }
    if (tpl === null) {
      tpl = makeTemplate(JSON.stringify(fcmMessage({ ...target, token: TOKEN_MARK }, { ...push, proof: PROOF_MARK }, now)))
      byKey.set(key, tpl)
    }
    let out = tpl.parts[0] as string
    for (let i = 0; i < tpl.slots.length; i++) {
      out += JSON.stringify(tpl.slots[i] === 'token' ? target.token : push.proof) + (tpl.parts[i + 1] as string)
    }
    return out
  }

  async send(target: Target, push: Push): Promise<Outcome> {
    let body: string
    try {
      body = this.#body(target, push)
    } catch (err) {
      return { kind: 'rejected', reason: `message not buildable: ${(err as Error).message}` }
    }
    for (let attempt = 0; ; attempt++) {
      let token = this.auth.current()
      if (token === undefined) {
        const t = await this.auth.token()
        if ('outcome' in t) return t.outcome
        token = t.token
      }
      const r = await this.#pool.request(this.#origin, this.#headers(token), body)
      if ('failure' in r) return failureOutcome(r)
      if (attempt === 0 && r.status === 401 && fcmTokenRefused(r.status, parseFcmError(r.body))) {
        this.auth.invalidate(token) // revoked or expired early on Google's side: one fresh token, one more try
        continue
      }
      return classifyFcm(r.status, r.headers, r.body, this.#clock())
    }
  }

  /** The pool is shared by every provider of the process; its owner closes it. */
  close(): Promise<void> {
    return Promise.resolve()
  }
}
