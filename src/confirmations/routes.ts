// The confirmation channel (the spec, Service and channel configuration): GET reads the mode and the queue, PUT
// changes the destination and the mode. After a change every instance drops the app from its cache, so the
// send-read routes answer 403 (or answer again) at once.
import { byKey } from '../audit/record'
import type { Auth } from '../apps/auth'
import type { AppDirectory } from '../apps/directory'
import type { Config } from '../core/config'
import type { Db } from '../db/pool'
import { ok } from '../http/reply'
import type { Router } from '../http/router'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { type Clock, isoWithOffset } from '../core/time'
import type { Vault } from '../core/vault'
import { activeStreams } from './presence'
import { expiringStreamConfirmations } from './retention'
import { applyChange, pendingCount } from './store'
import { parseChange } from './validate'

export interface ConfirmationRouteDeps {
  cfg: Config
  db: Db
  auth: Auth
  dir: AppDirectory
  vault: Vault
  clock: Clock
  redis: RedisClient
  keys: Keys
}

export function confirmationRoutes(r: Router, d: ConfirmationRouteDeps): void {
  r.get('/api/v1/confirmacoes', {}, async (req) => {
    const app = await d.auth.queryApp(req)
    const j = d.cfg.jobs
    const [pending, streams, expiring] = await Promise.all([
      pendingCount(d.db, app.id),
      activeStreams(d.redis, d.keys, app.id),
      expiringStreamConfirmations(d.db, app.id, j.streamKeepDays, j.streamWarnH * 3_600_000, d.clock()),
    ])
    // Stream confirmations no reader took, about to be deleted (PM_STREAM_KEEP_DAYS): how many, and when the first goes.
    const problem = expiring ? `confirmacoes_a_expirar:${expiring.count}:${isoWithOffset(expiring.at)}` : null
    return ok({ modo: app.confirmMode, fila_pendente: pending, streams_ativos: streams, pm_problema: problem })
  })

  r.put('/api/v1/confirmacoes', { bodyLimit: d.cfg.limits.appBodyBytes }, async (req) => {
    const key = await d.auth.appKey(req)
    const body = await req.json()
    const app = await d.auth.appOf(req, key, body.app_id, 'corpo')
    const change = parseChange(body)
    const applied = await applyChange(
      d.db,
      d.vault,
      app.id,
      change,
      new Date(d.clock()),
      d.cfg.limits.configLockTimeoutMs,
      byKey(key.kid),
    )
    await d.dir.invalidate(app.id)
    return ok({ ok: true, modo: applied.mode, segredo: applied.secret })
  })
}
