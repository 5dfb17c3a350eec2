// Operator routes (platform key) and the public firebase_params (the spec, Apps).
import { BY_PLATFORM_KEY } from '../audit/record'
import type { Config } from '../core/config'
import { ApiError } from '../core/errors'
import type { IpLimiter } from '../http/ip-limit'
import { created, ok } from '../http/reply'
import type { Router } from '../http/router'
import type { Vault } from '../core/vault'
import type { Auth } from './auth'
import type { AppDirectory } from './directory'
import type { AppService } from './service'
import { parseCreateApp, parseRotate } from './validate'

export interface AppRouteDeps {
  cfg: Config
  auth: Auth
  apps: AppService
  dir: AppDirectory
  vault: Vault
  firebaseLimiter: IpLimiter
}

export function appRoutes(r: Router, d: AppRouteDeps): void {
  const bodyLimit = d.cfg.limits.appBodyBytes

  r.post('/api/v1/apps', { bodyLimit }, async (req) => {
    d.auth.platform(req) // spec: the credential is checked before the body
    d.vault.require()
    const input = parseCreateApp(await req.json(), d.cfg.limits.appNameMaxBytes)
    return created(await d.apps.create(input, BY_PLATFORM_KEY))
  })

  r.post('/api/v1/apps/:id/rotate_key', { bodyLimit, uuidParams: true }, async (req) => {
    d.auth.platform(req)
    const raw = await req.body()
    const input = raw.length === 0 ? {} : parseRotate(await req.json())
    return ok(await d.apps.rotate((req.params[0] as string).toLowerCase(), input.sandbox, BY_PLATFORM_KEY))
  })

  r.get('/api/v1/apps/:id/firebase_params', { ipLimit: d.firebaseLimiter, uuidParams: true, cors: true }, async (req) => {
    const app = await d.dir.app((req.params[0] as string).toLowerCase())
    if (!app) throw new ApiError('APP_NOT_FOUND')
    if (app.paused) throw new ApiError('APP_PAUSED')
    return ok({ android: app.firebaseParams ?? null, ios: null })
  })
}
