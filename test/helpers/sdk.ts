// SDK instances against a real service: a service with a delivery worker and the fake providers (test/fakes), an
// app with FCM and APNs credentials, devices created through `Pombo.init`, and what each device received read back
// from the fakes exactly as the provider would hand it to the device.
import { MemoryStorage, Pombo, type PomboError, type PomboOptions } from '@pombo/sdk'
import { type App, startDelivery } from './delivery'

type Tap = Parameters<typeof startDelivery>[0]

/** A fetch the test can cut: offline (the network fails) or answering a canned status instead of the service. */
export class Network {
  offline = false
  /** Answer this instead of the service while set (e.g. 503, or 429 with Retry-After). */
  fail: { status: number; headers?: Record<string, string> } | null = null
  /** Requests that reached the service, by path (without query). */
  readonly seen: string[] = []
  /** What the service answered them, in order: path, status, the If-None-Match sent. */
  readonly answers: Array<{ path: string; status: number; ifNoneMatch: string | null }> = []
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (this.offline) throw new TypeError('fetch failed')
    if (this.fail) return new Response('{"errors":["indisponível"]}', { status: this.fail.status, headers: this.fail.headers })
    const path = new URL(url).pathname
    this.seen.push(path)
    const res = await fetch(url, init)
    const inm = new Headers(init.headers).get('if-none-match')
    this.answers.push({ path, status: res.status, ifNoneMatch: inm })
    return res
  }
}

export async function sdkWorld(t: Tap, o: { env?: Record<string, string> } = {}) {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0', ...o.env } })
  const app: App = await d.s.createApp()
  await d.fcmFor(app)
  await d.apnsFor(app)
  const tag = Math.random().toString(36).slice(2, 8)
  let n = 0

  return {
    d,
    s: d.s,
    app,
    /** A fresh token, unique to this test. */
    token(prefix = 'tok'): string {
      return `${prefix}-${tag}-${n++}`
    },
    /** A device: Pombo.init against the service, errors collected in `errors`. */
    async device(
      token: string | (() => string | null),
      opts: Partial<PomboOptions> & { errors?: PomboError[] } = {},
    ): Promise<Pombo> {
      const errors = opts.errors ?? []
      const p = await Pombo.init({
        baseUrl: d.s.url,
        appId: app.id,
        appVersion: '1.2.3',
        deviceType: 1,
        getToken: typeof token === 'function' ? token : () => token,
        storage: new MemoryStorage(),
        autoRetry: false,
        onError: (e) => errors.push(e),
        ...opts,
      })
      t.teardown(() => p.close())
      return p
    },
    /** Sends to these players and waits until the send closed; answers its id. */
    async send(players: string[], body: Record<string, unknown> = {}): Promise<string> {
      const id = await d.send(app, { include_player_ids: players, ...body })
      await d.closed(id)
      return id
    },
    /** What the device with `token` got for `sendId`: the FCM `data` map, or the APNs payload. */
    pushTo(token: string, sendId: string): Record<string, unknown> {
      const f = d.fcm.delivered.find((r) => r.target === token && r.body.message.data.pm_msg_id === sendId)
      if (f) return f.body.message.data
      const a = d.apns.delivered.find((r) => r.token === token && r.body?.pm_msg_id === sendId)
      if (a) return a.body
      throw new Error(`no delivery of ${sendId} to ${token}`)
    },
    async counters(sendId: string): Promise<{ recebidos: number; converted: number }> {
      const [r] = await d.s.sql<{ recebidos: number; converted: number }>(
        'SELECT recebidos, converted FROM sends WHERE id = $1',
        [sendId],
      )
      if (!r) throw new Error('no send')
      return r
    },
    async deviceRow(id: string): Promise<Record<string, unknown>> {
      const [r] = await d.s.sql('SELECT * FROM devices WHERE id = $1', [id])
      if (!r) throw new Error(`no device ${id}`)
      return r
    },
  }
}
