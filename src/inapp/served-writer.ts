// `servidos` (the spec, In-app campaign, Funnel: "entered a device's session package; the only counter incremented by
// the server"): counted once per (campaign, device), the first time the campaign enters that device's package. A
// poll answers without waiting: the pairs are group-committed in the background, and a per-process memory of pairs
// already recorded keeps repeated polls from writing at all. The table's key makes races and other instances count
// nothing twice; a failed write undercounts (the funnel may undercount, never inflate).
import type { Logger } from 'pino'
import { DEFAULT_LIMITS } from '../core/config'
import { GroupCommit, type GroupCommitStats } from '../db/group-commit'
import { type Db, query, retryingConflicts } from '../db/pool'
import type { Clock } from '../core/time'

interface ServedJob {
  appId: string
  campaignId: string
  deviceId: string
}

export class ServedWriter {
  readonly #gc: GroupCommit<ServedJob, boolean>
  /** Its group commit as metrics see it (queue depth, batches). */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }
  readonly #seen = new Set<string>()
  /** Past this many pairs the set starts over rather than grows. */
  readonly #seenMax: number
  readonly stats = { statements: 0, rows: 0 }

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    o: { maxBatch: number; concurrency: number; maxQueue: number; seenMax: number } = {
      maxBatch: DEFAULT_LIMITS.inappServedBatchMax,
      concurrency: DEFAULT_LIMITS.inappServedWriters,
      maxQueue: DEFAULT_LIMITS.inappServedQueueMax,
      seenMax: DEFAULT_LIMITS.inappServedSeenMax,
    },
  ) {
    this.#seenMax = o.seenMax
    this.#gc = new GroupCommit((jobs) => this.#write(jobs), {
      maxBatch: o.maxBatch,
      concurrency: o.concurrency,
      maxQueue: o.maxQueue,
    })
  }

  /** Records that the campaign entered the device's package; costs nothing when already recorded here. */
  note(appId: string, campaignId: string, deviceId: string): void {
    const k = campaignId + deviceId
    if (this.#seen.has(k)) return
    if (this.#seen.size >= this.#seenMax) this.#seen.clear()
    this.#seen.add(k)
    this.#gc.submit({ appId, campaignId, deviceId }).catch((err) => {
      this.#seen.delete(k)
      this.log.warn({ err: String(err) }, 'in-app servidos not recorded')
    })
  }

  /** Resolves once everything noted so far is written (tests, shutdown). */
  stop(): Promise<void> {
    return this.#gc.stop()
  }

  async #write(jobs: ServedJob[]): Promise<boolean[]> {
    this.stats.statements++
    const distinct = new Map<string, ServedJob>()
    for (const j of jobs) distinct.set(j.campaignId + j.deviceId, j)
    const rows = [...distinct.values()].sort((a, b) => (a.campaignId + a.deviceId < b.campaignId + b.deviceId ? -1 : 1))
    // One statement (one transaction): the new pairs, and each campaign's counter moved by exactly those.
    const r = await retryingConflicts(() =>
      query<{ n: string }>(
        this.db,
        `WITH input AS (
           SELECT * FROM json_to_recordset($1::json) AS r(app_id uuid, campanha_id uuid, device_id uuid)),
         ins AS (
           INSERT INTO inapp_served (app_id, campanha_id, device_id, served_at)
           SELECT i.app_id, i.campanha_id, i.device_id, $2 FROM input i
           JOIN inapp_campaigns c ON c.app_id = i.app_id AND c.id = i.campanha_id
           ON CONFLICT DO NOTHING RETURNING app_id, campanha_id),
         upd AS (
           UPDATE inapp_campaigns c SET servidos = c.servidos + x.n
           FROM (SELECT app_id, campanha_id, count(*) AS n FROM ins GROUP BY 1, 2) x
           WHERE c.app_id = x.app_id AND c.id = x.campanha_id RETURNING x.n)
         SELECT coalesce(sum(n), 0) AS n FROM upd`,
        [
          JSON.stringify(rows.map((j) => ({ app_id: j.appId, campanha_id: j.campaignId, device_id: j.deviceId }))),
          new Date(this.clock()),
        ],
      ),
    )
    this.stats.rows += Number(r.rows[0]?.n ?? 0)
    return jobs.map(() => true)
  }
}
