// Device routes (the spec, Devices). POST and PUT are public (no credential): the body is capped, the source IP is
// rate-limited, every field is validated and the app_id checked (unknown 400, paused 403) before any write.
// GET and the export need the app key; the export file URL is its own credential.
import { byKey } from '../audit/record'
import type { Config } from '../core/config'
import type { AppDirectory } from '../apps/directory'
import type { Auth } from '../apps/auth'
import { ApiError, fieldError } from '../core/errors'
import type { IpLimiter } from '../http/ip-limit'
import { ok } from '../http/reply'
import { isUuid, type Router } from '../http/router'
import type { DeviceService } from './service'
import { PROFILE_FIELDS, parseRegistration, parseUpdate } from './validate'

export interface DeviceRouteDeps {
  cfg: Config
  dir: AppDirectory
  auth: Auth
  publicLimiter: IpLimiter
  devices: DeviceService
}

/** The app a public device route writes to: unknown 400, paused 403 (the spec, Devices). */
async function activeApp(d: DeviceRouteDeps, appId: string): Promise<void> {
  const app = await d.dir.app(appId)
  if (!app) throw new ApiError('APP_ID_UNKNOWN')
  if (app.paused) throw new ApiError('APP_PAUSED')
}

export function deviceRoutes(r: Router, d: DeviceRouteDeps): void {
  const pub = { bodyLimit: d.cfg.limits.deviceBodyBytes, ipLimit: d.publicLimiter, hot: true, cors: true }

  r.post('/api/v1/players', pub, async (req) => {
    const row = parseRegistration(await req.json({ lenient: PROFILE_FIELDS }), d.cfg.limits)
    await activeApp(d, row.app_id)
    const id = await d.devices.register(row)
    return ok({ success: true, id })
  })

  r.put('/api/v1/players/:player_id', pub, async (req) => {
    const u = parseUpdate(await req.json(), d.cfg.limits)
    await activeApp(d, u.app_id)
    const playerId = req.params[0]
    // A malformed id names no device of this app: 404 like any other unknown id.
    if (!isUuid(playerId)) throw new ApiError('PLAYER_NOT_FOUND')
    await d.devices.update(u.app_id, playerId.toLowerCase(), u)
    return ok({ success: true })
  })

  r.get('/api/v1/players/:player_id', {}, async (req) => {
    const app = await d.auth.queryApp(req)
    const playerId = req.params[0]
    const device = isUuid(playerId) ? await d.devices.read(app.id, playerId.toLowerCase()) : null
    if (!device) throw new ApiError('PLAYER_NOT_FOUND')
    return ok(device)
  })

  // No body: the route declares no body cap, so nothing is read.
  r.post('/api/v1/players/csv_export', {}, async (req) => {
    const key = await d.auth.appKey(req)
    const app = await d.auth.appOf(req, key, req.query.get('app_id') ?? undefined, 'query')
    // Dead devices (invalid_identifier) are left out unless asked for (docs/design/devices.md).
    const dead = req.query.get('incluir_invalidos')
    if (dead !== null && dead !== 'true' && dead !== 'false') throw fieldError('incluir_invalidos', 'deve ser true ou false')
    await d.devices.exporter.requireStorage()
    await d.devices.quotas.takeExport(app.id)
    return ok(await d.devices.exporter.start(app.id, byKey(key.kid), dead === 'true'))
  })

  r.get('/api/v1/exports/:file', {}, async (req) => {
    const file = await d.devices.exporter.file(req.params[0] ?? '')
    if (!file) throw new ApiError('EXPORT_NOT_FOUND')
    return {
      status: 200,
      file,
      contentType: 'application/gzip',
      headers: { 'Content-Disposition': 'attachment; filename="dispositivos.csv.gz"', 'Cache-Control': 'private, no-store' },
    }
  })
}
