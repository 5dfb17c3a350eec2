// One HTTP exchange with the service, reduced to what the SDK does next: done (2xx, or 304 for `pending`), try
// again later (no network, timeout, 408, 429, 5xx; with the service's Retry-After when it gave one), or refused
// for good (any other 4xx: the service looked at the request and will never accept it; its first error text is the
// reason). Never throws. A success may also say that the service does not know the player_id the request named (the
// device was deleted there): see rejoin.ts.
import { retryAfterMs } from './backoff.js'

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>

export type Outcome =
  | { kind: 'ok'; status: number; body: unknown; etag: string | null; unknownDevice: boolean }
  | { kind: 'retry'; status: number | null; retryAfterMs: number | undefined; reason: string }
  | { kind: 'refused'; status: number; reason: string; body: unknown }

export interface Transport {
  fetch: FetchLike
  baseUrl: string
  timeoutMs: number
  now: () => number
  /** The last response's Date header and the monotonic instant it arrived (null until one is seen). */
  serverAt: { date: number; mono: number } | null
}

/** The service's mark on an answer about a player_id it has no device for (a receipt counted, an in-app poll). */
const UNKNOWN_DEVICE_HEADER = 'x-pm-dispositivo'
const UNKNOWN_DEVICE = 'desconhecido'

const mono = (): number | undefined =>
  typeof performance === 'object' && typeof performance.now === 'function' ? performance.now() : undefined

/**
 * The service's idea of now: its last Date header carried forward on the monotonic clock, used when the device clock
 * is more than a minute off (the service refuses in-app events dated over 5 minutes ahead, and a phone's clock can
 * be far off or be changed by its owner); otherwise the device clock.
 */
export function serviceNow(t: Transport): number {
  const now = t.now()
  const m = mono()
  if (!t.serverAt || m === undefined) return now
  const est = t.serverAt.date + (m - t.serverAt.mono)
  return Math.abs(est - now) > 60_000 ? Math.round(est) : now
}

export interface CallOptions {
  method: 'GET' | 'POST'
  body?: unknown
  headers?: Record<string, string>
}

/** The first text of the service's error envelope `{errors: [text], explain: {...}}`, else the status line. */
function reasonOf(status: number, body: unknown, text: string): string {
  if (body && typeof body === 'object') {
    const errors = (body as { errors?: unknown }).errors
    if (Array.isArray(errors) && typeof errors[0] === 'string') return `${status}: ${errors[0]}`
  }
  return `${status}: ${text.slice(0, 200) || 'sem corpo'}`
}

export async function call(t: Transport, path: string, o: CallOptions): Promise<Outcome> {
  const ctl = typeof AbortController === 'function' ? new AbortController() : undefined
  const timer = ctl ? setTimeout(() => ctl.abort(), t.timeoutMs) : undefined
  const headers: Record<string, string> = { accept: 'application/json', ...o.headers }
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  try {
    const res = await t.fetch(t.baseUrl + path, {
      method: o.method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      signal: ctl?.signal,
    })
    const text = await res.text()
    const date = Date.parse(res.headers.get('date') ?? '')
    const m = mono()
    if (Number.isFinite(date) && m !== undefined) t.serverAt = { date, mono: m }
    let body: unknown
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      body = undefined
    }
    const s = res.status
    if ((s >= 200 && s < 300) || s === 304) {
      const unknownDevice = res.headers.get(UNKNOWN_DEVICE_HEADER)?.trim().toLowerCase() === UNKNOWN_DEVICE
      return { kind: 'ok', status: s, body, etag: res.headers.get('etag'), unknownDevice }
    }
    if (s === 408 || s === 429 || s >= 500) {
      return {
        kind: 'retry',
        status: s,
        retryAfterMs: retryAfterMs(res.headers.get('retry-after'), t.now()),
        reason: reasonOf(s, body, text),
      }
    }
    return { kind: 'refused', status: s, reason: reasonOf(s, body, text), body }
  } catch (err) {
    const reason = ctl?.signal.aborted ? `sem resposta em ${t.timeoutMs} ms` : `rede: ${(err as Error)?.message ?? String(err)}`
    return { kind: 'retry', status: null, retryAfterMs: undefined, reason }
  } finally {
    if (timer !== undefined) clearTimeout(timer)
  }
}
