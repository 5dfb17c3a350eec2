// Send routes (the spec, Sends): POST creates, the GETs read. Reads are capped per app per second; a repeat read of one
// send within a second is answered from a local cache and not counted.
import type { Auth } from '../apps/auth'
import type { AppRecord } from '../apps/store'
import type { Config } from '../core/config'
import type { Db } from '../db/pool'
import type { Metrics } from '../ops/metrics'
import { ApiError, fieldError } from '../core/errors'
import { JSON_TYPE, ok, type Reply } from '../http/reply'
import type { Request } from '../http/request'
import { isUuid, type Router } from '../http/router'
import type { WindowCounter } from '../redis/window-counter'
import type { Clock } from '../core/time'
import { acceptSend } from './accept'
import { readNewest, readOne, readShape, windowStats } from './read'
import type { SendService } from './service'
import { statsWindow } from '../core/validation'

export interface SendRouteDeps {
  cfg: Config
  db: Db
  auth: Auth
  sends: SendService
  readQuota: WindowCounter
  clock: Clock
  metrics?: Metrics
}

export function sendRoutes(r: Router, d: SendRouteDeps): void {
  const readCache = new Map<string, { body: string; at: number }>()
  // Bound once per lane: the hot path increments without label hashing.
  const accepted = d.metrics ? [d.metrics.sendsAccepted.labels('0'), d.metrics.sendsAccepted.labels('1')] : null
  const acceptDeps = { cfg: d.cfg, sends: d.sends, clock: d.clock, accepted }

  r.post(
    '/api/v1/notifications',
    { bodyLimit: d.cfg.limits.sendBodyBytes, headers: ['idempotency-key', 'x-dry-run', 'x-pm-priority'], hot: true },
    async (req) => {
      const key = await d.auth.appKey(req)
      const body = await req.json()
      const app = await d.auth.appOf(req, key, body.app_id, 'corpo')
      const answer = await acceptSend(acceptDeps, {
        app,
        body,
        raw: await req.body(),
        idempotencyHeader: req.header('idempotency-key'),
        priorityHeader: req.header('x-pm-priority'),
        dryRun: (req.header('x-dry-run') ?? '').toLowerCase() === 'true',
      })
      const headers: Record<string, string> = {
        'X-Pm-Lane': String(answer.lane),
        'X-Pm-Recipients-Exato': String(answer.exact),
      }
      if (answer.replay) headers['X-Idempotent-Replay'] = 'true'
      return { status: 200, body: answer.body, contentType: JSON_TYPE, headers }
    },
  )

  /** Key, app, and the reading mode: in webhook or grpc mode the send-read routes answer 403. */
  async function readableApp(req: Request): Promise<AppRecord> {
    const app = await d.auth.queryApp(req)
    if (app.confirmMode !== 'consulta') throw new ApiError('SENDS_READ_FORBIDDEN_MODE', { modo: app.confirmMode })
    return app
  }

  async function takeRead(app: AppRecord): Promise<void> {
    if (!(await d.readQuota.take(app.id))) throw new ApiError('READS_RATE_LIMITED', { limite: d.readQuota.limit })
  }

  r.get('/api/v1/notifications', {}, async (req) => {
    const app = await readableApp(req)
    const raw = req.query.get('limit')
    let limit = d.cfg.limits.sendsListMax
    if (raw !== null && raw !== '') {
      if (!/^\d+$/.test(raw) || Number(raw) < 1) throw fieldError('limit', 'deve ser um inteiro a partir de 1')
      limit = Math.min(Number(raw), d.cfg.limits.sendsListMax) // the spec: larger is silently reduced
    }
    await takeRead(app)
    return ok((await readNewest(d.db, app.id, limit)).map((row) => readShape(row, app.plan)))
  })

  r.get('/api/v1/notifications/stats', {}, async (req) => {
    const app = await d.auth.queryApp(req) // stats keep answering in webhook mode
    const w = statsWindow(req.query)
    await takeRead(app)
    const s = await windowStats(d.db, app.id, w.from, w.to, app.plan)
    return ok({ desde: w.fromText, ate: w.toText, ...s })
  })

  r.get('/api/v1/notifications/:id', {}, async (req): Promise<Reply> => {
    const app = await readableApp(req)
    const id = (req.params[0] as string).toLowerCase()
    if (!isUuid(id)) throw new ApiError('SEND_NOT_FOUND')
    const cacheKey = `${app.id}:${id}:${app.plan}`
    const now = d.clock()
    const hit = readCache.get(cacheKey)
    if (hit && now - hit.at < d.cfg.limits.readCacheMs) return { status: 200, body: hit.body, contentType: JSON_TYPE }
    await takeRead(app)
    const row = await readOne(d.db, app.id, id)
    if (!row) throw new ApiError('SEND_NOT_FOUND')
    const body = JSON.stringify(readShape(row, app.plan))
    if (readCache.size >= d.cfg.limits.readCacheMax) readCache.clear()
    readCache.set(cacheKey, { body, at: now })
    return { status: 200, body, contentType: JSON_TYPE }
  })
}
