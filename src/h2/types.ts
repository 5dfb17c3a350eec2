// The HTTP/2 pool's public shapes (h2-pool.ts): what a request resolves with, and the options.
import type { IncomingHttpHeaders } from 'node:http2'

export interface H2Response {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
}
export interface H2Failure {
  status: 0
  /** timeout: no answer in time; connection: the stream or session died; closed: the pool was closed. */
  failure: 'timeout' | 'connection' | 'closed'
  detail: string
}
export type H2Result = H2Response | H2Failure

export interface H2PoolOptions {
  /** Sessions per origin (and group); default 2. A session carries as many requests as the peer's stream limit
   *  allows, so a second one opens only when the first is ¾ full (each extra session splits the writes). */
  sessionsPerOrigin?: number
  /** Per-request deadline, including time spent waiting for a free stream; default 10 s. */
  timeoutMs?: number
  /** Extra CA certificates (PEM) trusted besides Node's roots. */
  ca?: string | string[]
  /** Ceiling on streams per session whatever the peer allows (its default is unlimited); default 1,000. */
  maxStreamsCap?: number
  /** After a request times out, the session must answer a PING within this long or it is destroyed; default 3 s. */
  pingTimeoutMs?: number
  /** A session without streams for this long is closed (one APNs group per signing key adds up); default 5 min. */
  idleMs?: number
}

export interface RequestOptions {
  /** Sessions are shared only within one (origin, group). */
  group?: string
  timeoutMs?: number
}

export interface GroupStats {
  sessions: number
  active: number
  waiting: number
  maxStreams: number[]
}

export function failure(kind: H2Failure['failure'], detail: string): H2Failure {
  return { status: 0, failure: kind, detail }
}
