// The dashboard's sending pages: the composer (/apps/{app_id}/envios/novo), a page per send
// (/apps/{app_id}/envios/{send_id}) and the sends list (/apps/{app_id}/envios).
import type { Router } from '../../http/router'
import { sendListRoutes } from './list'
import { composerRoutes, type SendPagesDeps } from './routes'
import { sendPageRoutes } from './send-page'

export type { SendPagesDeps }

export function sendPagesRoutes(r: Router, d: SendPagesDeps): void {
  composerRoutes(r, d)
  sendPageRoutes(r, d)
  sendListRoutes(r, d)
}
