// A limit per app per fixed window, shared by every instance through Redis. All the takes of one event-loop turn
// become one INCRBY (+ PEXPIRE) per app, pipelined (one pipeline per cluster slot, sent together), and each request learns its own position in the window
// from the new total: exactly as precise as one INCR per request, at a fraction of the round trips under load.
import type { RedisClient } from './client'
import { pipelineBySlot, type Reply } from './slots'

interface Take {
  resolve: (allowed: boolean) => void
  reject: (err: unknown) => void
}

export class WindowCounter {
  #pending = new Map<string, Take[]>()
  #scheduled = false

  /** `limit` 0 disables the counter. */
  constructor(
    private readonly redis: RedisClient,
    private readonly key: (appId: string, window: number) => string,
    private readonly windowMs: number,
    readonly limit: number,
    private readonly now: () => number,
  ) {}

  /** Counts one event for the app; false when it is past the window's limit (it still counts: it was attempted). */
  take(appId: string): Promise<boolean> {
    if (this.limit <= 0) return Promise.resolve(true)
    return new Promise((resolve, reject) => {
      const list = this.#pending.get(appId)
      if (list) list.push({ resolve, reject })
      else this.#pending.set(appId, [{ resolve, reject }])
      if (!this.#scheduled) {
        this.#scheduled = true
        setImmediate(() => this.#flush())
      }
    })
  }

  async #flush(): Promise<void> {
    this.#scheduled = false
    const batch = this.#pending
    this.#pending = new Map()
    const window = Math.floor(this.now() / this.windowMs)
    const apps = [...batch.keys()]
    let results: Reply[][]
    try {
      // On a cluster each app's key lives in its app's slot: one pipeline per slot, sent together.
      results = await pipelineBySlot(
        this.redis,
        apps,
        (app) => this.key(app, window),
        (pipe, app) => {
          const key = this.key(app, window)
          pipe.incrby(key, (batch.get(app) as Take[]).length)
          pipe.pexpire(key, this.windowMs * 2)
        },
      )
    } catch (err) {
      for (const list of batch.values()) for (const t of list) t.reject(err)
      return
    }
    apps.forEach((app, i) => {
      const list = batch.get(app) as Take[]
      const [err, total] = results[i]?.[0] ?? [new Error('redis: no reply'), 0]
      if (err) {
        for (const t of list) t.reject(err)
        return
      }
      // The takes of this turn hold positions total-n+1 … total, in arrival order.
      const first = Number(total) - list.length + 1
      list.forEach((t, j) => {
        t.resolve(first + j <= this.limit)
      })
    })
  }
}
