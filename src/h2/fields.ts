// A response's header fields, checked as RFC 9113 §8.2 and §8.3.2 require before anything reads them: `:status` once
// and first, no other pseudo-header, lower-case token names, values without NUL, CR, LF or edge whitespace, no
// connection-specific field. A failure is a reason of ours (never the peer's text): the session makes it a
// PROTOCOL_ERROR. The fields are already bounded in count and size by the decoder (limits.ts).
import type { IncomingHttpHeaders } from 'node:http2'

/** A field name: an RFC 9110 token in lower case (§8.2.1 forbids upper case in HTTP/2). */
const NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/
/** §8.2.1: no NUL, CR or LF anywhere, no space or tab at either end. */
const BAD_VALUE = /[\0\r\n]|^[ \t]|[ \t]$/
/** §8.2.2: fields of a connection, meaningless (and malformed) in HTTP/2; `te` is allowed only as "trailers". */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'])

export interface ResponseHead {
  status: number
  headers: IncomingHttpHeaders
  /** content-length as announced, -1 when absent: the body must match it (§8.1.1). */
  contentLength: number
}

/** Null when the regular field is well-formed, else why not. */
function fieldProblem(name: string, value: string): string | null {
  if (!NAME.test(name)) return 'a field name that is not a lower-case token'
  if (BAD_VALUE.test(value)) return `a bad value in field ${name}`
  if (CONNECTION_SPECIFIC.has(name) || (name === 'te' && value !== 'trailers')) return `connection-specific field ${name}`
  return null
}

/** The response head of `fields` (a decoded block), or the reason it is malformed. */
export function responseHead(fields: ReadonlyArray<readonly [string, string]>): ResponseHead | string {
  const headers: IncomingHttpHeaders = Object.create(null)
  let status = -1
  let contentLength = -1
  let regular = false
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 58 /* ':' */) {
      if (regular) return 'a pseudo-header after a regular field'
      if (name !== ':status') return 'a pseudo-header other than :status in a response'
      if (status >= 0) return 'a second :status'
      if (!/^[1-9][0-9][0-9]$/.test(value) || value === '101') return 'a :status that is not a three-digit code (101 excluded)'
      status = Number(value)
      headers[':status'] = value
      continue
    }
    regular = true
    const problem = fieldProblem(name, value)
    if (problem) return problem
    if (name === 'content-length') {
      if (!/^[0-9]{1,15}$/.test(value)) return 'a content-length that is not a number'
      if (contentLength >= 0 && contentLength !== Number(value)) return 'two different content-lengths'
      contentLength = Number(value)
    }
    // Repeated fields are joined as node:http2 joins them; the decoder's limits bound how long the result can get.
    const had = headers[name]
    if (had === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (Array.isArray(had)) had.push(value)
    else headers[name] = `${had}, ${value}`
  }
  if (status < 0) return 'no :status'
  return { status, headers, contentLength }
}

/** Null when a trailer block is well-formed (§8.1: no pseudo-header), else why not. */
export function trailersProblem(fields: ReadonlyArray<readonly [string, string]>): string | null {
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 58) return 'a pseudo-header in trailers'
    const problem = fieldProblem(name, value)
    if (problem) return problem
  }
  return null
}
