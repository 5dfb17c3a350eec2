// The redelivery ladder (the spec, Events): pure, so the policy is table-tested apart from the dispatcher.
import type { Webhook } from '../core/config'

export type Policy = Pick<Webhook, 'retryDelaysMs' | 'maxAttempts' | 'disableAfter'>

export interface FailureState {
  /** Failed attempts of this event, this one included. */
  attempts: number
  /** Consecutive failed deliveries of the destination, this one included. */
  consecutive: number
}

export interface FailureDecision {
  /** The event leaves the queue into webhook_abandoned (its attempts are spent). */
  abandon: boolean
  /** The destination stops until `pombo webhook enable`. */
  disable: boolean
  /** Wait before the next attempt (of this event, or of the next one after an abandon). */
  delayMs: number
}

/** 1 s, 10 s, 60 s, 5 min, then every 15 min: the wait after the n-th failed attempt is the n-th step or the last. */
export function delayAfter(policy: Policy, attempts: number): number {
  const steps = policy.retryDelaysMs
  return steps[Math.min(Math.max(attempts, 1), steps.length) - 1] ?? 0
}

export function onFailure(policy: Policy, s: FailureState): FailureDecision {
  const abandon = s.attempts >= policy.maxAttempts
  return {
    abandon,
    disable: s.consecutive >= policy.disableAfter,
    // After an abandon the next event is due at once (it has no failed attempt of its own yet).
    delayMs: abandon ? 0 : delayAfter(policy, s.attempts),
  }
}
