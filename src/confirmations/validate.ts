// PUT /api/v1/confirmacoes at the door (the spec, Service and channel configuration): `url` is checked before `modo`,
// so an invalid URL is the answer even when the mode is unknown too. Nothing is written before this passes.
import { ApiError } from '../core/errors'

export const CONFIRM_MODES = ['consulta', 'webhook', 'grpc'] as const
export type ConfirmMode = (typeof CONFIRM_MODES)[number]

export interface ConfigChange {
  url?: string
  mode?: ConfirmMode
}

const URL_MAX = 2048
/** `https://`, a host (and port) with no `@`, backslash or space, then a path, query or fragment without spaces:
 * the same text docs/openapi.yaml's ConfirmationChange.url pattern accepts. */
const HTTPS_AUTHORITY = /^https:\/\/[^/\\?#@\s]+([/?#]\S*)?$/i

export function parseChange(body: Record<string, unknown>): ConfigChange {
  const out: ConfigChange = {}
  if (body.url !== undefined && body.url !== null) out.url = parseUrl(body.url)
  if (body.modo !== undefined && body.modo !== null) {
    if (typeof body.modo !== 'string' || !(CONFIRM_MODES as readonly string[]).includes(body.modo)) {
      throw new ApiError('CONFIRM_MODE_UNKNOWN', { valid: CONFIRM_MODES })
    }
    out.mode = body.modo as ConfirmMode
  }
  return out
}

function parseUrl(v: unknown): string {
  if (typeof v !== 'string' || v.length > URL_MAX) throw new ApiError('WEBHOOK_URL_NOT_HTTPS')
  // The URL parser repairs what it reads (`https:host`, `https:/host`, `https:\\host`, `https://@host` all become
  // https://host/); the text itself must already be an https URL with a host and no user part.
  if (!HTTPS_AUTHORITY.test(v)) throw new ApiError('WEBHOOK_URL_NOT_HTTPS')
  let u: URL
  try {
    u = new URL(v)
  } catch {
    throw new ApiError('WEBHOOK_URL_NOT_HTTPS')
  }
  // Credentials in the URL would be stored in clear and sent on every attempt: the secret signs instead.
  if (u.protocol !== 'https:' || !u.hostname || u.username || u.password) throw new ApiError('WEBHOOK_URL_NOT_HTTPS')
  return u.toString()
}
