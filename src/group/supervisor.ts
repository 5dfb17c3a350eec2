// The process group of `pombo serve` (docs/spec/contract.md: "the public API, the delivery workers and the dashboard
// in one process group"). Node runs one thread of JavaScript per process: with every role in one process, accepting
// and delivering take turns on one core while the machine's other cores may sit idle. So the serving process runs
// the API and the dashboard and starts PM_SERVE_WORKERS delivery workers, each `pombo serve --roles worker` in a
// child process:
//  - a worker that exits on its own is started again (1 s, doubling to 30 s while it keeps failing); its partition
//    and slice leases are given back at once, so what it had taken and not acknowledged is taken over by the next
//    owner without waiting for the leases to lapse;
//  - the group stops together: SIGTERM/SIGINT reaches every worker, each drains, the parent waits for them; a worker
//    whose parent is gone (even SIGKILLed) sees its IPC channel close and drains and exits by itself;
//  - the group's connection budget is PM_PG_POOL, shared (groupBudget); the operations port is the parent's, and its
//    /metrics merges the workers' series (asked over IPC at every scrape: counters summed, gauges by their merge).
import { type ChildProcess, fork } from 'node:child_process'
import type { Logger } from 'pino'
import { Counter } from 'prom-client'
import { MIN_PG_BUDGET } from '../core/config'
import type { MetricsJson, Metrics } from '../ops/metrics'
import { type FromMember, type ToMember, GROUP_MEMBER_ENV } from './messages'

export interface GroupBudget {
  /** PM_PG_POOL of the serving process (API, dashboard). */
  parent: number
  /** PM_PG_POOL of each worker process. */
  worker: number
}

/**
 * PM_PG_POOL is the group's budget: the workers share half of it, the serving process keeps the rest; no process gets
 * less than MIN_PG_BUDGET (then the group opens more than PM_PG_POOL: docs/operations.md).
 */
export function groupBudget(total: number, workers: number): GroupBudget {
  const worker = Math.max(MIN_PG_BUDGET, Math.floor(total / 2 / workers))
  return { parent: Math.max(MIN_PG_BUDGET, total - worker * workers), worker }
}

export interface GroupOptions {
  workers: number
  budget: GroupBudget
  log: Logger
  metrics: Metrics
  /** NODE_OPTIONS (config.ts): an operator's young generation there wins over WORKER_SEMI_SPACE_FLAG. */
  nodeOptions: string
  /** The program and node flags to start a worker with (default: this process's own). */
  entry?: { file: string; execArgv: string[] }
  /** Gives back what a worker that died held (delivery/worker.ts releaseDeadWorker), so its replacement, or any
   *  other worker, takes its partitions and slices at once instead of after PM_LEASE_MS. */
  release?: (pid: number) => Promise<unknown>
  /** Restart back-off (tests shorten it). */
  restartMinMs?: number
  restartMaxMs?: number
}

/** How long a scrape waits for a worker's series. */
const ASK_TIMEOUT_MS = 1_500

/** A worker process that ran this long before exiting starts again after the shortest wait. */
const HEALTHY_MS = 60_000

/**
 * V8's young generation of a worker process. A delivery leaves only short-lived garbage (its body, its request, its
 * promises), collected by scavenges whose count falls as the semi-space grows: 32 MB takes about 7% off the
 * worker's CPU per delivery, for about 30 MB more memory. An operator's own `--max-semi-space-size` (node flags or
 * NODE_OPTIONS) wins.
 */
export const WORKER_SEMI_SPACE_FLAG = '--max-semi-space-size=32'

/** The script and node flags this process was started with, so a worker runs the same build the same way. */
export function ownEntry(nodeOptions: string): { file: string; execArgv: string[] } {
  const file = process.argv[1] as string
  // `bin/pombo` loads tsx in-process rather than by flag: a worker of a .ts entry needs the flag itself.
  const needsTsx = file.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx'))
  const execArgv = needsTsx ? [...process.execArgv, '--import', 'tsx'] : [...process.execArgv]
  const setByOperator = [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => a.startsWith('--max-semi-space-size'))
  if (!setByOperator) execArgv.push(WORKER_SEMI_SPACE_FLAG)
  return { file, execArgv }
}

class Member {
  child: ChildProcess | null = null
  startedAt = 0
  failures = 0
  timer: NodeJS.Timeout | null = null
  readonly asks = new Map<number, (json: MetricsJson | null) => void>()
  exited: Promise<void> = Promise.resolve()

  constructor(readonly slot: number) {}
}

export class WorkerGroup {
  readonly #members: Member[]
  readonly #entry: { file: string; execArgv: string[] }
  #stopping = false
  #askSeq = 0
  readonly #restarts: Counter

  constructor(private readonly o: GroupOptions) {
    this.#entry = o.entry ?? ownEntry(o.nodeOptions)
    this.#members = Array.from({ length: o.workers }, (_, i) => new Member(i + 1))
    const running = o.metrics.gauge('pombo_group_workers_running', 'Delivery worker processes of this group running now.', [])
    this.#restarts = new Counter({
      name: 'pombo_group_worker_restarts_total',
      help: 'Worker processes of this group started again after exiting on their own.',
      registers: [o.metrics.registry],
    })
    o.metrics.onScrape('group', () => {
      running.set(this.running)
    })
    o.metrics.addPeer(() => this.#gather())
  }

  /** Worker processes alive now. */
  get running(): number {
    return this.#members.filter((m) => m.child !== null).length
  }

  start(): void {
    for (const m of this.#members) this.#spawn(m)
  }

  /** SIGTERM to every worker; resolves when all have exited (each bounds its own drain by PM_DRAIN_TIMEOUT_MS). */
  async stop(): Promise<void> {
    this.#stopping = true
    for (const m of this.#members) {
      if (m.timer) clearTimeout(m.timer)
      m.child?.kill('SIGTERM')
    }
    await Promise.all(this.#members.map((m) => m.exited))
  }

  #spawn(m: Member): void {
    const { budget, log } = this.o
    const child = fork(this.#entry.file, ['serve', '--roles', 'worker'], {
      execArgv: this.#entry.execArgv,
      env: {
        ...process.env,
        [GROUP_MEMBER_ENV]: String(m.slot),
        PM_OPS_PORT: '0', // the parent serves the group's operations port
        PM_PG_POOL: String(budget.worker),
        PM_MIGRATE_ON_START: '0', // the parent migrated before starting it
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    m.child = child
    m.startedAt = Date.now()
    m.exited = new Promise((resolve) => child.once('exit', () => resolve()))
    log.info({ worker: m.slot, pid: child.pid }, 'delivery worker process started')
    child.on('message', (msg: FromMember) => {
      if (msg?.t === 'metrics') {
        m.asks.get(msg.id)?.(msg.json)
      }
    })
    // A failed send over the channel means the worker is going away; its exit handler follows.
    child.on('error', (err) => log.warn({ err, worker: m.slot }, 'delivery worker process channel error'))
    child.once('exit', (code, signal) => {
      m.child = null
      for (const answer of [...m.asks.values()]) answer(null)
      if (this.#stopping) return
      if (child.pid !== undefined && this.o.release) {
        this.o
          .release(child.pid)
          .catch((err) => log.warn({ err, worker: m.slot }, 'could not give back what the worker held; its leases lapse instead'))
      }
      const ranMs = Date.now() - m.startedAt
      m.failures = ranMs >= HEALTHY_MS ? 1 : m.failures + 1
      const min = this.o.restartMinMs ?? 1_000
      const wait = Math.min(this.o.restartMaxMs ?? 30_000, min * 2 ** (m.failures - 1))
      log.error(
        { worker: m.slot, code, signal, ran_ms: ranMs, restart_in_ms: wait },
        'delivery worker process exited; starting it again',
      )
      m.timer = setTimeout(() => {
        m.timer = null
        if (this.#stopping) return
        this.#restarts.inc()
        this.#spawn(m)
      }, wait)
    })
  }

  /** Every running worker's series (a worker that does not answer in time is left out of this scrape). */
  async #gather(): Promise<MetricsJson | null> {
    const parts = await Promise.all(
      this.#members.map(
        (m) =>
          new Promise<MetricsJson | null>((resolve) => {
            const child = m.child
            if (!child?.connected) return resolve(null)
            const id = ++this.#askSeq
            // A worker too busy to answer within the scrape is left out of it (its counters show at the next one).
            const timer = setTimeout(() => done(null), ASK_TIMEOUT_MS)
            const done = (json: MetricsJson | null) => {
              clearTimeout(timer)
              m.asks.delete(id)
              resolve(json)
            }
            m.asks.set(id, done)
            const ask: ToMember = { t: 'metrics', id }
            child.send(ask, (err) => {
              if (err) done(null)
            })
          }),
      ),
    )
    const got = parts.filter((p): p is MetricsJson => p !== null)
    if (got.length === 0) return null
    // Several workers: merge them here too, by family name, so the parent merges one list.
    return got.flat()
  }
}
