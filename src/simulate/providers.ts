// The provider simulators of a `pombo simulate` run, and the app's credentials that make the worker use them.
// Where they listen: the addresses the worker is given (PM_FCM_BASE_URL / PM_APNS_BASE_URL, read by the same
// config), so one environment serves both processes; with --worker (a delivery worker inside this process) any free
// port. Their certificate lives in a directory (default .data/simulators) so a worker started earlier can trust it
// with NODE_EXTRA_CA_CERTS=<dir>/ca.pem. The app gets an FCM service account whose token_uri points at the FCM
// simulator, and an APNs key the APNs simulator trusts, stored exactly as `pombo credentials` stores them.
import { withOperatorTools } from '../cli/operator'
import type { Config } from '../core/config'
import { CredentialService } from '../credentials/service'
import { credentialMeta } from '../credentials/store'
import { parseApns, parseServiceAccount } from '../credentials/validate'
import { ApiError } from '../core/errors'
import { type ApnsDelivery, type ApnsSimulator, startApnsSimulator } from '../simulators/apns'
import type { Latency } from '../simulators/conditions'
import { type FcmDelivery, type FcmSimulator, startFcmSimulator } from '../simulators/fcm'
import { type SimulatorTls, simulatorTls } from '../simulators/tls'
import { systemClock } from '../core/time'

/** The FCM project of the simulator's service accounts, and the Team ID of its APNs keys: how a stored credential is
 *  recognised as the simulator's (and so may be replaced without --replace-credentials). */
export const SIM_PROJECT = 'pombo-simulator'
export const SIM_TEAM = 'POMBOSIM00'
export const SIM_BUNDLE = 'com.pombo.simulate'

export class SimulateError extends Error {
  override name = 'SimulateError'
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1'])

/**
 * Where a simulator must listen for a worker that uses `url`: its port when `url` is an https loopback address;
 * null when the worker's address is somewhere else (a real provider, another host).
 */
export function listenPortOf(url: string | null): number | null {
  if (!url) return null
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return null
  }
  if (u.protocol !== 'https:' || !LOOPBACK.has(u.hostname)) return null
  return u.port ? Number(u.port) : 443
}

export interface ProviderOptions {
  tlsDir: string | null
  fcmPort: number
  apnsPort: number
  fcmLatency?: Latency
  apnsLatency?: Latency
  failureRate: number
  deadRate: number
  onFcm: (m: FcmDelivery) => void
  onApns: (n: ApnsDelivery) => void
}

export interface Providers {
  fcm: FcmSimulator
  apns: ApnsSimulator
  tls: SimulatorTls
  close(): Promise<void>
}

export async function startProviders(o: ProviderOptions): Promise<Providers> {
  let tls: SimulatorTls
  try {
    tls = simulatorTls(o.tlsDir)
  } catch (err) {
    throw new SimulateError(`simulators: ${(err as Error).message}`)
  }
  const common = { tls, record: false, deadTokenRate: o.deadRate }
  const listen = async <T>(what: string, port: number, start: () => Promise<T>): Promise<T> => {
    try {
      return await start()
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EADDRINUSE') throw new SimulateError(`${what} simulator: port ${port} is in use (another pombo simulate?)`)
      throw new SimulateError(`${what} simulator: ${(err as Error).message}`)
    }
  }
  const fcm = await listen('FCM', o.fcmPort, () =>
    startFcmSimulator({
      ...common,
      port: o.fcmPort,
      latency: o.fcmLatency,
      failureRates: o.failureRate > 0 ? { unavailable: o.failureRate } : undefined,
      onDeliver: o.onFcm,
    }),
  )
  let apns: ApnsSimulator
  try {
    apns = await listen('APNs', o.apnsPort, () =>
      startApnsSimulator({
        ...common,
        port: o.apnsPort,
        teamId: SIM_TEAM,
        bundleId: SIM_BUNDLE,
        latency: o.apnsLatency,
        failureRates: o.failureRate > 0 ? { unavailable: o.failureRate } : undefined,
        onDeliver: o.onApns,
      }),
    )
  } catch (err) {
    await fcm.close()
    throw err
  }
  return { fcm, apns, tls, close: () => Promise.all([fcm.close(), apns.close()]).then(() => undefined) }
}

/**
 * Stores, for the app, an FCM service account and an APNs key that the simulators trust. An app holding real
 * credentials (not the simulator's) is refused unless `replace` is set: a load test must never silently take a
 * production app's delivery away.
 */
export async function pointAppAtSimulators(cfg: Config, appId: string, p: Providers, replace: boolean): Promise<void> {
  const account = p.fcm.serviceAccount(SIM_PROJECT)
  const key = p.apns.key({ environment: 'both' })
  const fcm = parseServiceAccount(JSON.stringify(account))
  const apns = parseApns({ p8: key.p8, keyId: key.keyId, teamId: key.teamId, bundleId: SIM_BUNDLE, env: 'production' })
  await withOperatorTools(cfg, async (t) => {
    if (!replace) {
      const oldFcm = await credentialMeta(t.db, appId, 'fcm')
      if (oldFcm && oldFcm.project_id !== SIM_PROJECT) {
        throw new SimulateError(
          `app ${appId} has real FCM credentials (project ${oldFcm.project_id}); use an app made for the test, or --replace-credentials`,
        )
      }
      const oldApns = await credentialMeta(t.db, appId, 'apns')
      if (oldApns && oldApns.team_id !== SIM_TEAM) {
        throw new SimulateError(
          `app ${appId} has real APNs credentials (team ${oldApns.team_id}); use an app made for the test, or --replace-credentials`,
        )
      }
    }
    const s = new CredentialService({ db: t.db, vault: t.vault, dir: t.dir, redis: t.redis, keys: t.keys, now: systemClock })
    try {
      await s.save(appId, 'fcm', fcm.credential, fcm.meta)
      await s.save(appId, 'apns', apns.credential, apns.meta)
    } catch (err) {
      if (err instanceof ApiError) throw err // the app is unknown, the vault key is missing: said as the routes say it
      throw new SimulateError(`storing the simulators' credentials: ${(err as Error).message}`)
    }
  })
}
