// POST /api/v1/receipts (the spec, Receipts): public, the proof is the credential. Fields are validated, the app checked
// (unknown 400, paused 403), the proof verified in memory in constant time, and only then is the receipt handed to
// the group-commit writer, which is the first to look at the send. A wrong proof, an unknown send and a send past
// the 90-day window all answer the same 403: a caller without the proof learns nothing about which sends exist. A
// receipt of a device deleted since the push left still counts; its answer carries the unknown-device mark.
import type { AppDirectory } from '../apps/directory'
import type { Config } from '../core/config'
import { verifyProof } from '../message/proof'
import { UNKNOWN_DEVICE_HEADERS } from '../http/unknown-device'
import { ApiError } from '../core/errors'
import type { IpLimiter } from '../http/ip-limit'
import { constantJson } from '../http/reply'
import type { Router } from '../http/router'
import type { Metrics } from '../ops/metrics'
import type { ReceiptKeys } from './keys'
import { parseReceipt } from './validate'
import type { ReceiptWriter } from './writer'

export interface ReceiptRouteDeps {
  cfg: Config
  dir: AppDirectory
  publicLimiter: IpLimiter
  receipts: { keys: ReceiptKeys; writer: ReceiptWriter }
  metrics?: Metrics
}

const COUNTED = constantJson({ ok: true })
const DUPLICATE = constantJson({ ok: true, duplicado: true })
const LATE = constantJson({ ok: true, tardio: true })
const ANSWERS = { counted: COUNTED, duplicate: DUPLICATE, late: LATE } as const

export function receiptRoutes(r: Router, d: ReceiptRouteDeps): void {
  const pub = { bodyLimit: d.cfg.limits.deviceBodyBytes, ipLimit: d.publicLimiter, hot: true, cors: true }
  const m = d.metrics?.receipts

  r.post('/api/v1/receipts', pub, async (req) => {
    const input = parseReceipt(await req.json(), d.cfg.limits.rcptMaxChars)
    const app = await d.dir.app(input.appId)
    if (!app) throw new ApiError('APP_ID_UNKNOWN')
    if (app.paused) throw new ApiError('APP_PAUSED')
    const key = await d.receipts.keys.get(app.id)
    if (!key || !verifyProof(key, input.sendId, input.deviceId, input.rcpt)) throw new ApiError('RECEIPT_PROOF_INVALID')
    const { outcome, unknownDevice } = await d.receipts.writer.submit(input)
    m?.labels(input.event, outcome).inc()
    return unknownDevice ? { ...ANSWERS[outcome], headers: UNKNOWN_DEVICE_HEADERS } : ANSWERS[outcome]
  })
}
