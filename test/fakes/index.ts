// Both fake providers for one test, torn down with it, and the environment a service process needs to reach them.
import { type ApnsOptions, startFakeApns } from './apns'
import { type FcmOptions, startFakeFcm } from './fcm'
import { testCa, trustEnv } from './tls'

export { startFakeApns, startFakeFcm, testCa, trustEnv }

interface Tap {
  teardown(fn: () => unknown): void
}

export async function startFakeProviders(t: Tap, o: { fcm?: FcmOptions; apns?: ApnsOptions } = {}) {
  const [fcm, apns] = await Promise.all([startFakeFcm(o.fcm), startFakeApns(o.apns)])
  t.teardown(() => Promise.all([fcm.close(), apns.close()]))
  return {
    fcm,
    apns,
    /** For a spawned service or worker: PM_FCM_BASE_URL, PM_APNS_BASE_URL, NODE_EXTRA_CA_CERTS. */
    env: { PM_FCM_BASE_URL: fcm.url, PM_APNS_BASE_URL: apns.url, ...trustEnv() },
    /** For an in-process client: pass as `ca` (NODE_EXTRA_CA_CERTS is only read at start-up). */
    ca: testCa(),
  }
}
