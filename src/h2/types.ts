// The HTTP/2 client's public shapes: what a request resolves with, the options, the interface both clients share (our
// pool, pool.ts, and the node:http2 adapter, node-pool.ts), and the error a session ends with when the peer breaks the
// protocol or a limit.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2'
import type { H2Limits } from './limits'

export interface H2Response {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
}
export interface H2Failure {
  status: 0
  /**
   * timeout: no answer in time; connection: the connection or stream died (reset, refused, unreachable); protocol:
   * the peer broke HTTP/2 or one of our limits (the session ended with GOAWAY, or an answer body was too long);
   * closed: the pool was closed.
   */
  failure: 'timeout' | 'connection' | 'protocol' | 'closed'
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
  /** What a peer may make a session hold or do (limits.ts); each unset one takes its default. */
  limits?: Partial<H2Limits>
  /** H2Pool's engine: our own sessions ('pombo', the default) or node:http2 behind the same interface ('node'). */
  client?: 'pombo' | 'node'
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

/** A pooled HTTP/2 client: our own (H2Pool) or node:http2 behind the same shape (NodeH2Pool). */
export interface H2Client {
  /** One request; headers carry ':method' and ':path'. Resolves exactly once, never rejects. */
  request(origin: string, headers: OutgoingHttpHeaders, body?: string | Buffer, o?: RequestOptions): Promise<H2Result>
  /** Live sessions and streams per origin key (and group). */
  stats(): Record<string, GroupStats>
  /** Fails whatever is waiting or in flight, ends every session; later requests resolve 'closed'. */
  close(): Promise<void>
  /** Sessions ever opened. */
  readonly sessionsOpened: number
  /** Streams the server refused unprocessed and that were sent again. */
  readonly streamsResent: number
}

/** A session ended by us because the peer broke HTTP/2 or a limit: `code` is the GOAWAY error code we sent. */
export class H2ProtocolError extends Error {
  override name = 'H2ProtocolError'
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

export function failure(kind: H2Failure['failure'], detail: string): H2Failure {
  return { status: 0, failure: kind, detail }
}
