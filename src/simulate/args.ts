// `pombo simulate` flags: every value checked here, before anything starts; a bad one is a one-line reason.
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { ROOT } from '../core/root'
import { type Latency, parseLatency } from '../simulators/conditions'
import type { Platform } from './fleet'
import { SimulateError } from './errors'

export const SIMULATE_USAGE = `pombo simulate --app APP_ID --devices N [--receipt-rate 0.95] [--click-rate 0.1] [--offline-rate 0]
      [--key API_KEY] [--sends 3] [--send-interval-ms 1000] [--duration-s 60] [--report FILE.svg|FILE.html] [--json]
      [--platforms android,ios,web] [--receipt-delay-ms 0] [--click-delay-ms 500-3000] [--offline-for-ms 2000-10000]
      [--fcm-latency-ms lognormal:20:120] [--apns-latency-ms lognormal:20:120] [--failure-rate 0] [--dead-rate 0]
      [--worker] [--base-url URL] [--tls-dir DIR] [--replace-credentials] [--concurrency 64] [--http-concurrency 256]
  pombo simulate ca [--tls-dir DIR]   (makes the simulators' certificate; prints the CA for NODE_EXTRA_CA_CERTS)`

export const MAX_DEVICES = 1_000_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const PLATFORMS: readonly Platform[] = ['android', 'ios', 'web']

export interface SimulateArgs {
  appId: string
  devices: number
  receiptRate: number
  clickRate: number
  offlineRate: number
  /** The app's key for the run's sends and reads; without one the run makes a key of its own, revoked at the end. */
  key: string | null
  sends: number
  sendIntervalMs: number
  /** With --sends 0: how long to listen; otherwise the most to wait for the sends to settle. */
  durationS: number
  report: { file: string; format: 'svg' | 'html' } | null
  json: boolean
  platforms: Platform[]
  receiptDelay: Latency
  clickDelay: Latency
  offlineFor: Latency
  fcmLatency: Latency
  apnsLatency: Latency
  failureRate: number
  deadRate: number
  worker: boolean
  baseUrl: string
  tlsDir: string
  replaceCredentials: boolean
  concurrency: number
  httpConcurrency: number
}

const fail = (msg: string): never => {
  throw new SimulateError(msg)
}

function rate(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt
  if (!/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(v)) fail(`--${name}: expected a number from 0 to 1, got "${v}"`)
  return Number(v)
}

function int(name: string, v: string | undefined, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max)
    fail(`--${name}: expected an integer from ${min} to ${max}, got "${v}"`)
  return Number(v)
}

function latency(name: string, v: string | undefined, dflt: string): Latency {
  try {
    return parseLatency(v ?? dflt)
  } catch (err) {
    return fail(`--${name}: ${(err as Error).message}`)
  }
}

export function parseSimulateArgs(cfg: Config, argv: string[]): SimulateArgs {
  let values: Record<string, string | boolean | undefined>
  try {
    const parsed = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        app: { type: 'string' },
        devices: { type: 'string' },
        'receipt-rate': { type: 'string' },
        'click-rate': { type: 'string' },
        'offline-rate': { type: 'string' },
        key: { type: 'string' },
        sends: { type: 'string' },
        'send-interval-ms': { type: 'string' },
        'duration-s': { type: 'string' },
        report: { type: 'string' },
        json: { type: 'boolean' },
        platforms: { type: 'string' },
        'receipt-delay-ms': { type: 'string' },
        'click-delay-ms': { type: 'string' },
        'offline-for-ms': { type: 'string' },
        'fcm-latency-ms': { type: 'string' },
        'apns-latency-ms': { type: 'string' },
        'failure-rate': { type: 'string' },
        'dead-rate': { type: 'string' },
        worker: { type: 'boolean' },
        'base-url': { type: 'string' },
        'tls-dir': { type: 'string' },
        'replace-credentials': { type: 'boolean' },
        concurrency: { type: 'string' },
        'http-concurrency': { type: 'string' },
      },
    })
    values = parsed.values
  } catch (err) {
    return fail((err as Error).message.split('\n')[0] as string)
  }
  const s = (k: string) => values[k] as string | undefined
  const appId = s('app')
  if (!appId || !UUID.test(appId)) fail(`--app: expected the app's UUID, got "${appId ?? ''}"`)
  if (s('devices') === undefined) fail('--devices: required (how many simulated devices)')
  const devices = int('devices', s('devices'), 0, 1, MAX_DEVICES)
  const key = s('key') ?? null
  if (key !== null && !/^pm_(live|test)_[A-Za-z0-9_-]+$/.test(key))
    fail("--key: expected the app's API key (pm_live_… or pm_test_…)")
  // 0: the run sends nothing and answers pushes sent by others for --duration-s.
  const sends = int('sends', s('sends'), 3, 0, 10_000)
  let report: SimulateArgs['report'] = null
  const file = s('report')
  if (file !== undefined) {
    const m = /\.(svg|html?)$/i.exec(file)
    if (!m) fail(`--report: the file must end in .svg or .html, got "${file}"`)
    report = { file, format: (m as RegExpExecArray)[1]?.toLowerCase() === 'svg' ? 'svg' : 'html' }
  }
  const platforms = (s('platforms') ?? 'android').split(',').map((p) => p.trim())
  for (const p of platforms)
    if (!PLATFORMS.includes(p as Platform)) fail(`--platforms: unknown platform "${p}" (android, ios, web)`)
  let baseUrl = s('base-url') ?? cfg.publicBaseUrl
  try {
    const u = new URL(baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error()
    baseUrl = baseUrl.replace(/\/+$/, '')
  } catch {
    fail(`--base-url: expected an http(s) address of the service's API, got "${baseUrl}"`)
  }
  return {
    appId: (appId as string).toLowerCase(),
    devices,
    receiptRate: rate('receipt-rate', s('receipt-rate'), 0.95),
    clickRate: rate('click-rate', s('click-rate'), 0.1),
    offlineRate: rate('offline-rate', s('offline-rate'), 0),
    key,
    sends,
    sendIntervalMs: int('send-interval-ms', s('send-interval-ms'), 1_000, 0, 3_600_000),
    durationS: int('duration-s', s('duration-s'), sends > 0 ? 300 : 60, 1, 86_400),
    report,
    json: values.json === true,
    platforms: [...new Set(platforms)] as Platform[],
    receiptDelay: latency('receipt-delay-ms', s('receipt-delay-ms'), '0'),
    clickDelay: latency('click-delay-ms', s('click-delay-ms'), '500-3000'),
    offlineFor: latency('offline-for-ms', s('offline-for-ms'), '2000-10000'),
    fcmLatency: latency('fcm-latency-ms', s('fcm-latency-ms'), 'lognormal:20:120'),
    apnsLatency: latency('apns-latency-ms', s('apns-latency-ms'), 'lognormal:20:120'),
    failureRate: rate('failure-rate', s('failure-rate'), 0),
    deadRate: rate('dead-rate', s('dead-rate'), 0),
    worker: values.worker === true,
    baseUrl,
    tlsDir: s('tls-dir') ?? join(ROOT, '.data', 'simulators'),
    replaceCredentials: values['replace-credentials'] === true,
    concurrency: int('concurrency', s('concurrency'), 64, 1, 10_000),
    httpConcurrency: int('http-concurrency', s('http-concurrency'), 256, 1, 10_000),
  }
}
