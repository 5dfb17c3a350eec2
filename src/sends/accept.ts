// One send request taken from its body to its answer, after the caller is known: the steps of
// POST /api/v1/notifications once the key and the app are checked. The API route and the dashboard's composer both
// call it, so a send written in the dashboard meets the same validation (400/422 texts), the same idempotency
// (header form of the key), the same quota and free-plan gate and the same audience count as one sent through the API.
import type { AppRecord } from '../apps/store'
import type { Config } from '../core/config'
import { ApiError, fieldError } from '../core/errors'
import type { Clock } from '../core/time'
import { type Body, byteLength } from '../core/validation'
import { bodyHash } from './canonical'
import type { SendAnswer, SendService } from './service'
import { parseSend } from './validate'

export interface AcceptDeps {
  cfg: Config
  sends: SendService
  clock: Clock
  /** pombo_sends_accepted_total, per lane. */
  accepted?: ReadonlyArray<{ inc(): void }> | null
}

export interface SendRequest {
  app: AppRecord
  /** The parsed JSON body. */
  body: Body
  /** The body's bytes as received (their canonical hash is the idempotency comparison). */
  raw: Buffer
  /** The `Idempotency-Key` header, as received. */
  idempotencyHeader?: string
  /** The `X-Pm-Priority` header, as received. */
  priorityHeader?: string
  dryRun: boolean
}

/**
 * The idempotency key (the spec, Sends: header, then body `idempotency_key`, then `external_id`). Every source present
 * is checked, used or not: at most `maxBytes` UTF-8 bytes, and the header in visible ASCII only (HTTP header bytes
 * beyond ASCII cannot be read back exactly, so two different keys could become one).
 */
export function idempotencyKeyOf(
  header: string | undefined,
  idempotencyKey: string | undefined,
  externalId: string | undefined,
  maxBytes: number,
): string | undefined {
  if (header !== undefined && header !== '') {
    if (!/^[\x20-\x7e]+$/.test(header)) throw fieldError('Idempotency-Key', 'aceita apenas caracteres ASCII visíveis')
    if (header.length > maxBytes) throw fieldError('Idempotency-Key', `excede ${maxBytes} bytes`)
  }
  if (idempotencyKey !== undefined && byteLength(idempotencyKey) > maxBytes)
    throw fieldError('idempotency_key', `excede ${maxBytes} bytes`)
  if (externalId !== undefined && byteLength(externalId) > maxBytes) throw fieldError('external_id', `excede ${maxBytes} bytes`)
  return header || idempotencyKey || externalId || undefined
}

/** Validates (400/422, the payload size included, before any I/O) and creates the send, or counts it (dry run). */
export async function acceptSend(d: AcceptDeps, r: SendRequest): Promise<SendAnswer> {
  if (r.app.paused) throw new ApiError('APP_PAUSED')
  const input = parseSend(r.body, { priority: r.priorityHeader }, d.clock(), d.cfg.limits)
  const idemKey = idempotencyKeyOf(
    r.idempotencyHeader,
    input.idempotencyKey,
    input.externalId,
    d.cfg.limits.idempotencyKeyMaxBytes,
  )
  const answer = await d.sends.create({
    app: r.app,
    input,
    bodyHash: idemKey ? bodyHash(r.raw) : '',
    idemKey,
    dryRun: r.dryRun,
  })
  if (!answer.replay && !r.dryRun) d.accepted?.[answer.lane]?.inc()
  return answer
}
