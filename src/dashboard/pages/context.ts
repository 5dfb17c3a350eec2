// What the app page's sections share: their dependencies, the app being looked at, and small form helpers.
import type { AppService } from '../../apps/service'
import type { AppRecord } from '../../apps/store'
import type { Config } from '../../core/config'
import type { ConnectionTester } from '../../credentials/connection-test'
import type { CredentialService } from '../../credentials/service'
import type { Db } from '../../db/pool'
import type { DeviceService } from '../../devices/service'
import type { CampaignService } from '../../inapp/service'
import type { Reply } from '../../http/reply'
import type { Request } from '../../http/request'
import type { Router } from '../../http/router'
import type { RedisClient } from '../../redis/client'
import type { Keys } from '../../redis/keys'
import type { Clock } from '../../core/time'
import { appFor } from '../access'
import type { Form } from '../form'
import { html, type Html } from '../html'
import type { Flash } from '../layout'
import type { Sessions, Viewer } from '../session'
import { redirect, viewerAction, type Web } from '../web'

export interface AppPageDeps extends Web {
  cfg: Config
  db: Db
  redis: RedisClient
  keys: Keys
  clock: Clock
  sessions: Sessions
  apps: AppService
  credentials: CredentialService
  tester: ConnectionTester
  devices: DeviceService
  campaigns: CampaignService
}

export interface AppView {
  app: AppRecord
  v: Viewer
  q: URLSearchParams
}

export function csrfField(v: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${v.csrf}">`
}

/** A one-button form posting to `action` (with hidden fields), optionally asking to confirm first. */
export function button(
  v: Viewer,
  action: string,
  label: string,
  o: { fields?: Record<string, string>; confirm?: string; cls?: string } = {},
): Html {
  return html`<form method="post" action="${action}" class="inline"${o.confirm ? html` data-confirmar="${o.confirm}"` : ''}>${csrfField(v)}${Object.entries(
    o.fields ?? {},
  ).map(
    ([k, val]) => html`<input type="hidden" name="${k}" value="${val}">`,
  )}<button type="submit"${o.cls ? html` class="${o.cls}"` : ''}>${label}</button></form>`
}

/** A form post about one app: the app is the viewer's (else 404); the handler answers a flash and an anchor. */
export function appAction(
  d: AppPageDeps,
  r: Router,
  path: string,
  h: (app: AppRecord, form: Form, v: Viewer, req: Request) => Promise<{ flash: Flash; anchor: string } | Reply>,
  bodyLimit?: number,
): void {
  viewerAction(
    d,
    r.post.bind(r),
    path,
    async (req, v, form) => {
      const app = await appFor(d.db, v, req.params[0])
      const out = await h(app, form, v, req)
      if (!('flash' in out)) return out
      await d.sessions.setFlash(v, out.flash)
      return redirect(`/apps/${app.id}#${out.anchor}`)
    },
    bodyLimit,
  )
}
