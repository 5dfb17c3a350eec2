// Erasures started in the dashboard. Erasing a large app takes minutes, so the form's request does not wait for it:
// it starts the erasure (the same Eraser as `pombo app delete` / `pombo org delete`) in this process and answers at
// once with the job's status page, which reloads itself until the summary is there. The job's state lives in Redis,
// so the page can be served by any instance, and a Redis lock per tenant makes a second submission (another tab,
// another instance) land on the running job instead of starting a second one. Neither names the tenant beyond the
// run: the job's hash keeps no id and no name of what it erases, and the lock goes before the job is marked done.
// If the process dies mid-way the heartbeat stops, the page says the erasure was interrupted, and typing the name
// again continues it (the erasure is resumable: src/erasure/erase.ts).
import { type Actor, BY_CODE } from '../audit/record'
import { randomBytes } from 'node:crypto'
import type { Clock } from '../core/time'
import { Eraser, type ErasureDeps, type Removed } from '../erasure/erase'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'

export type ErasureKind = 'app' | 'org'

export interface ErasureJob {
  id: string
  kind: ErasureKind
  /** The person who started it. */
  userId: string
  /** Where to go afterwards: the organisation's page for an app (the organisation stays), else the apps. */
  back: string
  state: 'andamento' | 'concluida' | 'falhou' | 'interrompida'
  /** The last progress line (`table: done / total`). */
  progress: string
  startedAt: number
  finishedAt: number | null
  /** What was removed (set when done). */
  removed: (Removed & { apps?: number }) | null
}

/** A heartbeat this old means the process running the job is gone. */
const STALE_MS = 30_000
const BEAT_MS = 5_000
/** How long a job's page (and summary) can be read. */
const KEEP_S = 24 * 3600
/** Progress is written at most this often. */
const PROGRESS_EVERY_MS = 500

/** Releases the lock only if it is still this job's (a stale one may have been taken over). */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`

export type EraserParts = Omit<ErasureDeps, 'progress'>

export class ErasureJobs {
  readonly #running = new Set<Promise<void>>()

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly eraser: EraserParts,
  ) {}

  /**
   * Starts erasing the tenant, or finds the erasure of it already running (its job id is answered either way). The
   * caller has checked the person's right and the typed name.
   */
  async start(kind: ErasureKind, tenantId: string, userId: string, back: string, by: Actor = BY_CODE): Promise<string> {
    const id = randomBytes(16).toString('hex')
    const lock = this.keys.erasureLock(tenantId)
    const got = await this.redis.set(lock, id, 'PX', STALE_MS, 'NX')
    if (got === null) {
      const other = await this.redis.get(lock)
      if (other && (await this.read(other))?.state === 'andamento') return other
      // The lock's job stopped beating (its process is gone) or its record expired: this one continues the erasure.
      await this.redis.set(lock, id, 'PX', STALE_MS)
    }
    const key = this.keys.erasureJob(id)
    const now = this.clock()
    await this.redis.hset(key, { kind, user: userId, back, state: 'andamento', progress: '', started: now, beat: now })
    await this.redis.expire(key, KEEP_S)
    const run = this.#run(id, kind, tenantId, lock, by).finally(() => this.#running.delete(run))
    this.#running.add(run)
    return id
  }

  async read(id: string): Promise<ErasureJob | null> {
    if (!/^[0-9a-f]{32}$/.test(id)) return null
    const h = await this.redis.hgetall(this.keys.erasureJob(id))
    if (!h.kind || !h.user) return null
    let state = h.state as ErasureJob['state']
    if (state === 'andamento' && this.clock() - Number(h.beat) > STALE_MS) state = 'interrompida'
    return {
      id,
      kind: h.kind === 'org' ? 'org' : 'app',
      userId: h.user,
      back: h.back || '/apps',
      state,
      progress: h.progress ?? '',
      startedAt: Number(h.started),
      finishedAt: h.finished ? Number(h.finished) : null,
      removed: h.removed ? JSON.parse(h.removed) : null,
    }
  }

  /** Waits for the jobs of this process, at most `ms` (a stopping service lets them finish a last batch). */
  async drain(ms: number): Promise<void> {
    if (this.#running.size === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.allSettled([...this.#running]),
      new Promise((r) => {
        timer = setTimeout(r, ms)
      }),
    ])
    clearTimeout(timer)
  }

  async #run(id: string, kind: ErasureKind, tenantId: string, lock: string, by: Actor): Promise<void> {
    const key = this.keys.erasureJob(id)
    let lastProgress = 0
    let pending: string | null = null
    const write = (line: string) => {
      pending = line
      const now = this.clock()
      if (now - lastProgress < PROGRESS_EVERY_MS) return
      lastProgress = now
      void this.redis.hset(key, { progress: line, beat: now }).catch(() => {})
    }
    const beat = setInterval(() => {
      const now = this.clock()
      void this.redis.hset(key, { beat: now, ...(pending ? { progress: pending } : {}) }).catch(() => {})
      void this.redis.eval(EXTEND, 1, lock, id, String(STALE_MS)).catch(() => {})
    }, BEAT_MS)
    beat.unref()
    try {
      const eraser = new Eraser({ ...this.eraser, progress: write })
      const removed = kind === 'app' ? await eraser.eraseApp(tenantId, by) : await eraser.eraseOrg(tenantId, by)
      clearInterval(beat)
      // The lock names the tenant: it goes before the job says it is done, so nothing of the tenant is left then.
      await this.redis.eval(RELEASE, 1, lock, id)
      await this.redis.hset(key, {
        state: 'concluida',
        progress: '',
        removed: JSON.stringify(removed),
        finished: this.clock(),
        beat: this.clock(),
      })
    } catch (err) {
      clearInterval(beat)
      await this.redis.eval(RELEASE, 1, lock, id).catch(() => {})
      await this.redis
        .hset(key, { state: 'falhou', progress: err instanceof Error ? err.message : String(err), finished: this.clock() })
        .catch(() => {})
    }
  }
}
