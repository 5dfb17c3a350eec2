// Counters and histograms for the hot path. prom-client's own children validate and hash their labels on every
// inc()/observe(), a cost the cheapest routes (no I/O, ~10 µs a request) feel on every request; these keep one plain
// series object per label set, bound once, and hand prom-client's registry their values only when it is scraped.
import type { Registry } from 'prom-client'
import type { LabelSets } from './labels'

type Values = Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>

interface Exposed {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: Values }>
}

abstract class Family<S> implements Exposed {
  abstract readonly type: 'counter' | 'histogram'
  readonly aggregator = 'sum' as const
  readonly #series = new Map<string, { labels: Record<string, string>; s: S }>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
    /** Each label's fixed set of values (src/ops/labels.ts): anything else is `other`. */
    private readonly sets?: LabelSets,
  ) {
    registry.registerMetric(this as never)
  }

  protected abstract fresh(): S
  protected abstract values(labels: Record<string, string>, s: S, out: Values): void

  /** The series of these label values (in labelNames order), created on first use; bind it once where it is hot. */
  labels(...raw: string[]): S {
    const values = this.sets ? this.sets.boundAll(this.labelNames, raw) : raw
    const key = values.length === 1 ? (values[0] as string) : values.join('\u0000')
    let hit = this.#series.get(key)
    if (!hit) {
      const labels: Record<string, string> = {}
      this.labelNames.forEach((n, i) => {
        labels[n] = values[i] ?? ''
      })
      hit = { labels, s: this.fresh() }
      this.#series.set(key, hit)
    }
    return hit.s
  }

  async get() {
    const values: Values = []
    for (const { labels, s } of this.#series.values()) this.values(labels, s, values)
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }
}

export class CounterSeries {
  value = 0
  inc(n = 1): void {
    this.value += n
  }
}

export class HotCounter extends Family<CounterSeries> {
  readonly type = 'counter' as const
  protected fresh(): CounterSeries {
    return new CounterSeries()
  }
  protected values(labels: Record<string, string>, s: CounterSeries, out: Values): void {
    out.push({ labels, value: s.value })
  }
}

export class HistogramSeries {
  readonly counts: Float64Array
  sum = 0
  count = 0
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length)
  }
  observe(v: number): void {
    this.sum += v
    this.count++
    const b = this.bounds
    for (let i = 0; i < b.length; i++) {
      if (v <= (b[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1
        return
      }
    }
  }
}

export class HotHistogram extends Family<HistogramSeries> {
  readonly type = 'histogram' as const
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
    sets?: LabelSets,
  ) {
    super(name, help, labelNames, registry, sets)
  }
  protected fresh(): HistogramSeries {
    return new HistogramSeries(this.buckets)
  }
  protected values(labels: Record<string, string>, s: HistogramSeries, out: Values): void {
    let cumulative = 0
    this.buckets.forEach((le, i) => {
      cumulative += s.counts[i] as number
      out.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative })
    })
    out.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: s.count })
    out.push({ metricName: `${this.name}_sum`, labels, value: s.sum })
    out.push({ metricName: `${this.name}_count`, labels, value: s.count })
  }
}
