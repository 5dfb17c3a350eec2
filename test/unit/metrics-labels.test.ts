// Every metric label takes its values from a fixed set (src/ops/labels.ts): hostile values fed to every family of a
// process wired as `serve` wires it (a provider's free text, an origin per port, a tenant's strings, random bytes)
// add at most one series per family, written `other`, and none of their text reaches the scrape.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { Metrics } from '../../src/ops/metrics'
import type { Outcome } from '../../src/providers/types'
import {
  collectDelivery,
  collectGroupCommits,
  collectPools,
  deliveryCounter,
  providerObserver,
  providerOrigins,
} from '../../src/service/collectors'

const MARK = 'hostil'
const hostile = (i: number) =>
  [
    `${MARK}-${i}`,
    `${MARK} ${randomBytes(6).toString('base64')}`,
    `${MARK}"}\n# HELP x ${i}`,
    `https://${MARK}-${i}.example:${1024 + i}`,
    `INVALID_ARGUMENT: ${MARK} message ${i} from a remote server`,
    `${MARK}\u0000${i}`,
  ][i % 6] as string

interface Family {
  name: string
  labelNames?: readonly string[]
  labels?: (...v: string[]) => unknown
}

/** A process's metrics wired like `serve --roles api,worker`'s: routes, partitions, origins, writers, pools. */
function wired(): Metrics {
  const m = new Metrics()
  m.route('api', 'POST', '/api/v1/notifications').observe(200, 0.01)
  m.route('api', '*', '/*').observe(404, 0.001)
  m.allow('partition', ['0', '1', '2', '3'])
  const stats: Record<string, { sessions: number; active: number; waiting: number }> = {
    'https://fcm.googleapis.com': { sessions: 1, active: 1, waiting: 0 },
  }
  collectDelivery(
    m,
    () =>
      ({
        worker: { actorCount: 1, ownedPartitions: [0], heldSends: 0, maxHeldSends: 10 },
        pool: { stats: () => stats },
      }) as never,
    providerOrigins({ fcmBaseUrl: 'https://fcm.googleapis.com', apnsBaseUrl: null }),
  )
  collectGroupCommits(m, [['sends', { queued: 0, inflight: 0 } as never]])
  collectPools(m, () => [])
  // Remote servers name the origins (a credential's token_uri on any port) and the reasons.
  for (let i = 0; i < 1_000; i++) stats[hostile(i)] = { sessions: 1, active: 0, waiting: 0 }
  return m
}

/** Series of each family in a scrape (sample lines by name and labels; histogram buckets and sums folded). */
function seriesCount(text: string): Map<string, number> {
  const seen = new Map<string, Set<string>>()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*?)(_bucket|_sum|_count)?(\{.*\})? \S+$/.exec(line)
    if (!m) continue
    const labels = (m[3] ?? '').replace(/,?le="[^"]*"/, '')
    const set = seen.get(m[1] as string) ?? new Set()
    set.add(labels)
    seen.set(m[1] as string, set)
  }
  return new Map([...seen].map(([k, v]) => [k, v.size]))
}

t.test('hostile label values, fed to every family, add at most one series each, written other', async (t) => {
  const m = wired()
  // What remote servers and tenants reach through the real observers.
  const observe = providerObserver(m)
  const count = deliveryCounter(m)
  for (let i = 0; i < 1_000; i++) {
    const reason = hostile(i)
    observe('fcm', { kind: 'rejected', reason } as Outcome, 0.01)
    observe('apns', { kind: 'credential', reason } as Outcome, 0.01)
    observe(hostile(i), { kind: hostile(i + 1), reason } as unknown as Outcome, 0.01)
    count([{ deviceType: 1000 + i, status: 1 } as never])
  }
  const before = seriesCount(await m.render())

  // Then every label of every family, directly: whatever a future caller passes, the set holds.
  const families = m.registry.getMetricsAsArray() as unknown as Family[]
  let fed = 0
  for (const f of families) {
    const names = f.labelNames ?? []
    if (names.length === 0 || typeof f.labels !== 'function') continue
    for (let i = 0; i < 300; i++) {
      const child = f.labels(...names.map((_, j) => hostile(i * names.length + j))) as Record<string, unknown>
      if (typeof child.inc === 'function') (child.inc as (n?: number) => void)(1)
      else if (typeof child.observe === 'function') (child.observe as (n: number) => void)(1)
      else if (typeof child.set === 'function') (child.set as (n: number) => void)(1)
      fed++
    }
  }
  t.ok(fed >= 300 * 15, `fed ${fed} hostile label sets to ${families.length} families`)
  const text = await m.render()
  t.notOk(text.includes(MARK), 'no hostile text in the scrape')
  t.notOk(/example:\d+/.test(text), 'no foreign origin in the scrape')
  const after = seriesCount(text)
  for (const [name, n] of after) {
    t.ok(n <= (before.get(name) ?? 0) + 1, `${name}: ${before.get(name) ?? 0} series, then ${n}`)
  }
  t.ok(
    /pombo_provider_outcomes_total\{platform="fcm",kind="rejected",reason="INVALID_ARGUMENT"\}/.test(text),
    'a documented code is kept',
  )
  t.ok(/pombo_provider_outcomes_total\{platform="fcm",kind="rejected",reason="other"\}/.test(text), 'free text is other')
  t.ok(/pombo_h2_sessions\{origin="https:\/\/fcm\.googleapis\.com"\} 1/.test(text), "the settings' origin is kept")
  t.ok(/pombo_h2_sessions\{origin="other"\} 1000/.test(text), 'other origins are summed under other')
  t.ok(/pombo_http_requests_total\{server="api",method="POST",route="\/api\/v1\/notifications",status="200"\} 1/.test(text))
})

t.test('the provider reason is its documented code; HTTP failures by kind', async (t) => {
  const m = new Metrics()
  const observe = providerObserver(m)
  const reasons = {
    UNREGISTERED: 'UNREGISTERED',
    'INVALID_ARGUMENT: invalid registration token': 'INVALID_ARGUMENT',
    'SENDER_ID_MISMATCH: The sender is not allowed': 'SENDER_ID_MISMATCH',
    BadDeviceToken: 'BadDeviceToken',
    'HTTP 502': 'HTTP',
    'timeout: no answer in 10000 ms': 'timeout',
    'connection: connect ECONNREFUSED 10.0.0.7:443': 'connection',
    'NotARealReason: x': 'other',
  }
  for (const r of Object.keys(reasons)) observe('fcm', { kind: 'transient', reason: r }, 0.001)
  const text = await m.render()
  for (const [r, label] of Object.entries(reasons)) {
    t.match(text, new RegExp(`reason="${label}"`), `${r} → ${label}`)
  }
  t.notMatch(text, /10\.0\.0\.7|ECONNREFUSED|not allowed/, 'no message text')
})
