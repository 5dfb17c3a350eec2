// Offered load at a fixed rate (autocannon's overallRate): latency at a given load, not at saturation. Bodies are
// built per request by `body(i)` so every request can be unique.
import autocannon from 'autocannon'

export interface FixedRateResult {
  rps: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
}

export interface FixedRateOptions {
  url: string
  method?: 'POST' | 'GET' | 'PUT'
  headers?: Record<string, string>
  body?: (i: number) => string
  rate: number
  durationS: number
  connections?: number
}

export function fixedRate(o: FixedRateOptions): Promise<FixedRateResult> {
  let i = 0
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: o.url,
        connections: o.connections ?? 100,
        duration: o.durationS,
        overallRate: o.rate,
        requests: [
          {
            method: o.method ?? 'POST',
            headers: { 'content-type': 'application/json', ...o.headers },
            setupRequest: (req: autocannon.Request) => (o.body ? { ...req, body: o.body(i++) } : req),
          },
        ],
      },
      (err: Error | null, r: autocannon.Result) => {
        if (err) return reject(err)
        resolve({
          rps: r.requests.average,
          p50Ms: r.latency.p50,
          p99Ms: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors + r.timeouts,
        })
      },
    )
  })
}
