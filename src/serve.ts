// `pombo serve`: starts the service with its roles, a worker group beside it when asked, and the signal handling of
// a graceful stop. Its own module, loaded only by `serve` (src/main.ts): the one-shot commands never load the
// servers, the delivery engine, gRPC or uWebSockets.js.
import { type Config, redacted } from './core/config'
import { configSummary } from './core/config-summary'
import { createLogger } from './core/log'
import { prettyDestination } from './core/log-pretty'
import { releaseDeadWorker } from './delivery/worker'
import { serveParent } from './group/member'
import { groupBudget, WorkerGroup } from './group/supervisor'
import { loadUws } from './http/uws'
import type { Role } from './service/roles'
import { Service } from './service/service'

/** `member`: this process is a worker of a group (its parent set GROUP_MEMBER_ENV; main.ts reads the environment). */
export async function serve(cfg: Config, roles: Role[], member: boolean): Promise<void> {
  const pretty = cfg.logFormat === 'pretty' || (cfg.logFormat === 'auto' && process.stdout.isTTY === true)
  const log = createLogger(
    cfg.logLevel,
    pretty ? prettyDestination(process.stdout, process.stdout.isTTY === true && cfg.logColor) : undefined,
  )
  // The worker role beside another one runs in worker processes of this group (src/group/supervisor.ts).
  const grouped = !member && cfg.serveWorkers > 0 && roles.includes('worker') && roles.length > 1
  const budget = grouped ? groupBudget(cfg.limits.pgPool, cfg.serveWorkers) : null
  const own = grouped ? roles.filter((r) => r !== 'worker') : roles
  // Refused before anything starts (migrations, connections) when no HTTP build fits this runtime.
  if (own.includes('api') || own.includes('dashboard')) loadUws()
  // At a terminal the configuration is a few lines, once: a member of the group says only that it starts.
  if (!pretty)
    log.info(
      { config: redacted(cfg), roles: own, ...(budget ? { worker_processes: cfg.serveWorkers, pg_pool: budget } : {}) },
      'starting',
    )
  else if (member) log.info({ roles: own }, 'starting')
  else log.info({ lines: configSummary(cfg, roles) }, 'starting')
  const svc = await Service.start(budget ? { ...cfg, limits: { ...cfg.limits, pgPool: budget.parent } } : cfg, {
    roles: own,
    log,
  })
  const group = budget
    ? new WorkerGroup({
        workers: cfg.serveWorkers,
        budget,
        log,
        metrics: svc.deps.metrics,
        nodeOptions: cfg.nodeOptions,
        release: (pid) => releaseDeadWorker({ ...svc.deps, partitions: cfg.partitions }, pid),
      })
    : null
  group?.start()
  if (svc.api) log.info({ url: `http://${cfg.host}:${svc.api.port}` }, 'API listening')
  if (svc.dashboard) log.info({ url: `http://${cfg.host}:${svc.dashboard.port}` }, 'dashboard listening')
  if (!cfg.platformKey) log.warn('PM_PLATFORM_KEY is not set: app routes answer 503')
  if (!cfg.vaultKey) log.warn('PM_VAULT_KEY is not set: writes that need the vault answer 503')
  if (svc.ops) log.info({ url: `http://${cfg.host}:${svc.ops.port}` }, 'operations port listening (/metrics, /healthz, /readyz)')
  let stopping = false
  // A graceful stop: /readyz answers 503 at once (load balancers stop sending), then the servers stop accepting and
  // in-flight work drains. A second signal, or PM_DRAIN_TIMEOUT_MS, ends the drain: what was answered is durable,
  // what was not is delivered again by the next owner (stream entries stay pending, the sweeper re-enqueues).
  const stop = (sig: string, code = 0) => {
    if (stopping) {
      if (sig === 'SIGTERM' || sig === 'SIGINT') {
        log.warn({ sig }, 'second signal: exiting without finishing the drain')
        process.exit(code || 1)
      }
      return
    }
    stopping = true
    log.info({ sig, ready: false, deadline_ms: cfg.drainTimeoutMs }, 'stopping: finishing in-flight requests')
    svc.drain()
    const groupStopped = group?.stop()
    setTimeout(() => {
      log.error({ deadline_ms: cfg.drainTimeoutMs }, 'drain deadline passed: exiting')
      process.exit(1)
    }, cfg.drainTimeoutMs).unref()
    Promise.all([svc.stop(), groupStopped]).then(
      () => process.exit(code),
      (err) => {
        log.error({ err }, 'stop failed')
        process.exit(1)
      },
    )
  }
  // A worker of a group leaves Ctrl-C (SIGINT to the terminal's whole process group) to its parent, which stops it
  // with one SIGTERM: taking both as two signals would end its drain at once.
  process.on('SIGINT', () => (member ? undefined : stop('SIGINT')))
  process.on('SIGTERM', () => stop('SIGTERM'))
  if (member) serveParent(svc.deps.metrics, (why) => stop(why))
  // Requests have their own error boundary (a bug in one is that request's 500). What still escapes is a bug too:
  // a rejected promise nobody awaited changes no state, so it is logged and the process serves on; a thrown
  // exception may have left anything half-done, so the process drains (what was answered is durable) and exits 1
  // for its supervisor to start it again.
  process.on('unhandledRejection', (reason) => log.error({ err: reason }, 'unhandled promise rejection (a bug); serving on'))
  process.on('uncaughtException', (err, origin) => {
    log.fatal({ err, origin }, 'uncaught exception (a bug); draining and exiting')
    stop('uncaughtException', 1)
  })
}
