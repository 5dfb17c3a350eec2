// Wires one process: connections, caches, services, and the servers of the roles it runs. `pombo serve` and the
// tests build the service the same way; tests pass their own config (schema, Redis prefix, port 0) and clock.
import { ALL_ROLES, type Role } from './roles'
import type { Logger } from 'pino'
import { Auth } from '../apps/auth'
import { AppDirectory } from '../apps/directory'
import { appRoutes } from '../apps/routes'
import { AppService } from '../apps/service'
import { type Config, ConfigError } from '../core/config'
import { simulatorPassCheck } from '../core/simulator-pass'
import { WebhookDispatcher } from '../confirmations/dispatcher'
import { confirmationRoutes } from '../confirmations/routes'
import { ConfirmationStreamServer } from '../confirmations/stream'
import { dashboardRoutes } from '../dashboard/server'
import { splitBudget } from '../db/budget'
import { checkSchema, migrate } from '../db/migrate'
import { checkSearchPath, createPool, type Db, query } from '../db/pool'
import { DeliveryModule } from '../delivery/module'
import { deviceRoutes } from '../devices/routes'
import { DeviceService } from '../devices/service'
import { ProxyTrust } from '../http/client-ip'
import { IpLimiter } from '../http/ip-limit'
import { openApiReply } from '../http/openapi'
import { constantJson } from '../http/reply'
import { HttpServer } from '../http/server'
import { loadUws } from '../http/uws'
import { inappDeviceRoutes } from '../inapp/device-routes'
import { InappModule } from '../inapp/module'
import { inappRoutes } from '../inapp/routes'
import {
  collectDelivery,
  collectGroupCommits,
  collectPools,
  collectStreams,
  collectWebhooks,
  deliveryCounter,
  paceObserver,
  providerObserver,
  providerOrigins,
} from './collectors'
import { Metrics } from '../ops/metrics'
import { OpsServer } from '../ops/server'
import { ReceiptsModule } from '../receipts/module'
import { receiptRoutes } from '../receipts/routes'
import { connectRedis, pingAll, type RedisClient } from '../redis/client'
import { Keys } from '../redis/keys'
import { checkPartitions } from '../redis/partitions'
import { SendsModule } from '../sends/module'
import { sendRoutes } from '../sends/routes'
import { Retention, retentionMetrics } from './retention'
import { type Clock, DAY_MS, systemClock } from '../core/time'
import { Vault } from '../core/vault'
import { gitCommit, VERSION } from '../core/version'

export interface ServiceOptions {
  roles?: readonly Role[]
  clock?: Clock
  log: Logger
  /** Apply migrations at start (default true, as `pombo serve` does). */
  migrate?: boolean
  /** Run the periodic jobs (sweeper, MAU measurement); tests that drive them by hand turn this off. */
  jobs?: boolean
  /** Extra CA the delivery engine trusts (tests against the fake providers). */
  providerCa?: string
  /** The webhook dispatcher runs in the worker role; `true` runs it without that role too, `false` never (tests). */
  dispatcher?: boolean
  /** Extra CA the webhook dispatcher trusts (tests' local receiver); production trusts NODE_EXTRA_CA_CERTS. */
  webhookCa?: string
}

/** Everything a feature may need; built once per process. */
export interface Deps {
  cfg: Config
  log: Logger
  db: Db
  redis: RedisClient
  keys: Keys
  vault: Vault
  clock: Clock
  dir: AppDirectory
  auth: Auth
  apps: AppService
  /** Shared per-IP limiter of the public device, receipt and in-app routes (sliding minute). */
  publicLimiter: IpLimiter
  /** Registration (group commit), device reads and updates, exports. */
  devices: DeviceService
  /** Send creation, hand-off, reads, and their background jobs. */
  sends: SendsModule
  /** Receipt keys (opened once) and the receipts' group-commit writer. */
  receipts: ReceiptsModule
  /** In-app campaigns (service usable without HTTP), package cache, event writers. */
  inapp: InappModule
  /** This process's metrics (its own registry), served on the operations port. */
  metrics: Metrics
}

export class Service {
  api: HttpServer | null = null
  delivery: DeliveryModule | null = null
  dispatcher: WebhookDispatcher | null = null
  /** The confirmation stream (gRPC, `modo: grpc`) of the API role; null when PM_GRPC_PORT is 0. */
  grpc: ConfirmationStreamServer | null = null
  dashboard: HttpServer | null = null
  /** The operations port (metrics, health, readiness); null when PM_OPS_PORT is 0. */
  ops: OpsServer | null = null
  #stopped = false
  /** What the dashboard holds open besides its server (the connection test's provider connections). */
  #dashboardParts: { close(): Promise<void> } | null = null
  /** Every lifetime the feature jobs do not bound (src/service/retention.ts): its timer runs on worker processes
   *  only; any process (tests, the benchmark) may run a pass. */
  readonly retention: Retention
  readonly #retentionMetrics: ReturnType<typeof retentionMetrics>

  private constructor(readonly deps: Deps) {
    this.#retentionMetrics = retentionMetrics(deps.metrics)
    const { db, cfg, clock, log } = deps
    this.retention = new Retention({ db, cfg, clock, log, onPass: this.#retentionMetrics.onPass })
  }

  static async start(cfg: Config, opts: ServiceOptions): Promise<Service> {
    const roles = new Set(opts.roles ?? ALL_ROLES)
    const log = opts.log
    const clock = opts.clock ?? systemClock
    const migrating = opts.migrate ?? cfg.migrateOnStart
    if (migrating) await migrate(cfg.databaseDirectUrl, cfg.dbSchema)
    const runsDispatcher = roles.has('worker') ? opts.dispatcher !== false : opts.dispatcher === true
    const budget = splitBudget(cfg.limits.pgPool, {
      dispatcher: runsDispatcher,
      webhookConcurrency: cfg.webhook.concurrency,
      listener: roles.has('api') && cfg.grpcPort !== null,
    })
    const db = createPool(cfg, budget.main)
    try {
      if (cfg.pgBouncer) {
        const wrong = await checkSearchPath(db, cfg.dbSchema)
        if (wrong) throw new ConfigError(wrong)
      }
      // A schema newer than this release is refused; one behind it too when this process did not migrate.
      await checkSchema(db, { pendingAllowed: opts.migrate === false })
      // Every process of a deployment hashes apps over the same count: another one refuses to start.
      await checkPartitions(db, cfg.partitions)
    } catch (err) {
      await db.end()
      throw err
    }
    let redis: RedisClient
    try {
      redis = await connectRedis(cfg, 'pombo')
    } catch (err) {
      await db.end()
      throw err
    }
    const metrics = new Metrics()
    const keys = new Keys(cfg.redisPrefix)
    const vault = new Vault(cfg.vaultKey)
    const dir = new AppDirectory(db, redis, keys, log, cfg.limits.keyCacheTtlMs, clock, {
      max: cfg.limits.keyCacheMax,
      missMax: cfg.limits.keyCacheMissMax,
      missTtlMs: cfg.limits.keyCacheMissTtlMs,
    })
    await dir.start()
    const receipts = new ReceiptsModule(
      { db, vault, clock, log, appCacheMax: cfg.limits.appCacheMax },
      {
        maxBatch: cfg.limits.receiptBatchMax,
        concurrency: cfg.limits.receiptWriters,
        maxQueue: cfg.limits.receiptQueueMax,
        windowMs: cfg.limits.receiptWindowDays * DAY_MS,
      },
    )
    const publicLimiter = new IpLimiter(cfg.limits.ipPerMin, 'sliding', clock)
    const deps: Deps = {
      cfg,
      log,
      db,
      redis,
      keys,
      vault,
      clock,
      dir,
      // Failed authentications count toward the public routes' per-IP limit.
      auth: new Auth(dir, cfg.platformKey, log.child({ audit: true }), clock, publicLimiter),
      apps: new AppService(db, dir, vault, cfg, clock),
      publicLimiter,
      devices: new DeviceService({ cfg, db, redis, keys, clock, log }),
      sends: new SendsModule({ cfg, db, redis, keys, clock, log }),
      receipts,
      inapp: new InappModule({ cfg, db, redis, keys, clock, log, dir, receiptKeys: receipts.keys }),
      metrics,
    }
    const svc = new Service(deps)
    try {
      // First, so a probe sees the process live (and not ready) while it starts; ready once every role listens.
      if (cfg.opsPort !== null) {
        svc.ops = new OpsServer(
          metrics,
          { postgres: () => query(db, 'SELECT 1'), redis: () => pingAll(redis) },
          log,
          cfg.opsCheckTimeoutMs,
          { metricsCacheMs: cfg.opsMetricsCacheMs, token: cfg.opsToken },
        )
        await svc.ops.listen(cfg.host, cfg.opsPort)
      }
      svc.#metrics(roles)
      const proxies = new ProxyTrust(cfg.trustProxy)
      // Without the operations port nobody can read the HTTP series, so the routes skip measuring them (the http
      // bench runs Pombo both ways in one run: what measuring costs the API).
      const http = {
        jsonMaxDepth: cfg.limits.jsonMaxDepth,
        metrics: cfg.opsPort === null ? undefined : metrics,
        accessLog: cfg.accessLog,
        // A `pombo simulate` fleet passes the per-IP limit only where simulators are allowed (src/core/simulator-pass.ts).
        // The pass is minted on the run's wall clock, so it is checked on the wall clock too.
        simulatorPass: cfg.allowSimulators && cfg.vaultKey ? simulatorPassCheck(cfg.vaultKey) : undefined,
      }
      if (roles.has('api') || roles.has('dashboard')) {
        const { choice } = loadUws()
        log.info({ build: choice.build }, `HTTP server: ${choice.why}`)
      }
      if (roles.has('api')) {
        svc.api = new HttpServer('api', log, proxies, http)
        await deps.inapp.start() // the package cache's invalidations (only the API serves packages)
        svc.#apiRoutes(svc.api)
        await svc.api.listen(cfg.host, cfg.port)
        if (cfg.grpcPort !== null) {
          svc.grpc = new ConfirmationStreamServer(deps)
          await svc.grpc.listen(cfg.host, cfg.grpcPort)
          log.info(
            { port: svc.grpc.port, tls: cfg.grpcTls !== null },
            cfg.grpcTls ? 'confirmation stream listening (TLS)' : 'confirmation stream listening (plaintext: keep it behind TLS)',
          )
        }
      }
      if (opts.jobs !== false && (roles.has('api') || roles.has('worker'))) {
        deps.sends.startJobs()
        deps.receipts.startJobs(cfg.jobs, cfg.limits.receiptWindowDays)
      }
      if (roles.has('worker')) {
        svc.delivery = new DeliveryModule({
          ...deps,
          ca: opts.providerCa,
          observeProvider: providerObserver(metrics),
          observePace: paceObserver(metrics),
        })
        svc.delivery.recorder.onRecorded = deliveryCounter(metrics)
        collectGroupCommits(metrics, [['outcomes', svc.delivery.recorder.groupCommit]])
        await svc.delivery.start()
        if (opts.jobs !== false) {
          svc.delivery.startJobs()
          svc.retention.start()
        }
      }
      if (runsDispatcher) {
        const attempts = metrics.webhookEvents
        svc.dispatcher = new WebhookDispatcher({
          cfg,
          log,
          vault,
          clock,
          ca: opts.webhookCa,
          onAttempt: (r) => attempts.labels(r).inc(),
          onStreamRetention: svc.#retentionMetrics.onStreamRetention,
          poolMax: budget.webhooks,
        })
        svc.dispatcher.start()
        if (opts.jobs !== false) svc.dispatcher.startJobs()
      }
      if (roles.has('dashboard')) {
        svc.dashboard = new HttpServer('dashboard', log, proxies, http)
        const apiUrl = `http://${cfg.host}:${svc.api?.port ?? cfg.port}`
        svc.#dashboardParts = dashboardRoutes(svc.dashboard.router, {
          ...deps,
          version: VERSION,
          apiUrl,
          providerCa: opts.providerCa,
        })
        svc.dashboard.router.fallback()
        await svc.dashboard.listen(cfg.host, cfg.dashboardPort)
      }
      svc.ops?.up()
    } catch (err) {
      await svc.stop()
      throw err
    }
    return svc
  }

  /** Scrape-time collectors: pools everywhere; streams, actors and HTTP/2 where the worker runs; webhooks where the
   *  dispatcher runs. */
  #metrics(roles: ReadonlySet<Role>): void {
    const { metrics, db, redis, keys, cfg, clock } = this.deps
    collectPools(metrics, () => {
      const pools: Array<[string, Db]> = [['main', db]]
      if (this.dispatcher) pools.push(['webhooks', this.dispatcher.pool])
      return pools
    })
    if (roles.has('worker')) {
      collectStreams(metrics, redis, keys, cfg.partitions, clock)
      collectDelivery(metrics, () => this.delivery, providerOrigins(cfg))
    }
    collectWebhooks(metrics, db)
    const d = this.deps
    collectGroupCommits(metrics, [
      ['registrations', d.devices.writer.groupCommit],
      ['sends', d.sends.writer.groupCommit],
      ['receipts', d.receipts.writer.groupCommit],
      ['inapp_served', d.inapp.served.groupCommit],
      ['inapp_events', d.inapp.events.groupCommit],
    ])
  }

  /** Readiness goes false (load balancers stop sending) before anything stops. */
  drain(): void {
    this.ops?.drain()
  }

  #apiRoutes(server: HttpServer): void {
    const d = this.deps
    const r = server.router
    const root = constantJson({ servico: 'pombo', versao: VERSION, git: gitCommit(d.cfg.gitCommit) })
    r.get('/', {}, () => root)
    const openapi = openApiReply()
    r.get('/api/v1/openapi.json', {}, () => openapi)
    appRoutes(r, { ...d, firebaseLimiter: new IpLimiter(d.cfg.limits.ipPerMin, 'fixed', d.clock) })
    deviceRoutes(r, d)
    receiptRoutes(r, d)
    sendRoutes(r, { ...d, sends: d.sends.service, readQuota: d.sends.readQuota })
    confirmationRoutes(r, d)
    inappRoutes(r, { ...d, campaigns: d.inapp.campaigns })
    inappDeviceRoutes(r, { ...d, ...d.inapp, keys: d.inapp.proofKeys })
    r.fallback()
  }

  /** Graceful: servers stop accepting and finish in-flight requests, then connections close. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    this.drain()
    await Promise.all([this.api?.close(), this.dashboard?.close(), this.grpc?.close()])
    await this.#dashboardParts?.close()
    await this.retention.stop()
    await this.delivery?.stop()
    await this.dispatcher?.stop()
    await this.deps.devices.stop()
    await this.deps.sends.stop()
    await this.deps.receipts.stop()
    await this.deps.inapp.stop()
    await this.deps.dir.stop()
    this.deps.redis.disconnect()
    await this.deps.db.end()
    await this.ops?.close()
  }
}
