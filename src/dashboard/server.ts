// The dashboard's port ({dashboard_url}). Today it shows the service's state and how to manage apps with the CLI;
// apps, keys and credentials are managed with `pombo app …` / `pombo credentials …` (docs/spec/contract.md).
import type { Db } from '../db/pool'
import { query } from '../db/pool'
import type { Router } from '../http/router'
import type { RedisClient } from '../redis/client'

export function dashboardRoutes(r: Router, d: { db: Db; redis: RedisClient; version: string; apiUrl: string }): void {
  r.get('/healthz', {}, async () => {
    const [pg, rd] = await Promise.allSettled([query(d.db, 'SELECT 1'), d.redis.ping()])
    const body = { postgres: pg.status === 'fulfilled', redis: rd.status === 'fulfilled' }
    return { status: body.postgres && body.redis ? 200 : 503, body }
  })

  r.get('/', {}, async () => {
    const apps = await query<{ n: string }>(d.db, 'SELECT count(*) AS n FROM apps')
    const html = `<!doctype html><html lang="pt-BR"><meta charset="utf-8"><title>Pombo</title>
<body style="font-family:system-ui;max-width:44rem;margin:2rem auto">
<h1>Pombo ${d.version}</h1>
<p>API pública: <code>${d.apiUrl}</code> · apps cadastrados: <b>${apps.rows[0]?.n ?? 0}</b></p>
<p>Gerencie apps e credenciais pela linha de comando: <code>pombo app create --nome NOME</code>,
<code>pombo app pause|resume ID</code>, <code>pombo credentials fcm|apns ID …</code>.</p>
</body></html>`
    return { status: 200, body: html, contentType: 'text/html; charset=utf-8' }
  })
}
