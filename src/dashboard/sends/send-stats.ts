// The numbers of one send's page: its row (exact counters, the message as sent), and what its delivery and receipt
// rows tell over time: the funnel since the send, the split by platform, the send-to-receipt times and the failures
// by reason. Those rows are read by primary-key range only (deliveries (send_id, device_id), receipts (day, send_id,
// device_id, kind)), and for a big send only a uniform sample of them: the devices whose id falls in the first
// `fraction` of the UUID space (ids are random, so they are a random sample of the audience). The page costs the
// same for a send to 100 devices as for one to a million; totals stay exact (the send's own counters), the shapes
// (over time, by platform, by reason, percentiles) are estimated from the sample and say so.
import { type Db, query } from '../../db/pool'
import { type FailureCategory, failureCategory } from './failures'

/** Rows of each kind read for one page at most (deliveries, and receipts). */
export const SAMPLE_ROWS = 5_000

export interface SendDetail {
  id: string
  name: string | null
  lane: number
  target_kind: string
  included_segments: string[]
  include_player_ids: string[] | null
  include_external_user_ids: string[] | null
  platforms: { ios: boolean; android: boolean; web: boolean }
  message: Record<string, unknown>
  headings: Record<string, string> | null
  contents: Record<string, string>
  external_id: string | null
  recipients: number
  recipients_exact: boolean
  expansion_done: boolean
  successful: number
  failed: number
  errored: number
  remaining: number
  converted: number
  recebidos: number
  ttl_s: number
  queued_at: Date
  send_after: Date | null
  completed_at: Date | null
  problem: string | null
  deliveries_pruned_at: Date | null
  /** When the send's receipts were folded into the archive (no times left). */
  archived: boolean
}

export async function loadSend(db: Db, appId: string, id: string): Promise<SendDetail | null> {
  const r = await query<SendDetail>(
    db,
    `SELECT s.id, s.name, s.lane, s.target_kind, s.included_segments, s.include_player_ids, s.include_external_user_ids,
            s.platforms, s.message, s.headings, s.contents, s.external_id, s.recipients, s.recipients_exact,
            s.expansion_done, s.successful, s.failed, s.errored, s.remaining, s.converted, s.recebidos, s.ttl_s,
            s.queued_at, s.send_after, s.completed_at, s.problem, s.deliveries_pruned_at,
            (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date
              < COALESCE((SELECT archived_before FROM receipt_archive_state), '-infinity') AS archived
       FROM sends s WHERE s.app_id = $1 AND s.id = $2`,
    [appId, id],
  )
  return r.rows[0] ?? null
}

/** When the send started counting: its schedule, or when it was accepted. */
export const startOf = (s: SendDetail): Date => s.send_after ?? s.queued_at

export const PLATFORM_LABELS = { android: 'Android', ios: 'iOS', web: 'Web' } as const
export type PlatformKey = keyof typeof PLATFORM_LABELS

export function platformOf(deviceType: number): PlatformKey {
  return deviceType === 0 ? 'ios' : deviceType === 1 ? 'android' : 'web'
}

export interface PlatformCounts {
  devices: number
  accepted: number
  failed: number
  pending: number
  proven: number
  clicked: number
}

export interface SendStats {
  /** Share of the audience's id space read (1: every row, the numbers are exact). */
  fraction: number
  sampledDeliveries: number
  sampledReceipts: number
  /** Cumulative counts at the end of each step since the start, scaled to the send's exact totals. */
  timeline: { stepMs: number; at: number[]; accepted: number[]; proven: number[]; clicked: number[] }
  platforms: Record<PlatformKey, PlatformCounts>
  /** Send-to-receipt times of the receipts read, in ms. */
  latency: { count: number; p50: number; p90: number; p99: number; histogram: Array<{ upToMs: number | null; n: number }> } | null
  failures: Array<{ category: FailureCategory; n: number; words: string[] }>
}

const STEPS_MS = [
  1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
  10_800_000, 21_600_000, 43_200_000, 86_400_000,
]
const MAX_STEPS = 60
/** Upper edges of the time-to-receipt histogram (ms); the last bucket is open. */
export const LATENCY_EDGES_MS = [
  1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000,
]

/** The bound below which a device id falls in the first `fraction` of the UUID space; null for all of it. */
export function sampleBound(fraction: number): string | null {
  if (fraction >= 1) return null
  const hi = Math.max(1, Math.floor(fraction * 0x1_0000_0000))
  return `${hi.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i] as number
}

function emptyPlatform(): PlatformCounts {
  return { devices: 0, accepted: 0, failed: 0, pending: 0, proven: 0, clicked: 0 }
}

export async function sendStats(db: Db, appId: string, s: SendDetail, nowMs: number): Promise<SendStats> {
  const fraction = Math.min(1, SAMPLE_ROWS / Math.max(1, s.recipients))
  const bound = sampleBound(fraction)
  const start = startOf(s)
  const day = start.toISOString().slice(0, 10)
  const params = (extra: unknown[]) => (bound ? [...extra, bound] : extra)
  type DeliveryRow = { device_id: string; device_type: number; status: number; reason: string | null; ms: number }
  const [dels, recs] = await Promise.all([
    s.deliveries_pruned_at
      ? Promise.resolve({ rows: [] as DeliveryRow[] })
      : query<DeliveryRow>(
          db,
          `SELECT device_id, device_type, status, reason, (extract(epoch FROM updated_at - $3::timestamptz) * 1000)::float8 AS ms
             FROM deliveries WHERE send_id = $1 AND app_id = $2 ${bound ? 'AND device_id < $4' : ''}`,
          params([s.id, appId, start]),
        ),
    s.archived
      ? Promise.resolve({ rows: [] as Array<{ device_id: string; kind: number; ms: number }> })
      : query<{ device_id: string; kind: number; ms: number }>(
          db,
          `SELECT device_id, kind, (extract(epoch FROM at - $4::timestamptz) * 1000)::float8 AS ms
             FROM receipts WHERE day = $3 AND send_id = $1 AND app_id = $2 ${bound ? 'AND device_id < $5' : ''}`,
          params([s.id, appId, day, start]),
        ),
  ])
  const platforms: Record<PlatformKey, PlatformCounts> = { android: emptyPlatform(), ios: emptyPlatform(), web: emptyPlatform() }
  // A receipt's platform is its device's delivery row's, read in the same id range (none: that row is gone).
  const typeOf = new Map<string, PlatformKey>()
  const acceptedMs: number[] = []
  const failures = new Map<FailureCategory, { n: number; words: Set<string> }>()
  for (const d of dels.rows) {
    const p = platformOf(d.device_type)
    typeOf.set(d.device_id, p)
    const c = platforms[p]
    c.devices++
    if (d.status === 1) {
      c.accepted++
      acceptedMs.push(d.ms)
    } else if (d.status === 2 || d.status === 3) {
      c.failed++
      const cat = failureCategory(d.status, d.reason)
      const f = failures.get(cat) ?? { n: 0, words: new Set<string>() }
      f.n++
      const words = d.reason?.includes(':') ? d.reason.slice(d.reason.indexOf(':') + 1) : null
      if (words && f.words.size < 5) f.words.add(words)
      failures.set(cat, f)
    } else c.pending++
  }
  const provenMs: number[] = []
  const clickedMs: number[] = []
  for (const x of recs.rows) {
    if (x.kind === 0) provenMs.push(x.ms)
    else clickedMs.push(x.ms)
    const p = typeOf.get(x.device_id)
    if (p) platforms[p][x.kind === 0 ? 'proven' : 'clicked']++
  }
  // Estimates from a sample count for the whole send.
  const scale = 1 / fraction
  if (fraction < 1) {
    for (const c of Object.values(platforms))
      for (const k of Object.keys(c) as Array<keyof PlatformCounts>) c[k] = Math.round(c[k] * scale)
  }
  return {
    fraction,
    sampledDeliveries: dels.rows.length,
    sampledReceipts: recs.rows.length,
    timeline: timeline(s, start.getTime(), nowMs, acceptedMs, provenMs, clickedMs),
    platforms,
    latency: latencyOf(provenMs),
    failures: [...failures.entries()]
      .map(([category, f]) => ({ category, n: Math.round(f.n * scale), words: [...f.words] }))
      .sort((a, b) => b.n - a.n),
  }
}

/** Cumulative counts per step since the start; each series scaled so that its last point is the send's exact total. */
function timeline(
  s: SendDetail,
  startMs: number,
  nowMs: number,
  acceptedMs: number[],
  provenMs: number[],
  clickedMs: number[],
): SendStats['timeline'] {
  let last = 0
  for (const list of [acceptedMs, provenMs, clickedMs]) for (const v of list) if (v > last) last = v
  const open = s.completed_at === null
  const span = Math.max(last, open ? Math.max(0, nowMs - startMs) : 0, 1_000)
  const stepMs = STEPS_MS.find((st) => span / st <= MAX_STEPS) ?? Math.ceil(span / MAX_STEPS)
  const n = Math.floor(span / stepMs) + 1
  const series = (values: number[], total: number): number[] => {
    const counts = new Array<number>(n).fill(0)
    for (const v of values) {
      const i = Math.min(n - 1, Math.max(0, Math.floor(v / stepMs)))
      counts[i] = (counts[i] ?? 0) + 1
    }
    let acc = 0
    const k = values.length > 0 ? total / values.length : 0
    return counts.map((c) => {
      acc += c
      return Math.round(acc * k)
    })
  }
  return {
    stepMs,
    at: Array.from({ length: n }, (_, i) => (i + 1) * stepMs),
    accepted: series(acceptedMs, s.successful),
    proven: series(provenMs, s.recebidos),
    clicked: series(clickedMs, s.converted),
  }
}

function latencyOf(ms: number[]): SendStats['latency'] {
  if (ms.length === 0) return null
  const sorted = [...ms].sort((a, b) => a - b)
  const histogram = [...LATENCY_EDGES_MS, null].map((upToMs) => ({ upToMs, n: 0 }))
  for (const v of sorted) {
    const i = LATENCY_EDGES_MS.findIndex((e) => v <= e)
    ;(histogram[i < 0 ? LATENCY_EDGES_MS.length : i] as { n: number }).n++
  }
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    histogram,
  }
}
