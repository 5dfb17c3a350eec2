// A service running the API and a delivery worker against the fake providers, with helpers to give an app its
// credentials, register devices, send and wait for a send to close.
import { CredentialService } from '../../src/credentials/service'
import { parseApns, parseServiceAccount } from '../../src/credentials/validate'
import { startFakeProviders } from '../fakes'
import { basic, type FakeClock, type StartOptions, startService, type TestService } from './service'

type Tap = Parameters<typeof startService>[0]
export type App = Awaited<ReturnType<TestService['createApp']>>
export const BUNDLE_ID = 'com.pombo.demo'

export async function startDelivery(
  t: Tap,
  o: { clock?: FakeClock; env?: Record<string, string>; jobs?: boolean; service?: Partial<StartOptions> } = {},
) {
  // The fake providers check token lifetimes and assertion times on the service's clock: a test that moves it
  // (hours, days) keeps its FCM and APNs credentials working.
  const now = o.clock?.now
  const fakes = await startFakeProviders(t, { apns: { bundleId: BUNDLE_ID, now }, fcm: { now } })
  const s = await startService(t, {
    roles: ['api', 'worker'],
    clock: o.clock,
    jobs: o.jobs,
    providerCa: fakes.ca,
    env: { PM_FCM_BASE_URL: fakes.fcm.url, PM_APNS_BASE_URL: fakes.apns.url, PM_PARTITIONS: '4', ...o.env },
    ...o.service,
  })
  const creds = new CredentialService({ ...s.svc.deps, now: s.svc.deps.clock })

  return {
    s,
    ...fakes,
    async fcmFor(app: App, project = 'pombo-test'): Promise<void> {
      const { credential, meta } = parseServiceAccount(JSON.stringify(fakes.fcm.serviceAccount(project)))
      await creds.save(app.id, 'fcm', credential, meta)
    },
    async apnsFor(app: App, env: 'sandbox' | 'production' = 'production'): Promise<void> {
      const key = fakes.apns.key({ environment: env })
      const { credential, meta } = parseApns({ p8: key.p8, keyId: key.keyId, teamId: key.teamId, bundleId: BUNDLE_ID, env })
      await creds.save(app.id, 'apns', credential, meta)
    },
    creds,
    async device(app: App, identifier: string, extra: Record<string, unknown> = {}): Promise<string> {
      const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier, ...extra } })
      if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
      return r.json.id
    },
    async send(app: App, body: Record<string, unknown>): Promise<string> {
      const r = await s.call('POST', '/api/v1/notifications', {
        body: { app_id: app.id, contents: { en: 'Hello', pt: 'Olá' }, ...body },
        headers: basic(app.api_key),
      })
      if (r.status !== 200 || !r.json.id) throw new Error(`send: ${r.status} ${r.text}`)
      return r.json.id
    },
    /** Polls the send until `remaining` is 0 and it is closed; answers its row. */
    async closed(sendId: string, timeoutMs = 15_000): Promise<Record<string, unknown>> {
      const until = Date.now() + timeoutMs
      for (;;) {
        const [row] = await s.sql('SELECT * FROM sends WHERE id = $1', [sendId])
        if (row && row.remaining === 0 && row.completed_at) return row
        if (Date.now() > until) throw new Error(`send ${sendId} did not close: ${JSON.stringify(row)}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    },
  }
}
