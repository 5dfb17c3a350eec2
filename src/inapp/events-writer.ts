// Group commit of proven in-app events (the spec, In-app device routes, eventos): events whose proof verified in memory
// are gathered from many requests and written in ONE statement per batch, after locking the batch's campaigns (one
// transaction: a throw means nothing of the batch was written). Each occurrence (app, campaign, device, event, ocorrencia_n) is a row keyed in Postgres:
// `INSERT ... ON CONFLICT DO NOTHING RETURNING` says which rows were new, the counters move by exactly those, so
// retries, duplicates in one batch and races between batches or instances count each occurrence once.
import type { Logger } from 'pino'
import { GroupCommit, type GroupCommitStats } from '../db/group-commit'
import { type Db, queryPrepared, retryingConflicts, tx } from '../db/pool'
import type { Clock } from '../core/time'

export const EVENT_CODES = { impressao: 1, clique: 2, fechou: 3 } as const
export type EventName = keyof typeof EVENT_CODES
export type Verdict = 'aceito' | 'duplicado' | 'prova_invalida' | 'acima_do_cap'

export interface EventJob {
  appId: string
  campaignId: string
  deviceId: string
  event: EventName
  n: number
  atMs: number
}

export interface EventWriterOptions {
  maxBatch: number
  concurrency: number
  maxQueue: number
}

const WRITE = `
WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS r(app_id uuid, campanha_id uuid, device_id uuid, evento smallint, n smallint, em timestamptz)),
camp AS (
  SELECT c.app_id, c.id, c.cap_total FROM inapp_campaigns c
  WHERE (c.app_id, c.id) IN (SELECT DISTINCT app_id, campanha_id FROM input)),
ins AS (
  INSERT INTO inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em, received_at)
  SELECT i.app_id, i.campanha_id, i.device_id, i.evento, i.n, i.em, $2
  FROM input i JOIN camp c ON c.app_id = i.app_id AND c.id = i.campanha_id
  WHERE (c.cap_total = 0 OR i.n <= c.cap_total)
    -- The key holds em (the partition column, migration 0029), so the same occurrence with another em would not
    -- conflict: the key's prefix is probed in every week first. The batch holds its campaigns' rows (LOCK_CAMPAIGNS,
    -- the statement before, in the same transaction), so a batch racing with this one on a campaign has committed
    -- before this statement's snapshot is taken, and its rows are seen here.
    AND NOT EXISTS (SELECT 1 FROM inapp_events e
                     WHERE e.app_id = i.app_id AND e.campanha_id = i.campanha_id AND e.device_id = i.device_id
                       AND e.evento = i.evento AND e.ocorrencia_n = i.n)
  ON CONFLICT DO NOTHING
  RETURNING app_id, campanha_id, device_id, evento, ocorrencia_n),
upd AS (
  UPDATE inapp_campaigns c SET impressoes = c.impressoes + x.imp, cliques = c.cliques + x.cli, fechados = c.fechados + x.fec
  FROM (SELECT app_id, campanha_id, count(*) FILTER (WHERE evento = 1) AS imp, count(*) FILTER (WHERE evento = 2) AS cli,
          count(*) FILTER (WHERE evento = 3) AS fec
        FROM ins GROUP BY 1, 2) x
  WHERE c.app_id = x.app_id AND c.id = x.campanha_id
  RETURNING 1)
SELECT 'c' AS k, app_id::text || id::text AS key, cap_total FROM camp
UNION ALL
SELECT 'i', campanha_id::text || device_id::text || ':' || evento || ':' || ocorrencia_n, NULL FROM ins`

/** The campaigns of a batch, locked in key order before WRITE: batches on one campaign take turns (they already
 *  did, at its counters' UPDATE), so WRITE's probe sees every occurrence a batch before it wrote, whatever its em. */
const LOCK_CAMPAIGNS = `
SELECT 1 FROM inapp_campaigns
 WHERE (app_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))
 ORDER BY app_id, id FOR NO KEY UPDATE`

function rowKey(j: EventJob): string {
  return `${j.campaignId}${j.deviceId}:${EVENT_CODES[j.event]}:${j.n}`
}

export class EventWriter {
  readonly #gc: GroupCommit<EventJob, Verdict>
  /** Its group commit as metrics see it (queue depth, batches). */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }
  /** Statements written and events they carried (tests and the bench read them). */
  readonly stats = { statements: 0, events: 0, fresh: 0 }

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    o: EventWriterOptions,
  ) {
    this.#gc = new GroupCommit((jobs) => this.#write(jobs), o)
  }

  submit(j: EventJob): Promise<Verdict> {
    return this.#gc.submit(j)
  }

  stop(): Promise<void> {
    return this.#gc.stop()
  }

  async #write(jobs: EventJob[]): Promise<Verdict[]> {
    this.stats.statements++
    this.stats.events += jobs.length
    // Keys de-duplicated (ON CONFLICT cannot touch one row twice in a statement) and sorted (one lock order).
    const distinct = new Map<string, EventJob>()
    for (const j of jobs) if (!distinct.has(rowKey(j))) distinct.set(rowKey(j), j)
    const rows = [...distinct.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([, j]) => ({
        app_id: j.appId,
        campanha_id: j.campaignId,
        device_id: j.deviceId,
        evento: EVENT_CODES[j.event],
        n: j.n,
        em: new Date(j.atMs).toISOString(),
      }))
    const campaigns = [...new Map(rows.map((x) => [x.app_id + x.campanha_id, x])).values()]
    const r = await retryingConflicts(
      () =>
        tx(this.db, async (c) => {
          await queryPrepared(c, LOCK_CAMPAIGNS, [campaigns.map((x) => x.app_id), campaigns.map((x) => x.campanha_id)])
          return queryPrepared<{ k: string; key: string; cap_total: number | null }>(c, WRITE, [
            JSON.stringify(rows),
            new Date(this.clock()),
          ])
        }),
      (err, attempt) =>
        this.log.warn({ code: (err as { code?: string }).code, attempt, events: rows.length }, 'in-app events batch retried'),
    )
    const caps = new Map<string, number>()
    const fresh = new Set<string>()
    for (const x of r.rows) {
      if (x.k === 'c') caps.set(x.key, x.cap_total as number)
      else fresh.add(x.key)
    }
    this.stats.fresh += fresh.size
    const owned = new Set<string>()
    return jobs.map((j): Verdict => {
      const cap = caps.get(j.appId + j.campaignId)
      if (cap === undefined) return 'prova_invalida' // the campaign is gone (deleted) or of another app
      if (cap > 0 && j.n > cap) return 'acima_do_cap'
      const k = rowKey(j)
      if (fresh.has(k) && !owned.has(k)) {
        owned.add(k)
        return 'aceito'
      }
      return 'duplicado'
    })
  }
}
