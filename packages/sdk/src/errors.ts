// What the SDK reports through `onError` instead of throwing: the host's push handler must never fail because the
// service is away, the storage is full or a push is not one of ours.
import type { Job } from './outbox.js'

export type PomboErrorKind = 'register' | 'token' | 'receipt' | 'inapp' | 'storage' | 'push' | 'display'

export interface PomboError {
  kind: PomboErrorKind
  message: string
  /** The HTTP status when the service answered. */
  status?: number
  /** The queued job a drop concerns. */
  job?: Job
  cause?: unknown
}

export type ErrorHandler = (err: PomboError) => void

/** Calls the host's handler, which itself must not be able to break the SDK. */
export function reporter(handler: ErrorHandler | undefined): ErrorHandler {
  return (err) => {
    try {
      handler?.(err)
    } catch {
      // the host's own handler failed: nothing sensible left to tell
    }
  }
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
