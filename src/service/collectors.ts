// What /metrics gathers when it is scraped, never on a hot path: Postgres pools, the work streams (length, pending,
// oldest pending age per partition), the delivery engine (actors, HTTP/2 sessions and streams per provider) and the
// webhook destinations (lag, disabled). Each collector is bounded by Metrics.render's timeout.
import type { GroupCommitStats } from '../db/group-commit'
import type { Db } from '../db/pool'
import { query } from '../db/pool'
import type { DeliveryModule } from '../delivery/module'
import type { Outcome } from '../providers/types'
import type { OutcomeRow } from '../delivery/outcomes'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { pipelineBySlot } from '../redis/slots'
import type { Metrics } from '../ops/metrics'
import type { Config } from '../core/config'
import { APNS_PRODUCTION, APNS_SANDBOX } from '../providers/apns'

/** deliveries' device_type as the spec's counters name it (android_*, ios_*); web pushes go through FCM. */
export function devicePlatform(deviceType: number): string {
  if (deviceType === 0) return 'ios'
  if (deviceType === 1) return 'android'
  if (deviceType === 5 || deviceType === 7 || deviceType === 8) return 'web'
  return 'other'
}

const OUTCOME_NAMES = { 1: 'successful', 2: 'failed', 3: 'errored' } as const

/** pombo_deliveries_total from the recorder's committed batches (one label lookup per batch and kind); the outcome
 *  writer's queue and batch sizes are reported with the other group-commit writers. */
export function deliveryCounter(m: Metrics): (rows: readonly OutcomeRow[]) => void {
  return (rows) => {
    // Called inside the recorder's batch: a failure here must never fail the batch (it would redeliver).
    try {
      const n = new Map<string, number>()
      for (const r of rows) {
        const k = `${devicePlatform(r.deviceType)}|${OUTCOME_NAMES[r.status]}`
        n.set(k, (n.get(k) ?? 0) + 1)
      }
      for (const [k, v] of n) {
        const [platform, outcome] = k.split('|') as [string, string]
        m.deliveries.labels(platform, outcome).inc(v)
      }
    } catch {}
  }
}

/** A provider's reason is labelled by its code (src/ops/labels.ts): the message after it, or a code the providers do
 *  not document, is a remote server's text and never a label value. */
export function providerObserver(m: Metrics): (platform: string, o: Outcome, seconds: number) => void {
  return (platform, o, seconds) => {
    m.providerDuration.labels(platform).observe(seconds)
    m.providerOutcomes.labels(platform, o.kind, 'reason' in o ? o.reason : '').inc()
  }
}

/** Google's OAuth token endpoint, where FCM access tokens come from. */
const GOOGLE_OAUTH = 'https://oauth2.googleapis.com'

/** The origins provider requests go to by this process's settings (FCM, its OAuth endpoint, APNs); a credential's
 *  own token_uri elsewhere is `other` in the HTTP/2 gauges. */
export function providerOrigins(cfg: Pick<Config, 'fcmBaseUrl' | 'apnsBaseUrl'>): string[] {
  const origins = [GOOGLE_OAUTH, cfg.fcmBaseUrl, ...(cfg.apnsBaseUrl ? [cfg.apnsBaseUrl] : [APNS_PRODUCTION, APNS_SANDBOX])]
  return origins.flatMap((u) => {
    try {
      return [new URL(u).origin]
    } catch {
      return []
    }
  })
}

/** Pacing waits as the actors start them (cause: rate, retry_after): series bound once. */
export function paceObserver(m: Metrics): (cause: 'rate' | 'retry_after', ms: number) => void {
  const waits = { rate: m.pacingWaits.labels('rate'), retry_after: m.pacingWaits.labels('retry_after') }
  const seconds = { rate: m.pacingWaitSeconds.labels('rate'), retry_after: m.pacingWaitSeconds.labels('retry_after') }
  return (cause, ms) => {
    waits[cause].inc()
    seconds[cause].inc(ms / 1000)
  }
}

export function collectPools(m: Metrics, pools: () => Array<[string, Db]>): void {
  const total = m.gauge('pombo_pg_pool_connections', 'Postgres connections open in a pool of this process.', ['pool'])
  const idle = m.gauge('pombo_pg_pool_idle', 'Postgres connections open and idle.', ['pool'])
  const inUse = m.gauge(
    'pombo_pg_pool_in_use',
    'Postgres connections checked out of a pool (running a query or a transaction).',
    ['pool'],
  )
  const max = m.gauge('pombo_pg_pool_max', "A pool's share of the process's connection budget (PM_PG_POOL).", ['pool'])
  const waiting = m.gauge('pombo_pg_pool_waiting', 'Queries waiting for a connection (the pool is exhausted).', ['pool'])
  m.onScrape('pg_pools', () => {
    for (const [name, p] of pools()) {
      total.labels(name).set(p.totalCount)
      idle.labels(name).set(p.idleCount)
      inUse.labels(name).set(p.totalCount - p.idleCount)
      max.labels(name).set(p.options.max ?? 0)
      waiting.labels(name).set(p.waitingCount)
    }
  })
}

/**
 * Per work partition: entries in the stream, entries delivered to a worker and not acknowledged, and the age of the
 * oldest of those (from its entry id's time). Every process with the worker role reports every partition (a
 * partition no worker owns is the one to see), so aggregate with max by (partition).
 */
export function collectStreams(m: Metrics, redis: RedisClient, keys: Keys, partitions: number, now: () => number): void {
  const length = m.gauge('pombo_stream_length', 'Entries in a work partition stream (XLEN).', ['partition'], 'max')
  const pending = m.gauge(
    'pombo_stream_pending',
    'Entries of a work partition read by a worker and not acknowledged.',
    ['partition'],
    'max',
  )
  const oldest = m.gauge(
    'pombo_stream_oldest_pending_age_seconds',
    'Age of the oldest unacknowledged entry of a work partition (0 when none).',
    ['partition'],
    'max',
  )
  m.allow(
    'partition',
    Array.from({ length: partitions }, (_, p) => String(p)),
  )
  m.onScrape('streams', async () => {
    // One pipeline per partition slot (a cluster keeps partitions apart), sent together.
    const res = await pipelineBySlot(
      redis,
      Array.from({ length: partitions }, (_, p) => p),
      (p) => keys.workStream(p),
      (pipe, p) => {
        pipe.xlen(keys.workStream(p))
        pipe.xpending(keys.workStream(p), 'workers')
      },
    )
    for (let p = 0; p < partitions; p++) {
      const [lenErr, len] = res[p]?.[0] ?? [null, 0]
      const [pendErr, pend] = res[p]?.[1] ?? [null, null]
      const label = String(p)
      length.labels(label).set(lenErr ? 0 : Number(len))
      // NOGROUP: no worker has created the group yet; nothing is pending.
      const summary = pendErr ? null : (pend as [number, string | null, string | null, unknown] | null)
      pending.labels(label).set(summary ? Number(summary[0]) : 0)
      const minId = summary?.[1]
      oldest.labels(label).set(minId ? Math.max(0, (now() - Number(minId.split('-')[0])) / 1000) : 0)
    }
  })
}

export function collectDelivery(m: Metrics, delivery: () => DeliveryModule | null, origins: readonly string[] = []): void {
  m.allow('origin', origins)
  const actors = m.gauge('pombo_actors_running', 'App actors alive in this worker.', [])
  const owned = m.gauge('pombo_partitions_owned', 'Work partitions whose lease this worker holds.', [])
  const held = m.gauge(
    'pombo_worker_sends_held',
    'Sends a worker has read from its streams and not finished (at most PM_WORKER_MAX_SENDS).',
    [],
  )
  const heldMax = m.gauge(
    'pombo_worker_sends_max',
    'PM_WORKER_MAX_SENDS of each worker: held at it, the worker reads no more and a backlog waits in Redis.',
    [],
  )
  const sessions = m.gauge('pombo_h2_sessions', 'HTTP/2 sessions open per provider origin.', ['origin'])
  const streams = m.gauge('pombo_h2_streams_active', 'HTTP/2 streams in flight per provider origin.', ['origin'])
  const waiting = m.gauge('pombo_h2_requests_waiting', 'Provider requests waiting for a stream per provider origin.', ['origin'])
  m.onScrape('delivery', () => {
    const d = delivery()
    if (!d) return
    actors.set(d.worker.actorCount)
    owned.set(d.worker.ownedPartitions.length)
    held.set(d.worker.heldSends)
    heldMax.set(d.worker.maxHeldSends)
    sessions.reset()
    streams.reset()
    waiting.reset()
    for (const [key, s] of Object.entries(d.pool.stats())) {
      // The origin key may carry an APNs signing-key group after '#': the origin alone keeps the label bounded.
      const origin = key.split('#')[0] as string
      sessions.labels(origin).inc(s.sessions)
      streams.labels(origin).inc(s.active)
      waiting.labels(origin).inc(s.waiting)
    }
  })
}

/** Webhook destinations: disabled ones, and how far behind the active ones are (age of their oldest due event). */
export function collectWebhooks(m: Metrics, db: Db): void {
  const disabled = m.gauge(
    'pombo_webhook_destinations_disabled',
    'Active webhook destinations disabled after consecutive failures.',
    [],
    'max',
  )
  const lag = m.gauge(
    'pombo_webhook_lag_seconds',
    'Age of the oldest event not yet delivered to an enabled webhook destination.',
    [],
    'max',
  )
  m.onScrape('webhooks', async () => {
    const r = await query<{ disabled: number; lag: number | null }>(
      db,
      `SELECT count(*) FILTER (WHERE d.disabled_at IS NOT NULL)::int AS disabled,
              max(extract(epoch FROM now() - (SELECT e.created_at FROM events e
                                               WHERE e.app_id = d.app_id AND e.seq > d.last_seq AND e.canal = 'webhook'
                                               ORDER BY e.seq LIMIT 1)) ) FILTER (WHERE d.disabled_at IS NULL)::float8 AS lag
         FROM webhook_destinations d WHERE d.active`,
    )
    disabled.set(r.rows[0]?.disabled ?? 0)
    lag.set(Math.max(0, r.rows[0]?.lag ?? 0))
  })
}

/** Group-commit writers by name: batch sizes as they start (a histogram child per writer), queue and in-flight
 *  batches at scrape time. */
export function collectGroupCommits(m: Metrics, writers: Array<[string, GroupCommitStats]>): void {
  // One collector per call (the outcome writer is added when the worker role starts): named by its writers.
  const key = `group_commits:${writers.map(([n]) => n).join(',')}`
  m.allow(
    'writer',
    writers.map(([n]) => n),
  )
  const queued = m.gauge('pombo_group_commit_queued', 'Jobs waiting for a group-commit batch, per writer.', ['writer'])
  const inflight = m.gauge('pombo_group_commit_inflight', 'Group-commit batches being written, per writer.', ['writer'])
  for (const [name, gc] of writers) {
    const batch = m.groupCommitBatch.labels(name)
    gc.onBatch = (n) => {
      try {
        batch.observe(n)
      } catch {}
    }
  }
  m.onScrape(key, () => {
    for (const [name, gc] of writers) {
      queued.labels(name).set(gc.queued)
      inflight.labels(name).set(gc.inflight)
    }
  })
}
