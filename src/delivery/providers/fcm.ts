// FCM HTTP v1 over the shared HTTP/2 pool: POST {base}/v1/projects/{project_id}/messages:send with a Bearer access
// token from the service account (fcm-auth.ts) and one device's message (fcm-body.ts). Answers become Outcomes
// (classify.ts); a 401 for our access token drops it and retries once with a fresh one before answering credential.
import { type Clock, systemClock } from '../../time'
import type { FcmCredential } from '../credentials-types'
import { classifyFcm, failureOutcome, fcmTokenRefused, parseFcmError } from './classify'
import { FcmAuth } from './fcm-auth'
import { fcmMessage } from './fcm-body'
import type { H2Pool } from './h2-pool'
import type { Outcome, Provider, Push, Target } from './types'

export interface FcmDeps {
  /** cfg.fcmBaseUrl: https://fcm.googleapis.com, or a fake's address. */
  baseUrl: string
  pool: H2Pool
  clock?: Clock
  /** Shared when several providers use one credential (index.ts); default: its own. */
  auth?: FcmAuth
}

export class FcmProvider implements Provider {
  readonly auth: FcmAuth
  readonly #origin: string
  readonly #path: string
  readonly #pool: H2Pool
  readonly #clock: Clock

  constructor(cred: FcmCredential, d: FcmDeps) {
    this.#clock = d.clock ?? systemClock
    this.#pool = d.pool
    this.auth = d.auth ?? new FcmAuth(cred, d.pool, { clock: this.#clock })
    const base = new URL(d.baseUrl)
    this.#origin = base.origin
    const prefix = base.pathname.replace(/\/+$/, '')
    this.#path = `${prefix}/v1/projects/${encodeURIComponent(cred.project_id)}/messages:send`
  }

  async send(target: Target, push: Push): Promise<Outcome> {
    let body: string
    try {
      body = JSON.stringify(fcmMessage(target, push, this.#clock()))
    } catch (err) {
      return { kind: 'rejected', reason: `message not buildable: ${(err as Error).message}` }
    }
    for (let attempt = 0; ; attempt++) {
      const t = await this.auth.token()
      if ('outcome' in t) return t.outcome
      const r = await this.#pool.request(this.#origin, {
        ':method': 'POST',
        ':path': this.#path,
        authorization: `Bearer ${t.token}`,
        'content-type': 'application/json',
      }, body)
      if ('failure' in r) return failureOutcome(r)
      if (attempt === 0 && r.status === 401 && fcmTokenRefused(r.status, parseFcmError(r.body))) {
        this.auth.invalidate(t.token) // revoked or expired early on Google's side: one fresh token, one more try
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
