// The provider simulators of a `pombo simulate` run, and the app's credentials that make the workers use them.
// The simulators listen on free loopback ports; the app gets simulator credentials (src/providers/credentials.ts
// `simulator`): an FCM service account whose token_uri is the FCM simulator's, an APNs key the APNs simulator trusts,
// each carrying its simulator's address and the simulators' CA. A worker of an instance that allows simulators
// (PM_ALLOW_SIMULATORS) delivers that app's pushes there, and only that app's; any other worker refuses them. Their
// certificate lives in a directory (default .data/simulators), kept between runs.
import { withOperatorTools } from '../cli/operator'
import type { Config } from '../core/config'
import { CredentialService } from '../credentials/service'
import { credentialMeta } from '../credentials/store'
import { parseApns, parseServiceAccount } from '../credentials/validate'
import { ApiError } from '../core/errors'
import { SimulateError } from './errors'
import { type ApnsDelivery, type ApnsSimulator, startApnsSimulator } from '../simulators/apns'
import type { Latency } from '../simulators/conditions'
import { type FcmDelivery, type FcmSimulator, startFcmSimulator } from '../simulators/fcm'
import { type SimulatorTls, simulatorTls } from '../simulators/tls'
import { systemClock } from '../core/time'

/** The FCM project of the simulator's service accounts, and the Team ID of its APNs keys. A stored credential is the
 *  simulator's (and so may be replaced without --replace-credentials) when its meta says `simulator`, or, stored
 *  before that mark existed, when it has these. */
export const SIM_PROJECT = 'pombo-simulator'
export const SIM_TEAM = 'POMBOSIM00'
export const SIM_BUNDLE = 'com.pombo.simulate'

/** Why `pombo simulate` does not run here: the instance does not allow simulators. */
export const SIMULATORS_NOT_ALLOWED =
  'simulators are not allowed on this instance: PM_ALLOW_SIMULATORS is off (npm start turns it on; keep it off in production)'

export interface ProviderOptions {
  tlsDir: string | null
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
  const listen = async <T>(what: string, start: () => Promise<T>): Promise<T> => {
    try {
      return await start()
    } catch (err) {
      throw new SimulateError(`${what} simulator: ${(err as Error).message}`)
    }
  }
  const fcm = await listen('FCM', () =>
    startFcmSimulator({
      ...common,
      port: 0,
      latency: o.fcmLatency,
      failureRates: o.failureRate > 0 ? { unavailable: o.failureRate } : undefined,
      onDeliver: o.onFcm,
    }),
  )
  let apns: ApnsSimulator
  try {
    apns = await listen('APNs', () =>
      startApnsSimulator({
        ...common,
        port: 0,
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
 * Stores, for the app, simulator credentials: an FCM service account and an APNs key that the simulators trust, each
 * marked with its simulator's address. An app holding real credentials (not the simulator's) is refused unless
 * `replace` is set: a load test must never silently take a production app's delivery away.
 */
export async function pointAppAtSimulators(cfg: Config, appId: string, p: Providers, replace: boolean): Promise<void> {
  const account = p.fcm.serviceAccount(SIM_PROJECT)
  const key = p.apns.key({ environment: 'both' })
  const fcm = parseServiceAccount(JSON.stringify(account))
  const apns = parseApns({ p8: key.p8, keyId: key.keyId, teamId: key.teamId, bundleId: SIM_BUNDLE, env: 'production' })
  const ca = p.tls.caPem
  await withOperatorTools(cfg, async (t) => {
    if (!replace) {
      const oldFcm = await credentialMeta(t.db, appId, 'fcm')
      if (oldFcm && !oldFcm.simulator && oldFcm.project_id !== SIM_PROJECT) {
        throw new SimulateError(
          `app ${appId} has real FCM credentials (project ${oldFcm.project_id}); use an app made for the test, or --replace-credentials`,
        )
      }
      const oldApns = await credentialMeta(t.db, appId, 'apns')
      if (oldApns && !oldApns.simulator && oldApns.team_id !== SIM_TEAM) {
        throw new SimulateError(
          `app ${appId} has real APNs credentials (team ${oldApns.team_id}); use an app made for the test, or --replace-credentials`,
        )
      }
    }
    const s = new CredentialService({
      db: t.db,
      vault: t.vault,
      dir: t.dir,
      redis: t.redis,
      keys: t.keys,
      now: systemClock,
      cfg,
    })
    try {
      await s.save(appId, 'fcm', { ...fcm.credential, simulator: { url: p.fcm.url, ca } }, { ...fcm.meta, simulator: true })
      await s.save(appId, 'apns', { ...apns.credential, simulator: { url: p.apns.url, ca } }, { ...apns.meta, simulator: true })
    } catch (err) {
      if (err instanceof ApiError) throw err // the app is unknown, the vault key is missing: said as the routes say it
      throw new SimulateError(`storing the simulators' credentials: ${(err as Error).message}`)
    }
  })
}
