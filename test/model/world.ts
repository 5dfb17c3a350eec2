// The real system a send's life is modelled against (test/model/sends-model.ts): an API process with the periodic
// jobs on (the sweeper), one or two worker processes of the same deployment (own TestService each, so a worker can be
// stopped and another started while the API stays), the fake providers, and a few apps with registered devices.
// Settings are short so that grace periods, leases and retries pass within a few seconds of real time (stream ids are
// Redis' clock, so the run uses real time, never a fake clock).
import Redis from 'ioredis'
import { parseServiceAccount } from '../../src/credentials/validate'
import { partitionOf, WORK_GROUP } from '../../src/redis/partitions'
import { type App, startDelivery } from '../helpers/delivery'
import { basic, REDIS_URL, startService, type TestService } from '../helpers/service'

interface Tap {
  teardown(fn: () => unknown): void
}

/** How a device's provider answers: at once, after 300 ms (keeps its sends open), or always 503 (errored). */
export type Behaviour = 'ok' | 'slow' | 'failing'

export interface Device {
  id: string
  token: string
  behaviour: Behaviour
}

export const APPS = 3
/** Devices each app registers at start: ok ones, one slow, one failing. */
const START_DEVICES: Behaviour[] = ['ok', 'ok', 'ok', 'ok', 'slow', 'failing']
const PARTITIONS = 4

export const MODEL_ENV = {
  PM_PARTITIONS: String(PARTITIONS),
  PM_DEFAULT_PLAN: 'pro',
  PM_HANDOFF_GRACE_MS: '2000',
  PM_SWEEP_EVERY_MS: '500',
  // A lease outlives a busy machine's stalls (the API, the workers and the fakes share one process).
  PM_LEASE_MS: '3000',
  PM_HEARTBEAT_MS: '500',
  PM_DELIVERY_RETRY_MS: '200,400',
  // Every read sees Postgres (no repeat-read cache), and the model's reads are never rate limited.
  PM_READ_CACHE_MS: '0',
  PM_LIMIT_READS_PER_SEC: '1000000',
  PM_LIMIT_IP_PER_MIN: '0',
}

/** One accepted FCM message: which send, which device token, when it was answered. */
export interface Delivered {
  sendId: string
  token: string
  at: number
}

export class World {
  readonly workers: TestService[] = []
  /** Every worker started in the run, stopped ones included (their logs). */
  readonly #everyWorker: TestService[] = []
  readonly devices: Device[][] = []
  readonly #timeline: string[] = []
  readonly #started = Date.now()
  readonly #redis = new Redis(REDIS_URL)

  private constructor(
    private readonly t: Tap,
    readonly d: Awaited<ReturnType<typeof startDelivery>>,
    readonly apps: App[],
  ) {
    t.teardown(() => this.#redis.disconnect())
  }

  static async start(t: Tap): Promise<World> {
    // A single Redis always: "Redis emptied" deletes the deployment's keys with SCAN on one connection.
    const d = await startDelivery(t, { jobs: true, env: MODEL_ENV, service: { roles: ['api'], cluster: false, ops: false } })
    d.fcm.script(/-slow$/, 'slow:300')
    d.fcm.script(/-failing$/, 'unavailable')
    // One service account for every app: each new one costs an RSA key (about a second on a busy machine).
    const account = JSON.stringify(d.fcm.serviceAccount('pombo-model'))
    // Each app on a partition of its own, so that which sends share a stream does not change from run to run.
    const apps: App[] = []
    const taken = new Set<number>()
    while (apps.length < APPS) {
      const app = await d.s.createApp({ nome: `Modelo ${apps.length}` })
      const p = partitionOf(app.id, PARTITIONS)
      if (taken.has(p)) continue
      taken.add(p)
      const { credential, meta } = parseServiceAccount(account)
      await d.creds.save(app.id, 'fcm', credential, meta)
      apps.push(app)
    }
    const w = new World(t, d, apps)
    const devices = await Promise.all(
      apps.map((app, a) =>
        Promise.all(
          START_DEVICES.map(async (behaviour, i) => {
            const token = `m${a}-${i}-${behaviour}`
            return { id: await d.device(app, token), token, behaviour }
          }),
        ),
      ),
    )
    w.devices.push(...devices)
    await w.startWorker()
    w.note('world started')
    return w
  }

  get api(): TestService {
    return this.d.s
  }

  /** A line of the run's timeline (printed when an invariant breaks). */
  note(line: string): void {
    this.#timeline.push(`+${String(Date.now() - this.#started).padStart(6)} ms  ${line}`)
  }

  get timeline(): readonly string[] {
    return this.#timeline
  }

  /**
   * When a worker found a partition lease of its own gone (epoch ms): the process stalled past PM_LEASE_MS (a busy
   * machine runs the API, the workers and the fakes in one process), another worker may have taken the partition and
   * its pending entries over, and a device may then get a send twice, as after a crash.
   */
  leaseLosses(): number[] {
    const out: number[] = []
    for (const w of this.#everyWorker)
      for (const l of w.logs) if (/^partition lease lost/.test(String(l.msg))) out.push(Number(l.time))
    return out
  }

  /** The services' warnings and errors, and what the sweepers and partition leases did, in time order. */
  logs(): string[] {
    const lines: Array<{ at: number; text: string }> = []
    const from = (name: string, svc: TestService) => {
      for (const l of svc.logs) {
        const msg = String(l.msg ?? '')
        if (Number(l.level) < 40 && !/sweeper|partition/.test(msg)) continue
        const { level, time, msg: _m, pid: _p, hostname: _h, ...rest } = l
        const at = Number(time) - this.#started
        lines.push({ at, text: `+${String(at).padStart(6)} ms  ${name} ${level} ${msg} ${JSON.stringify(rest)}` })
      }
    }
    from('api', this.api)
    for (const [i, w] of this.#everyWorker.entries()) from(`worker ${i} (${w.svc.delivery?.worker.id})`, w)
    return lines.sort((a, b) => a.at - b.at).map((l) => l.text)
  }

  async register(app: number, behaviour: Behaviour): Promise<Device> {
    const list = this.devices[app] as Device[]
    const token = `m${app}-${list.length}-${behaviour}`
    const device = { id: await this.d.device(this.apps[app] as App, token), token, behaviour }
    list.push(device)
    return device
  }

  /** A worker process of the deployment (its own pools and Redis connections; the API's schema and prefix). */
  async startWorker(): Promise<void> {
    const w = await startService(this.t, {
      roles: ['worker'],
      shareWith: this.api,
      jobs: true,
      providerCa: this.d.ca,
      ops: false,
      env: { PM_FCM_BASE_URL: this.d.fcm.url, PM_APNS_BASE_URL: this.d.apns.url, ...MODEL_ENV },
    })
    this.workers.push(w)
    this.#everyWorker.push(w)
    this.note(`  worker ${w.svc.delivery?.worker.id} started`)
  }

  /** Stops worker `i` (its actors finish what is in flight; its pending entries wait for the next owner). */
  async stopWorker(i: number): Promise<void> {
    const [w] = this.workers.splice(i, 1)
    await w?.svc.stop()
    this.note(`  worker ${w?.svc.delivery?.worker.id} stopped`)
  }

  /** Deletes every Redis key of this deployment (streams, groups, leases, locks, counters); answers how many. */
  async emptyRedis(): Promise<number> {
    let deleted = 0
    let cursor = '0'
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', `${this.api.cfg.redisPrefix}:*`, 'COUNT', 1000)
      if (keys.length) deleted += await this.#redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    return deleted
  }

  /** One sweep now, beside the periodic ones (re-enqueueing is always safe: a duplicate entry is a no-op). */
  sweep(): Promise<number> {
    return this.api.svc.deps.sends.handoff.sweep()
  }

  /** POST /api/v1/notifications as the app; answers status and body. */
  async send(
    app: number,
    body: Record<string, unknown>,
  ): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
    const a = this.apps[app] as App
    const r = await this.api.call('POST', '/api/v1/notifications', {
      body: { app_id: a.id, contents: { en: 'Modelo', pt: 'Modelo' }, ...body },
      headers: basic(a.api_key),
    })
    return { status: r.status, json: r.json ?? {}, text: r.text }
  }

  /** GET /api/v1/notifications/{id}?app_id= (the read shape). */
  async read(app: number, id: string): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
    const a = this.apps[app] as App
    const r = await this.api.call('GET', `/api/v1/notifications/${id}?app_id=${a.id}`, { headers: basic(a.api_key) })
    return { status: r.status, json: r.json ?? {}, text: r.text }
  }

  /** Every message the fake FCM accepted so far, by send. */
  delivered(): Map<string, Delivered[]> {
    const out = new Map<string, Delivered[]>()
    for (const r of this.d.fcm.delivered) {
      const sendId = String(r.body?.message?.data?.pm_msg_id ?? '')
      const list = out.get(sendId) ?? []
      list.push({ sendId, token: String(r.target), at: r.at })
      out.set(sendId, list)
    }
    return out
  }

  /** When the workers' group last read the app's stream (the ms of its last-delivered id); 0 if never. */
  async lastRead(app: number): Promise<number> {
    const stream = this.api.svc.deps.keys.workStream(partitionOf((this.apps[app] as App).id, PARTITIONS))
    const groups = (await this.#redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][]
    for (const g of groups) {
      const i = g.indexOf('name')
      const j = g.indexOf('last-delivered-id')
      if (g[i + 1] === WORK_GROUP && j >= 0) return Number(String(g[j + 1]).split('-')[0])
    }
    return 0
  }

  /**
   * Stream entries read by a worker and not acknowledged, over every partition: partition, entry id, the consumer
   * holding it (and whether that worker still runs), how long it has waited, how often it was read, its send.
   */
  async pendingEntries(): Promise<string[]> {
    const live = new Set(this.workers.map((w) => w.svc.delivery?.worker.id))
    const out: string[] = []
    for (let p = 0; p < PARTITIONS; p++) {
      const stream = this.api.svc.deps.keys.workStream(p)
      const rows = (await this.#redis.xpending(stream, WORK_GROUP, '-', '+', 100).catch(() => [])) as Array<
        [string, string, number, number]
      >
      for (const [id, consumer, idle, times] of rows) {
        const [entry] = (await this.#redis.xrange(stream, id, id)) as Array<[string, string[]]>
        const fields = entry?.[1] ?? []
        const send = fields[fields.indexOf('s') + 1]
        const who = live.has(consumer) ? 'a running worker' : 'a stopped worker'
        out.push(`p${p} ${id} (send ${send}) pending on ${consumer} (${who}) for ${idle} ms, read ${times}×`)
      }
    }
    return out
  }
}
