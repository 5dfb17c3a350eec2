// One `pombo simulate` run: the provider simulators up (where the worker delivers), the app's credentials pointed
// at them, N devices registered through the SDK, pushes sent (with the app's key) or awaited, every push answered
// by its device, then the service's own counters read back and set beside what the devices did.
import { byOperator } from '../audit/record'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import type { Writable } from 'node:stream'
import type { Config } from '../core/config'
import { createLogger } from '../core/log'
import { mintSimulatorPass } from '../core/simulator-pass'
import { withOperatorTools } from '../cli/operator'
import { Service } from '../service/service'
import type { SimulateArgs } from './args'
import { Fleet, type FleetStats } from './fleet'
import type { Histogram } from './histogram'
import { Progress } from './progress'
import { SimulateError } from './errors'
import { pointAppAtSimulators, type Providers, SIMULATORS_NOT_ALLOWED, startProviders } from './providers'
import { renderHtml, renderSvg } from './report'
import { type Accepted, IDS_PER_SEND, type SendCounts, ServiceApi } from './service-api'

export interface Percentiles {
  count: number
  p50: number
  p90: number
  p99: number
  max: number
}

export interface SimulateSummary {
  run: string
  app_id: string
  devices: number
  registered: number
  register_failed: number
  register_errors: Record<string, number>
  sends: Array<Accepted & Partial<SendCounts>>
  pushes_received: number
  /** Of pushes_received, those of a send the device had already received (delivery is at least once). */
  pushes_duplicate: number
  pushes_held_offline: number
  pushes_discarded: number
  unknown_tokens: number
  /** Receipts the service holds from the devices: answered `{ok: true}` at once, or settled by a later flush. */
  receipts_sent: number
  receipts_duplicate: number
  receipts_queued: number
  receipts_refused: number
  receipts_skipped: number
  clicks_sent: number
  clicks_queued: number
  /** Receipts and clicks first queued by the SDK (timeout, 5xx, 429), settled by a later flush. */
  receipts_late: number
  clicks_late: number
  /** Receipts and clicks refused for good, or still queued when the run ended. */
  receipts_dropped: number
  offline_transitions: number
  /** Sum of the run's sends' `recebidos` (through the API, or the service's table where the plan hides it); null
   *  when the run made no send. */
  receipts_counted: number | null
  /** Where the counts came from: `api` (GET /api/v1/notifications/{id}), `database` (the plan hides recebidos from
   *  the API), null without sends. */
  counted_from: 'api' | 'database' | null
  /** The key the run made for itself when none was given (kid only), and whether it was revoked at the end. */
  run_key: { kid: string; expires_at: string; revoked: boolean } | null
  /** True when the fleet carried the instance's fleet pass (past the per-IP limit). */
  fleet_pass: boolean
  /** Receipts the devices sent for the run's own sends: what `receipts_counted` must equal. */
  receipts_sent_for_sends: number
  clicks_counted: number | null
  clicks_sent_for_sends: number
  provider: { fcm: Record<string, unknown>; apns: Record<string, unknown> }
  latency_ms: { send_to_provider: Percentiles; provider_to_receipt: Percentiles; send_to_receipt: Percentiles }
  duration_s: number
  /** The largest resident memory of this process seen during the run (sampled each second), MB. */
  peak_rss_mb: number
  interrupted: boolean
  warnings: string[]
}

export interface RunIo {
  stdout: Writable
  stderr: Writable & { isTTY?: boolean }
  /** Aborted by Ctrl-C: the run stops sending and waiting, answers what is owed, and reports. */
  signal?: AbortSignal
}

const pct = (h: Histogram): Percentiles => ({
  count: h.count,
  p50: Math.round(h.quantile(0.5)),
  p90: Math.round(h.quantile(0.9)),
  p99: Math.round(h.quantile(0.99)),
  max: Math.round(h.max),
})

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve()
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })

/** FCM's data map as the app's handler gets it: `data`, else the web or Android block's. */
function fcmData(message: Record<string, unknown> | undefined): unknown {
  if (!message) return null
  const pick = (o: unknown) => (o && typeof o === 'object' ? (o as Record<string, unknown>).data : undefined)
  return message.data ?? pick(message.webpush) ?? pick(message.android) ?? null
}

export async function simulate(cfg: Config, a: SimulateArgs, io: RunIo): Promise<SimulateSummary> {
  const started = Date.now()
  const runId = randomBytes(3).toString('hex')
  const warnings: string[] = []
  const signal = io.signal

  // Simulated deliveries happen only where the instance allows them: its workers honour simulator credentials only
  // then, and the credentials are not stored otherwise (src/credentials/validate.ts checkStorable).
  if (!cfg.allowSimulators) throw new SimulateError(SIMULATORS_NOT_ALLOWED)

  await preflight(a.baseUrl)
  // The fleet's pass past the per-IP limit, honoured only by an instance that allows simulators and holds the same
  // vault key (npm start's); it lives as long as the run may, plus an hour for a large fleet's registrations.
  const passTtlMs = (a.durationS + 3_600) * 1_000
  const pass = cfg.vaultKey ? mintSimulatorPass(cfg.vaultKey, a.appId, passTtlMs) : undefined
  if (!pass) warnings.push('PM_VAULT_KEY is not set here: the fleet is held to the per-IP limit (PM_LIMIT_IP_PER_MIN)')
  const fleet = new Fleet({
    pass,
    baseUrl: a.baseUrl,
    appId: a.appId,
    devices: a.devices,
    platforms: a.platforms,
    receiptRate: a.receiptRate,
    clickRate: a.clickRate,
    receiptDelay: a.receiptDelay,
    clickDelay: a.clickDelay,
    offlineRate: a.offlineRate,
    offlineFor: a.offlineFor,
    concurrency: a.concurrency,
    httpConcurrency: a.httpConcurrency,
    runId,
  })
  let providers: Providers | null = null
  let worker: Service | null = null
  const progress = new Progress(io.stderr, () => progressLine(fleet.stats, a.devices, fleet.sendToReceipt, phase))
  let phase = 'starting'
  const sends: Array<Accepted & Partial<SendCounts>> = []
  let counted: Counted = { receipts: null, clicks: null, from: null }
  let runKey: { kid: string; api_key: string; expires_at: Date } | null = null
  let runKeyRevoked = false
  let peakRss = process.memoryUsage.rss()
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss())
  }, 1_000)
  sampler.unref()
  try {
    providers = await startProviders({
      tlsDir: a.tlsDir,
      fcmLatency: a.fcmLatency,
      apnsLatency: a.apnsLatency,
      failureRate: a.failureRate,
      deadRate: a.deadRate,
      onFcm: (m) => fleet.push(m.target, fcmData(m.message), m.at),
      onApns: (n) => fleet.push(n.token, n.payload, n.at),
    })
    await pointAppAtSimulators(cfg, a.appId, providers, a.replaceCredentials)
    if (a.worker) {
      // A worker of this instance like any other (cfg allows simulators, or the run stopped above): the app's pushes
      // go to the simulators through its simulator credentials, every other app's to its own providers.
      worker = await Service.start(
        { ...cfg, opsPort: null, grpcPort: null },
        { roles: ['worker'], log: createLogger('error', process.stderr), dispatcher: false },
      )
    }
    progress.note(
      `pombo simulate ${runId}: FCM simulator ${providers.fcm.url}, APNs simulator ${providers.apns.url}` +
        (a.worker ? ' (delivery worker in this process)' : " (the instance's workers deliver to them)"),
    )
    progress.start()

    phase = 'registering'
    await fleet
      .register((s) => {
        if (signal?.aborted) return 'interrupted'
        if (s.registered > 0 || s.registerFailed < Math.min(20, a.devices)) return null
        const [reason] = [...fleet.registerErrors.entries()].sort((x, y) => y[1] - x[1])[0] ?? ['unknown']
        const hint = /^429/.test(reason)
          ? ' (the service limits requests per source IP: run it with PM_LIMIT_IP_PER_MIN=0 for a load test)'
          : ''
        return `every registration failed: ${reason}${hint}`
      })
      .catch((err: Error) => {
        if (err.message === 'interrupted') return
        throw new SimulateError(err.message)
      })
    if (fleet.stats.registerFailed > 0) {
      const reasons = [...fleet.registerErrors.keys()]
      const hint = reasons.some((r) => /^429/.test(r))
        ? ' (429: run the service with PM_LIMIT_IP_PER_MIN=0, and PM_LIMIT_REGISTRATIONS_PER_HOUR above N)'
        : ''
      warnings.push(`${fleet.stats.registerFailed} registrations failed: ${reasons.join('; ')}${hint}`)
    }
    fleet.startChurn()

    // No --key: a key of the run's own, made with the operator's local settings (as `pombo credentials` stores the
    // simulators'), expiring by itself and revoked when the run ends.
    if (!a.key && a.sends > 0 && !signal?.aborted) {
      runKey = await withOperatorTools(cfg, (t) => t.apps.issueExpiringKey(a.appId, passTtlMs, byOperator('pombo simulate')))
      progress.note(`made a key for this run (kid ${runKey.kid}); it is revoked when the run ends`)
    }
    const key = a.key ?? runKey?.api_key ?? null
    const api = key ? new ServiceApi(a.baseUrl, a.appId, key) : null
    if (api && a.sends > 0 && !signal?.aborted) {
      phase = 'sending'
      const players = fleet.playerIds()
      for (let k = 1; k <= a.sends && !signal?.aborted; k++) {
        for (let i = 0; i < players.length && !signal?.aborted; i += IDS_PER_SEND) {
          fleet.sendStarted()
          let acc: Accepted
          try {
            acc = await api.send(players.slice(i, i + IDS_PER_SEND), k, runId)
          } catch (err) {
            fleet.sendAccepted(null, Date.now())
            throw new SimulateError((err as Error).message)
          }
          fleet.sendAccepted(acc.id || null, acc.at)
          if (acc.id) sends.push(acc)
          else warnings.push(`send ${k} reached nobody (recipients 0)`)
        }
        if (k < a.sends) await sleep(a.sendIntervalMs, signal)
      }
      phase = 'delivering'
      const deadline = Date.now() + a.durationS * 1000 // counted from the last send, however long registration took
      while (!signal?.aborted && Date.now() < deadline) {
        await sleep(1_100, signal) // a send read repeated within one second is served from a cache
        const open = sends.filter((s) => s.remaining !== 0)
        if (open.length === 0) break
        for (const s of open) Object.assign(s, await api.counts(s.id))
        if (sends.every((s) => s.remaining === 0)) break
      }
      if (sends.some((s) => s.remaining !== 0))
        warnings.push('some sends had not finished delivering when the run stopped waiting (--duration-s)')
    } else if (!signal?.aborted) {
      phase = 'listening'
      await sleep(a.durationS * 1000, signal)
    }

    // Devices come back, held pushes are answered, queued receipts are sent: then the devices are done.
    phase = 'settling'
    fleet.allOnline()
    if (!(await fleet.waitIdle(60_000))) warnings.push('some receipts were still in flight after 60 s')
    fleet.flushOwed()
    await fleet.waitIdle(30_000)

    if (api && sends.length > 0) {
      phase = 'reading counts'
      counted = await readCounts(api, sends, fleet, signal)
      if (counted.receipts === null) counted = await countsFromDatabase(cfg, a.appId, sends)
    }
  } finally {
    if (runKey) {
      const kid = runKey.kid
      runKeyRevoked = await withOperatorTools(cfg, (t) => t.apps.revokeKeys(a.appId, kid, byOperator('pombo simulate')))
        .then((n) => n === 1)
        .catch(() => false)
      if (!runKeyRevoked)
        warnings.push(`the run's key ${kid} could not be revoked: it expires by itself at ${runKey.expires_at.toISOString()}`)
    }
    clearInterval(sampler)
    peakRss = Math.max(peakRss, process.memoryUsage.rss())
    progress.stop()
    fleet.close()
    await worker?.stop().catch(() => {})
    await providers?.close()
  }

  const st = fleet.stats
  let forSends = 0
  let clicksForSends = 0
  for (const v of fleet.perSend.values()) {
    forSends += v.receipts
    clicksForSends += v.clicks
  }
  if (counted.receipts === null && sends.length > 0) warnings.push('the service counts of the run could not be read')
  if (counted.receipts !== null && counted.receipts !== forSends) {
    warnings.push(`the service counted ${counted.receipts} receipts for this run's sends; the devices sent ${forSends}`)
  }
  const fcm = providers ? (providers as Providers).fcm.stats() : {}
  const apns = providers ? (providers as Providers).apns.stats() : {}
  const summary: SimulateSummary = {
    run: runId,
    app_id: a.appId,
    devices: a.devices,
    registered: st.registered,
    register_failed: st.registerFailed,
    register_errors: Object.fromEntries(fleet.registerErrors),
    sends,
    pushes_received: st.pushesReceived,
    pushes_duplicate: st.pushesDuplicate,
    pushes_held_offline: st.pushesHeld,
    pushes_discarded: st.pushesDiscarded,
    unknown_tokens: st.unknownTokens,
    receipts_sent: st.receiptsSent + st.receiptsLate,
    receipts_duplicate: st.receiptsDuplicate,
    receipts_queued: st.receiptsQueued,
    receipts_refused: st.receiptsRefused,
    receipts_skipped: st.receiptsSkipped,
    clicks_sent: st.clicksSent + st.clicksLate,
    clicks_queued: st.clicksQueued,
    receipts_late: st.receiptsLate,
    clicks_late: st.clicksLate,
    receipts_dropped: st.dropped,
    offline_transitions: st.offlineTransitions,
    receipts_counted: counted.receipts,
    counted_from: counted.from,
    run_key: runKey ? { kid: runKey.kid, expires_at: runKey.expires_at.toISOString(), revoked: runKeyRevoked } : null,
    fleet_pass: pass !== undefined,
    receipts_sent_for_sends: forSends,
    clicks_counted: counted.clicks,
    clicks_sent_for_sends: clicksForSends,
    provider: { fcm, apns },
    latency_ms: {
      send_to_provider: pct(fleet.sendToProvider),
      provider_to_receipt: pct(fleet.providerToReceipt),
      send_to_receipt: pct(fleet.sendToReceipt),
    },
    duration_s: Math.round((Date.now() - started) / 100) / 10,
    peak_rss_mb: Math.round(peakRss / 1e6),
    interrupted: signal?.aborted === true,
    warnings,
  }
  if (a.report) {
    const data = {
      title: `pombo simulate ${runId}: ${st.registered} devices, ${st.pushesReceived} pushes, ${st.receiptsSent} receipts`,
      sendToProvider: fleet.sendToProvider,
      sendToReceipt: fleet.sendToReceipt,
      providerToReceipt: fleet.providerToReceipt,
      receipts: fleet.receiptsOverTime,
      pushes: fleet.pushesOverTime,
      summary: summaryRows(summary),
    }
    try {
      writeFileSync(a.report.file, a.report.format === 'svg' ? renderSvg(data) : renderHtml(data))
    } catch (err) {
      warnings.push(`--report: cannot write ${a.report.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
    }
  }
  return summary
}

interface Counted {
  receipts: number | null
  clicks: number | null
  from: 'api' | 'database' | null
}

/** The sends' counters from the service's own table, where the app's plan keeps `recebidos` out of the API's answer
 *  (the free plan): the operator's settings reach the database, as the credentials step does. */
async function countsFromDatabase(cfg: Config, appId: string, sends: Array<Accepted & Partial<SendCounts>>): Promise<Counted> {
  const ids = sends.map((s) => s.id)
  const rows = await withOperatorTools(cfg, async (t) => {
    const r = await t.db.query<{ id: string; recebidos: number; converted: number }>(
      'SELECT id::text AS id, recebidos, converted FROM sends WHERE app_id = $1 AND id = ANY($2::uuid[])',
      [appId, ids],
    )
    return r.rows
  }).catch(() => null)
  if (!rows) return { receipts: null, clicks: null, from: null }
  for (const r of rows) {
    const s = sends.find((x) => x.id === r.id)
    if (s) Object.assign(s, { recebidos: r.recebidos, converted: r.converted })
  }
  return {
    receipts: rows.reduce((n, r) => n + r.recebidos, 0),
    clicks: rows.reduce((n, r) => n + r.converted, 0),
    from: 'database',
  }
}

async function preflight(baseUrl: string): Promise<void> {
  try {
    const r = await fetch(`${baseUrl}/`, { signal: AbortSignal.timeout(10_000) })
    const j = (await r.json().catch(() => null)) as { servico?: unknown } | null
    if (j?.servico !== 'pombo') throw new Error(`${r.status}, not Pombo's API`)
  } catch (err) {
    throw new SimulateError(
      `cannot reach the service's API at ${baseUrl} (${(err as Error).message}); give its address with --base-url`,
    )
  }
}

/** The service's counters of the run's sends, read until they show every receipt the devices sent (the receipt
 *  writer commits in groups) or 20 s pass. */
async function readCounts(
  api: ServiceApi,
  sends: Array<Accepted & Partial<SendCounts>>,
  fleet: Fleet,
  signal?: AbortSignal,
): Promise<Counted> {
  let want = 0
  let wantClicks = 0
  for (const v of fleet.perSend.values()) {
    want += v.receipts
    wantClicks += v.clicks
  }
  const deadline = Date.now() + 20_000
  for (;;) {
    for (const s of sends) Object.assign(s, await api.counts(s.id))
    const nullPlan = sends.some((s) => s.recebidos === null)
    const receipts = nullPlan ? null : sends.reduce((n, s) => n + (s.recebidos ?? 0), 0)
    const clicks = sends.reduce((n, s) => n + (s.converted ?? 0), 0)
    if (nullPlan || ((receipts ?? 0) >= want && clicks >= wantClicks) || Date.now() > deadline || signal?.aborted)
      return { receipts, clicks, from: nullPlan ? null : 'api' }
    await sleep(1_100)
  }
}

function progressLine(s: FleetStats, n: number, h: Histogram, phase: string): string {
  const lat = h.count ? ` · p50 ${Math.round(h.quantile(0.5))} ms p99 ${Math.round(h.quantile(0.99))} ms` : ''
  return `[${phase}] registered ${s.registered}/${n} · pushes ${s.pushesReceived} · receipts ${s.receiptsSent + s.receiptsLate} · clicks ${s.clicksSent + s.clicksLate} · offline ${s.offlineNow}${lat}`
}

const fmtP = (p: Percentiles) =>
  p.count ? `p50 ${p.p50} ms · p90 ${p.p90} ms · p99 ${p.p99} ms · max ${p.max} ms (${p.count})` : 'none recorded'

function summaryRows(s: SimulateSummary): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['run', `${s.run} (${s.duration_s} s${s.interrupted ? ', interrupted' : ''}; peak memory ${s.peak_rss_mb} MB)`],
    ['devices registered', `${s.registered} of ${s.devices}${s.register_failed ? ` (${s.register_failed} failed)` : ''}`],
    [
      'sends',
      s.sends.length
        ? `${s.sends.length} (${s.sends.reduce((n, x) => n + x.recipients, 0)} recipients)`
        : 'none (pushes sent by others were answered)',
    ],
    [
      'pushes received',
      `${s.pushes_received}${s.pushes_duplicate ? ` (${s.pushes_duplicate} a second time: delivery is at least once)` : ''}${s.pushes_held_offline ? ` (${s.pushes_held_offline} held while the device was offline)` : ''}`,
    ],
    [
      'receipts sent',
      `${s.receipts_sent}${s.receipts_skipped ? ` (${s.receipts_skipped} pushes left unanswered by the receipt rate)` : ''}`,
    ],
    [
      'receipts counted by the service',
      s.receipts_counted === null
        ? s.sends.length
          ? 'not read'
          : 'none (the run made no send: --sends 0)'
        : `${s.receipts_counted} of ${s.receipts_sent_for_sends} sent for this run's sends${s.counted_from === 'database' ? " (read from the service's database: the app's plan hides recebidos from the API)" : ''}`,
    ],
    ['clicks sent / counted', `${s.clicks_sent} / ${s.clicks_counted ?? 'not read'}`],
    ['send accepted → provider accepted', fmtP(s.latency_ms.send_to_provider)],
    ['provider accepted → receipt counted', fmtP(s.latency_ms.provider_to_receipt)],
    ['send accepted → receipt counted', fmtP(s.latency_ms.send_to_receipt)],
  ]
  if (s.receipts_queued || s.clicks_queued) {
    rows.push([
      'queued by the SDK (timeout, 5xx, 429)',
      `${s.receipts_queued} receipts, ${s.clicks_queued} clicks; settled later: ${s.receipts_late} receipts, ${s.clicks_late} clicks; refused for good: ${s.receipts_dropped}`,
    ])
  }
  if (s.unknown_tokens) rows.push(['messages for other tokens', String(s.unknown_tokens)])
  if (s.run_key)
    rows.push([
      "the run's key",
      `kid ${s.run_key.kid}, ${s.run_key.revoked ? 'revoked' : `not revoked: expires by itself at ${s.run_key.expires_at}`}`,
    ])
  return rows
}

/** The human form of the summary (stdout without --json). */
export function formatSummary(s: SimulateSummary): string {
  const w = Math.max(...summaryRows(s).map(([k]) => k.length))
  const lines = summaryRows(s).map(([k, v]) => `${k.padEnd(w)}  ${v}`)
  for (const x of s.warnings) lines.push(`warning: ${x}`)
  return `${lines.join('\n')}\n`
}
