// The dashboard's port ({dashboard_url}): the status page and /healthz, the static assets, sign-in, and the pages
// of apps (keys, credentials with their connection test, devices, sends, webhook, in-app). Server-rendered HTML with
// one small script; every page and action goes through the services the API and the CLI use.
import type { AppService } from '../apps/service'
import type { Config } from '../core/config'
import { ConnectionTester } from '../credentials/connection-test'
import { CredentialService } from '../credentials/service'
import type { AppDirectory } from '../apps/directory'
import type { Db } from '../db/pool'
import { query } from '../db/pool'
import { H2Pool } from '../h2/pool'
import { providerPoolOptions } from '../providers/http2'
import { SimulatorPools } from '../providers/index'
import type { DeviceService } from '../devices/service'
import type { Router } from '../http/router'
import type { InappModule } from '../inapp/module'
import type { SendsModule } from '../sends/module'
import type { Metrics } from '../ops/metrics'
import { PeopleService } from '../people/service'
import { pingAll, type RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'
import type { Vault } from '../core/vault'
import { assetRoutes } from './assets'
import { html } from './html'
import { page } from './layout'
import { appPageRoutes } from './pages/app'
import { inappEditorRoutes } from './inapp-editor/routes'
import { appsRoutes } from './pages/apps'
import { ErasureJobs } from './erasure-jobs'
import { erasureRoutes } from './pages/erasure'
import { sendPagesRoutes } from './sends'
import { peopleRoutes } from './pages/people'
import { signinRoutes } from './pages/signin'
import { cookieSecret, Sessions } from './session'
import { SigninLimiter } from './signin-limit'
import { htmlReply } from './web'

export interface DashboardDeps {
  cfg: Config
  db: Db
  redis: RedisClient
  keys: Keys
  vault: Vault
  clock: Clock
  dir: AppDirectory
  apps: AppService
  devices: DeviceService
  inapp: InappModule
  sends: SendsModule
  /** The process's metrics: sends made in the dashboard count in pombo_sends_accepted_total like the API's. */
  metrics?: Metrics
  version: string
  apiUrl: string
  /** Extra CA the connection test trusts (tests against the fake providers). */
  providerCa?: string
}

/** Adds the dashboard's routes; answers what must be closed with the server (the connection test's HTTP/2 pool). */
export function dashboardRoutes(r: Router, d: DashboardDeps): { close(): Promise<void> } {
  r.get('/healthz', {}, async () => {
    const [pg, rd] = await Promise.allSettled([query(d.db, 'SELECT 1'), pingAll(d.redis)])
    const body = { postgres: pg.status === 'fulfilled', redis: rd.status === 'fulfilled' }
    return { status: body.postgres && body.redis ? 200 : 503, body }
  })

  // Public: anyone may load it, so it says nothing of the tenants (no count, no name) and asks the database nothing.
  r.get('/', {}, async () => {
    const body = html`<h1>Pombo ${d.version}</h1>
<p>API pública: <code>${d.cfg.publicBaseUrl}</code></p>
<p><a class="botao" href="/entrar">Entrar no painel</a></p>
<p class="dica">Primeiro acesso: o operador cria a conta com <code>pombo user create --email … --operador --senha-stdin</code>
ou convida alguém com <code>pombo user invite --email … --org ORG_ID</code>.</p>`
    return htmlReply(200, page({ title: 'Pombo' }, body))
  })

  assetRoutes(r)

  const secret = cookieSecret(d.cfg)
  const sessions = new Sessions(
    d.db,
    d.redis,
    d.keys,
    secret,
    d.cfg.dashboard.sessionTtlMs,
    d.clock,
    d.cfg.dashboard.url,
    d.cfg.dashboard.idleTtlMs,
  )
  const web = { sessions, dashboardUrl: d.cfg.dashboard.url }
  const people = PeopleService.fromConfig(d.db, d.clock, d.cfg.dashboard)
  const limiter = new SigninLimiter(
    d.redis,
    d.keys,
    d.clock,
    {
      perAccount: d.cfg.dashboard.signinPerAccount,
      perIp: d.cfg.dashboard.signinPerIp,
      windowMs: d.cfg.dashboard.signinWindowMs,
      sourceMaxMs: d.cfg.dashboard.signinDelayMaxMs,
      accountMaxMs: d.cfg.dashboard.signinAccountWaitMaxMs,
    },
    secret,
  )
  signinRoutes(r, { ...web, people, limiter })
  appsRoutes(r, { ...web, db: d.db, apps: d.apps, cfg: d.cfg })
  peopleRoutes(r, { ...web, people })
  // Erasing an app or an organisation: the CLI's Eraser, run in the background of this process (erasure-jobs.ts).
  const erasures = new ErasureJobs(d.redis, d.keys, d.clock, {
    db: d.db,
    redis: d.redis,
    keys: d.keys,
    exportDir: d.cfg.exportDir,
    batch: d.cfg.eraseBatch,
    invalidate: (appId) => d.dir.invalidate(appId),
    now: d.clock,
  })
  erasureRoutes(r, { ...web, db: d.db, jobs: erasures })

  // One session per provider host is plenty: tests are one request at a time, by hand.
  const pool = new H2Pool({ ca: d.providerCa, sessionsPerOrigin: 1, timeoutMs: 10_000, ...providerPoolOptions(d.cfg) })
  const credentials = new CredentialService({
    db: d.db,
    vault: d.vault,
    dir: d.dir,
    redis: d.redis,
    keys: d.keys,
    now: d.clock,
    cfg: d.cfg,
  })
  const simulatorPools = new SimulatorPools(
    (ca) => new H2Pool({ ca, sessionsPerOrigin: 1, timeoutMs: 10_000, ...providerPoolOptions(d.cfg) }),
  )
  const tester = new ConnectionTester({
    db: d.db,
    vault: d.vault,
    pool,
    fcmBaseUrl: d.cfg.fcmBaseUrl,
    apnsBaseUrl: d.cfg.apnsBaseUrl,
    clock: d.clock,
    allowSimulators: d.cfg.allowSimulators,
    simulatorPool: simulatorPools.get,
  })
  sendPagesRoutes(r, { ...web, cfg: d.cfg, db: d.db, clock: d.clock, sends: d.sends.service, metrics: d.metrics })
  inappEditorRoutes(r, { ...web, cfg: d.cfg, db: d.db, clock: d.clock, campaigns: d.inapp.campaigns })
  appPageRoutes(r, {
    ...web,
    cfg: d.cfg,
    db: d.db,
    redis: d.redis,
    keys: d.keys,
    clock: d.clock,
    apps: d.apps,
    credentials,
    tester,
    devices: d.devices,
    campaigns: d.inapp.campaigns,
  })
  return {
    // A running erasure gets a few seconds to finish its batch; cut short, it is continued by typing the name again.
    close: () =>
      erasures
        .drain(5_000)
        .then(() => Promise.all([pool.close(), simulatorPools.close()]))
        .then(() => undefined),
  }
}
