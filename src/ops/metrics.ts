// The metrics of one process (docs/spec/contract.md "Operations"), on a registry of its own: tests start several services in
// one process, so nothing goes to prom-client's global registry. The hot path only increments counters and observes
// histograms through series bound once (src/ops/hot.ts); anything that needs I/O is gathered when /metrics is
// scraped (src/service/collectors.ts), into prom-client gauges. Every label takes its values from a fixed set
// (src/ops/labels.ts): what arrives from outside is written as `other`.
import {
  AggregatorRegistry,
  Counter,
  type CounterConfiguration,
  Gauge,
  type GaugeConfiguration,
  type LabelValues,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client'
import { type CounterSeries, HotCounter, HotHistogram } from './hot'
import { LabelSets } from './labels'
import { succeedsWithin, within } from './within'

/** Buckets of the API's own latency: the cheapest routes answer in ~50 µs, a send or receipt waits for a group
 *  commit (milliseconds; the targets are a p99 under 50 ms for sends and under 25 ms for registrations), a batch of
 *  in-app events a few hundred ms, a stalled dependency seconds. Finer between 5 and 100 ms, where those targets
 *  are read. */
const HTTP_BUCKETS_S = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5,
  10,
]
/** FCM/APNs answer in 20-300 ms from a data centre (the fakes in ~1 ms); the pool's timeout is 10 s. */
const PROVIDER_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Group-commit batch sizes, from one job to the writers' caps (1,000 rows). */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]

/** A counter child and a histogram child bound to one route and status: incrementing costs no label hashing. */
export interface RouteMeter {
  observe(status: number, seconds: number): void
}

/** A scrape-time collector: fills gauges; it must not throw (a failure is reported by pombo_scrape_errors_total). */
export type Collector = () => Promise<void> | void

/** One registry's series as plain data (what a process of the group sends its parent over IPC). */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[]

/** The metrics of another process of this process's group (src/group/): its series, or null when it is not running. */
export type Peer = () => Promise<MetricsJson | null>

/**
 * How a gauge is merged across the processes of a group: `sum` for what each process holds (its pools, its actors);
 * `max` for a figure of the whole deployment that several processes read alike (a stream's length, a destination's lag).
 */
export type GaugeMerge = 'sum' | 'max'

/** prom-client's `labels(...)` arguments (values in order, or one object by name), each value bounded. */
function boundArgs(sets: LabelSets, names: readonly string[], args: unknown[]): unknown[] {
  if (args.length === 1 && typeof args[0] === 'object' && args[0] !== null) {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(args[0] as Record<string, unknown>)) out[k] = sets.bound(k, String(v))
    return [out]
  }
  return sets.boundAll(names, args.map(String))
}

/** A scrape-time gauge whose label values are bounded like the hot families' (its children are made by `labels`). */
class BoundedGauge<L extends string> extends Gauge<L> {
  readonly #sets: LabelSets
  readonly #names: readonly string[]

  constructor(config: GaugeConfiguration<L>, sets: LabelSets) {
    super(config)
    this.#sets = sets
    this.#names = config.labelNames ?? []
  }

  override labels(...args: unknown[]): ReturnType<Gauge<L>['labels']> {
    return super.labels(...(boundArgs(this.#sets, this.#names, args) as [LabelValues<L>]))
  }
}

/** A counter whose label values are bounded alike. */
class BoundedCounter<L extends string> extends Counter<L> {
  readonly #sets: LabelSets
  readonly #names: readonly string[]

  constructor(config: CounterConfiguration<L>, sets: LabelSets) {
    super(config)
    this.#sets = sets
    this.#names = config.labelNames ?? []
  }

  override labels(...args: unknown[]): ReturnType<Counter<L>['labels']> {
    return super.labels(...(boundArgs(this.#sets, this.#names, args) as [LabelValues<L>]))
  }
}

export class Metrics {
  readonly registry = new Registry()
  /** The fixed sets every label takes its values from (wiring code completes some: see allow). */
  readonly labelSets = new LabelSets()
  readonly httpRequests: HotCounter
  readonly httpDuration: HotHistogram
  readonly sendsAccepted: HotCounter
  readonly deliveries: HotCounter
  readonly providerDuration: HotHistogram
  readonly providerOutcomes: HotCounter
  readonly receipts: HotCounter
  readonly webhookEvents: HotCounter
  readonly groupCommitBatch: HotHistogram
  readonly pacingWaits: HotCounter
  readonly pacingWaitSeconds: HotCounter
  readonly scrapeErrors: Counter<'collector'>
  readonly #collectors = new Map<string, Collector>()
  readonly #peers: Peer[] = []

  constructor(labels: Record<string, string> = {}) {
    const registers = [this.registry]
    this.registry.setDefaultLabels(labels)
    this.httpRequests = new HotCounter(
      'pombo_http_requests_total',
      'HTTP answers by method, route pattern (never the raw path) and status.',
      ['server', 'method', 'route', 'status'],
      this.registry,
      this.labelSets,
    )
    this.httpDuration = new HotHistogram(
      'pombo_http_request_duration_seconds',
      'Time from the request to its answer being written, by method and route pattern.',
      ['server', 'method', 'route'],
      HTTP_BUCKETS_S,
      this.registry,
      this.labelSets,
    )
    this.sendsAccepted = new HotCounter(
      'pombo_sends_accepted_total',
      'Sends accepted (answered 200 and enqueued; replays and dry runs excluded), by lane.',
      ['lane'],
      this.registry,
      this.labelSets,
    )
    this.deliveries = new HotCounter(
      'pombo_deliveries_total',
      'Final delivery outcomes recorded by this process (each device of a send once), by platform and outcome.',
      ['platform', 'outcome'],
      this.registry,
      this.labelSets,
    )
    this.providerDuration = new HotHistogram(
      'pombo_provider_request_duration_seconds',
      'Time of one provider request (FCM, APNs), from the call to its outcome.',
      ['platform'],
      PROVIDER_BUCKETS_S,
      this.registry,
      this.labelSets,
    )
    this.providerOutcomes = new HotCounter(
      'pombo_provider_outcomes_total',
      "Provider answers by platform, kind (accepted, dead-token, rejected, transient, quota, credential …) and the provider's reason.",
      ['platform', 'kind', 'reason'],
      this.registry,
      this.labelSets,
    )
    this.receipts = new HotCounter(
      'pombo_receipts_total',
      'Receipts accepted, by event (recebido, clique) and outcome (counted, duplicate, late).',
      ['evento', 'outcome'],
      this.registry,
      this.labelSets,
    )
    this.webhookEvents = new HotCounter(
      'pombo_webhook_events_total',
      'Webhook delivery attempts by result (ok, http, timeout, refused, network).',
      ['result'],
      this.registry,
      this.labelSets,
    )
    this.groupCommitBatch = new HotHistogram(
      'pombo_group_commit_batch_size',
      'Jobs per group-commit batch (one transaction), per writer.',
      ['writer'],
      BATCH_BUCKETS,
      this.registry,
      this.labelSets,
    )
    this.pacingWaits = new HotCounter(
      'pombo_pacing_waits_total',
      "Times an app's actor waited before a delivery, by cause: its pace (rate_por_min) or a provider's Retry-After.",
      ['cause'],
      this.registry,
      this.labelSets,
    )
    this.pacingWaitSeconds = new HotCounter(
      'pombo_pacing_wait_seconds_total',
      'Time actors spent waiting for their pace, by cause (a rate over it is the average number of apps held back).',
      ['cause'],
      this.registry,
      this.labelSets,
    )
    this.scrapeErrors = new BoundedCounter(
      {
        name: 'pombo_scrape_errors_total',
        help: 'Scrape-time collectors that failed (their gauges keep their last values).',
        labelNames: ['collector'],
        registers,
      },
      this.labelSets,
    )
  }

  /** Values a label may take besides its fixed ones: only wiring code calls this, with values from the code or the
   *  settings (a partition number, a provider's origin), never from a request or an answer. */
  allow(label: string, values: Iterable<string>): void {
    this.labelSets.allow(label, values)
  }

  /** The meter of one route: children bound per status on first use (a route answers a handful of statuses). The
   *  router calls it when it registers a route, so route patterns are the code's own. */
  route(server: string, method: string, route: string): RouteMeter {
    this.labelSets.allow('route', [route])
    const duration = this.httpDuration.labels(server, method, route)
    const byStatus = new Map<number, CounterSeries>()
    return {
      observe: (status, seconds) => {
        let c = byStatus.get(status)
        if (!c) {
          c = this.httpRequests.labels(server, method, route, String(status))
          byStatus.set(status, c)
        }
        c.inc()
        duration.observe(seconds)
      },
    }
  }

  /** A gauge filled at scrape time by `collect` (registered once per name). */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[], merge: GaugeMerge = 'sum'): Gauge<L> {
    const existing = this.registry.getSingleMetric(name)
    if (existing) return existing as Gauge<L>
    return new BoundedGauge(
      { name, help, labelNames: labelNames as L[], registers: [this.registry], aggregator: merge },
      this.labelSets,
    )
  }

  /** Another process of the group: its series are merged into this process's /metrics (counters summed, gauges by
   *  their GaugeMerge), so the group is scraped on one port as if it were one process. */
  addPeer(peer: Peer): void {
    this.#peers.push(peer)
  }

  /** Runs `f` before every scrape; a failure is counted and logged by the ops server, never thrown at Prometheus. */
  onScrape(name: string, f: Collector): void {
    this.labelSets.allow('collector', [name])
    this.#collectors.set(name, f)
  }

  /** Runs every collector (each bounded by `timeoutMs`), then renders the registry merged with the group's peers. */
  async render(timeoutMs = 2_000): Promise<string> {
    await this.#collect(timeoutMs)
    if (this.#peers.length === 0) return this.registry.metrics()
    const theirs = await Promise.all(
      this.#peers.map((p) =>
        within(
          p().catch(() => null),
          timeoutMs,
          null,
        ),
      ),
    )
    const all = [await this.registry.getMetricsAsJSON(), ...theirs.filter((x): x is MetricsJson => x !== null)]
    return AggregatorRegistry.aggregate(all as never).metrics()
  }

  /** Runs every collector, then answers the registry's series as data (for the group's parent). */
  async json(timeoutMs = 2_000): Promise<MetricsJson> {
    await this.#collect(timeoutMs)
    return (await this.registry.getMetricsAsJSON()) as MetricsJson
  }

  async #collect(timeoutMs: number): Promise<void> {
    await Promise.all(
      [...this.#collectors].map(async ([name, f]) => {
        if (!(await succeedsWithin(f, timeoutMs))) this.scrapeErrors.labels(name).inc()
      }),
    )
  }
}
