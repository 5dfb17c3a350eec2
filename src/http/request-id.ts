// The caller's correlation id: an incoming `X-Request-Id`, else the trace id of a W3C `traceparent`. Both are hostile
// input like any header: a value that does not match its format exactly is ignored (never echoed, never logged).

/** Visible ASCII, 1-128 characters: nothing a log line or a header could be split or smuggled with. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/**
 * W3C Trace Context §3.2: `version-traceid-parentid-flags`, lower-case hex. Version `ff` is invalid; an all-zero
 * trace id or parent id is invalid; a future version may append fields after a dash (§3.2.4), version 00 may not.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-[\x21-\x7e]*)?$/
const ZEROS_32 = '0'.repeat(32)
const ZEROS_16 = '0'.repeat(16)

export function traceIdOf(traceparent: string): string | null {
  if (traceparent.length < 55 || traceparent.length > 512) return null
  const m = TRACEPARENT.exec(traceparent)
  if (!m) return null
  const [, version, traceId, parentId, rest] = m as unknown as [string, string, string, string, string | undefined]
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null
  if (traceId === ZEROS_32 || parentId === ZEROS_16) return null
  return traceId
}

/** The id to carry from the incoming headers (uWS answers '' for an absent header), or null. */
export function correlationIdOf(xRequestId: string, traceparent: string): string | null {
  if (xRequestId !== '' && REQUEST_ID.test(xRequestId)) return xRequestId
  if (traceparent !== '') return traceIdOf(traceparent)
  return null
}
