// The only place that writes answers: JSON bodies, the error envelope (the spec, Errors), X-Pm-Request-Id on every answer
// (Pombo's own id of the call), and X-Request-Id echoing the caller's id when one came in (src/http/request-id.ts).
import type { HttpResponse } from 'uWebSockets.js'
import type { ApiError } from '../core/errors'
import type { Request } from './request'
import { type FileBody, streamFile } from './stream-file'

export interface Reply {
  status: number
  /** An object is sent as JSON; a Buffer or string as it is. */
  body?: unknown
  headers?: Readonly<Record<string, string>>
  contentType?: string
  /** A file streamed as the body (with backpressure); `body` is then ignored. */
  file?: FileBody
}

export function ok(body: unknown, headers?: Record<string, string>): Reply {
  return { status: 200, body, headers }
}

export const JSON_TYPE = 'application/json; charset=utf-8'

/** A body serialised once, for answers that never change. */
export function constantJson(body: unknown): Reply {
  return Object.freeze({ status: 200, body: JSON.stringify(body), contentType: JSON_TYPE })
}

export function created(body: unknown): Reply {
  return { status: 201, body }
}

const STATUS_LINES: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  302: '302 Found',
  303: '303 See Other',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
}

/** The envelope every error answers with: `{errors: [erro], explain: {causa, como_corrigir, request_id, ...}}`. */
export function errorReply(err: ApiError, requestId: string): Reply {
  const t = err.texts()
  return {
    status: err.status,
    body: { errors: [t.erro], explain: { causa: t.causa, como_corrigir: t.como_corrigir, request_id: requestId, ...t.extra } },
    headers: err.headers(),
  }
}

/** the spec, Apps: a malformed `{id}` is refused before the handler, outside the envelope. */
export function malformedIdReply(): Reply {
  return { status: 400, body: { erro: 'id inválido: esperado um UUID.' } }
}

/**
 * Writes the answer; a streamed file answers a promise that settles when the last byte is handed to the socket.
 * `closeConnection` (while the server stops): the connection is shut down gracefully once the answer is sent, so the
 * final close cannot reset it while the client still reads the answer.
 */
export function write(res: HttpResponse, req: Request, reply: Reply, closeConnection = false): void | Promise<void> {
  if (req.aborted) {
    reply.file?.handle.close().catch(() => {})
    return
  }
  if (reply.file) {
    return streamFile(res, req, reply.file, () => {
      if (reply.status !== 200) res.writeStatus(STATUS_LINES[reply.status] ?? String(reply.status))
      res.writeHeader('X-Pm-Request-Id', req.id)
      if (req.correlationId !== null) res.writeHeader('X-Request-Id', req.correlationId)
      if (reply.contentType) res.writeHeader('Content-Type', reply.contentType)
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k] as string)
    })
  }
  let payload: string | Buffer = ''
  let type = reply.contentType
  if (reply.body === undefined) {
    payload = ''
  } else if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) {
    payload = reply.body
  } else {
    payload = JSON.stringify(reply.body)
    type ??= JSON_TYPE
  }
  res.cork(() => {
    // uWS answers 200 unless told otherwise; skipping the call is measurable on the cheapest routes.
    if (reply.status !== 200) res.writeStatus(STATUS_LINES[reply.status] ?? String(reply.status))
    res.writeHeader('X-Pm-Request-Id', req.id)
    if (req.correlationId !== null) res.writeHeader('X-Request-Id', req.correlationId)
    if (type) res.writeHeader('Content-Type', type)
    if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k] as string)
    res.end(payload, closeConnection)
  })
}
