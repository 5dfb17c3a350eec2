// A device deleted in the dashboard registers itself again on the next use of the app (the spec, Device validity):
// SDK instances against a real service, the device deleted through the dashboard's own action, and the SDK learning
// it from a receipt's answer, an in-app poll's answer or its registration refresh. Receipts already owed are never
// lost, and a service that keeps refusing (or keeps saying "unknown") costs one registration per backoff step.
import { MemoryStorage, type PomboError, type PomboOptions, Pombo } from '@pombo/sdk'
import t from 'tap'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { startDelivery } from '../helpers/delivery'
import { InappWorld } from '../helpers/inapp'
import { until } from '../helpers/until'

type Tap = Parameters<typeof startDelivery>[0]

const SENHA = 'uma-senha-bem-longa'
const PLAYERS = '/api/v1/players'

/** The SDK's fetch, recorded; the test can refuse one path or mark answers as the service marks an unknown device. */
class Wire {
  readonly log: Array<{
    method: string
    path: string
    player: string | null
    status: number
    mark: string | null
    body: string
  }> = []
  /** Answer this status instead of the service on these paths. */
  readonly refuse = new Map<string, number>()
  /** Add the unknown-device mark to every successful answer (a proxy gone wrong, a service contradicting itself). */
  markAll = false
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const u = new URL(url)
    const path = u.pathname
    const method = init.method ?? 'GET'
    const player =
      u.searchParams.get('player_id') ?? (typeof init.body === 'string' ? JSON.parse(init.body).player_id : null) ?? null
    const refused = this.refuse.get(path)
    if (refused !== undefined) {
      this.log.push({ method, path, player, status: refused, mark: null, body: '' })
      return new Response('{"errors":["recusado pelo teste"]}', { status: refused })
    }
    const res = await fetch(url, init)
    const body = await res.text()
    const headers = new Headers(res.headers)
    if (this.markAll && res.ok) headers.set('x-pm-dispositivo', 'desconhecido')
    this.log.push({ method, path, player, status: res.status, mark: headers.get('x-pm-dispositivo'), body })
    return new Response(res.status === 304 ? null : body, { status: res.status, headers })
  }
  count(path: string, method = 'POST'): number {
    return this.log.filter((x) => x.path === path && x.method === method).length
  }
}

async function world(t: Tap) {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0' }, service: { roles: ['api', 'worker', 'dashboard'] } })
  const org = await makeOrg(d.s, 'Loja', 'pro')
  await makePerson(d.s, 'ana@example.com', SENHA, org)
  const app = await d.s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  await d.fcmFor(app)
  const dash = new DashClient(d.s.dashboardUrl)
  if ((await dash.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
  const appPath = `/apps/${app.id}`
  const tag = Math.random().toString(36).slice(2, 8)
  let n = 0

  return {
    d,
    s: d.s,
    app,
    inapp: new InappWorld(d.s, app),
    token: () => `tok-${tag}-${n++}`,
    async device(token: string, o: Partial<PomboOptions> & { errors?: PomboError[] } = {}): Promise<Pombo> {
      const errors = o.errors ?? []
      const p = await Pombo.init({
        baseUrl: d.s.url,
        appId: app.id,
        appVersion: '1.2.3',
        deviceType: 1,
        getToken: () => token,
        storage: new MemoryStorage(),
        autoRetry: false,
        inappPollMs: 0,
        onError: (e) => errors.push(e),
        ...o,
      })
      t.teardown(() => p.close())
      return p
    },
    /** Deletes the device the way the dashboard's "Excluir" does (with the confirmation). */
    async remove(player: string): Promise<void> {
      const r = await dash.submit(appPath, `${appPath}/dispositivos/${player}/excluir`, { confirmar: '1' })
      if (r.status !== 303) throw new Error(`excluir: ${r.status} ${r.text.slice(0, 300)}`)
      const [row] = await d.s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE id = $1', [player])
      if (row?.n !== 0) throw new Error('the device is still there')
    },
    async send(players: string[]): Promise<string> {
      const id = await d.send(app, { include_player_ids: players })
      await d.closed(id)
      return id
    },
    pushTo(token: string, sendId: string): Record<string, unknown> {
      const f = d.fcm.delivered.find((r) => r.target === token && r.body.message.data.pm_msg_id === sendId)
      if (!f) throw new Error(`no delivery of ${sendId} to ${token}`)
      return f.body.message.data
    },
    async recebidos(sendId: string): Promise<number> {
      const [r] = await d.s.sql<{ recebidos: number }>('SELECT recebidos FROM sends WHERE id = $1', [sendId])
      return r?.recebidos ?? -1
    },
    async deviceRow(id: string) {
      const [r] = await d.s.sql<{ identifier: string; instalacao_id: string }>(
        'SELECT identifier, instalacao_id FROM devices WHERE id = $1',
        [id],
      )
      return r
    },
  }
}

t.test('a receipt: counted for the deleted device (its proof names it), and the SDK registers again at once', async (t) => {
  const w = await world(t)
  const wire = new Wire()
  const tok = w.token()
  const p = await w.device(tok, { fetch: wire.fetch })
  const old = p.playerId as string
  const [s1, s2] = [await w.send([old]), await w.send([old])]
  await w.remove(old)
  const registrations = wire.count(PLAYERS)

  t.match(await p.handlePush(w.pushTo(tok, s1)), { notificationId: s1, receipt: 'sent' })
  t.equal(await w.recebidos(s1), 1, 'the receipt counts on the send: the push did reach that device')
  const answer = wire.log.findLast((x) => x.path === '/api/v1/receipts')
  t.match(
    answer,
    { player: old, status: 200, mark: 'desconhecido' },
    'the service marks its answer: it has no device with that id',
  )
  t.same(JSON.parse(answer?.body ?? ''), { ok: true }, "the contract's answer is unchanged")

  const fresh = await until('a new player id', () => (p.playerId !== old ? p.playerId : null))
  t.equal(wire.count(PLAYERS), registrations + 1, 'one registration')
  t.match(
    await w.deviceRow(fresh),
    { identifier: tok, instalacao_id: p.installId },
    'the same token and install, as a new device',
  )

  // A push of before the deletion arriving now still proves arrival, for the device it was sent to.
  t.match(await p.handlePush(w.pushTo(tok, s2)), { receipt: 'sent' })
  t.equal(await w.recebidos(s2), 1)
  t.equal(p.playerId, fresh, 'an answer about the previous device changes nothing')
  t.equal(wire.count(PLAYERS), registrations + 1, 'and registers nothing')

  // The new device is in audiences again and its receipts carry no mark.
  const s3 = await w.send([fresh])
  t.match(await p.handlePush(w.pushTo(tok, s3)), { receipt: 'sent' })
  t.equal(await w.recebidos(s3), 1)
  t.equal(wire.log.findLast((x) => x.path === '/api/v1/receipts')?.mark, null, 'a device the service has is not marked')
  t.same(await p.queued(), [])
})

t.test(
  'an in-app poll: the first poll after the deletion makes the SDK register again, then serves the new device',
  async (t) => {
    const w = await world(t)
    const on = await w.inapp.config({ inapp_ativo: true })
    t.equal(on.status, 200)
    const campanha = await w.inapp.campaign({ gatilho: { tipo: 'ao_abrir', atraso_ms: 0 } })
    const wire = new Wire()
    const p = await w.device(w.token(), { fetch: wire.fetch })
    const old = p.playerId as string
    t.equal(wire.count('/api/v1/inapp/pending', 'GET'), 0, 'no poll before the app draws anything')
    await w.remove(old)

    const shown: string[] = []
    p.inapp.onShow((card) => shown.push(card.campanhaId))
    const fresh = await until('a new player id', () => (p.playerId !== old ? p.playerId : null))
    const polls = wire.log.filter((x) => x.path === '/api/v1/inapp/pending')
    t.match(polls[0], { player: old, status: 200, mark: 'desconhecido' }, 'the poll for the deleted device is marked')
    t.same(JSON.parse(polls[0]?.body ?? '').messages, [], 'and is still the empty package of the contract')
    await until('the card', () => shown.length === 1)
    t.same(shown, [campanha], "the new device's package, with the new device's proof")
    t.equal(wire.count(PLAYERS), 2, 'init, then one registration again')
    t.match(await p.flush(), { sent: 1, pending: 0 }, 'its impression is accepted')
    t.match(wire.log.filter((x) => x.path === '/api/v1/inapp/pending').at(-1), { player: fresh, mark: null })
  },
)

t.test(
  'a registration refresh: the new player id is kept, and a receipt queued for the deleted device still counts',
  async (t) => {
    const w = await world(t)
    const wire = new Wire()
    const storage = new MemoryStorage()
    const tok = w.token()
    let skew = 0
    const now = () => Date.now() + skew
    const p = await w.device(tok, { fetch: wire.fetch, storage, now })
    const old = p.playerId as string
    const s1 = await w.send([old])
    wire.refuse.set('/api/v1/receipts', 503) // offline for receipts: the receipt stays in storage
    t.match(await p.handlePush(w.pushTo(tok, s1)), { receipt: 'queued' })
    p.close()
    wire.refuse.clear()
    await w.remove(old)

    // The next launch, a day later: the registration refresh answers another id for the same token.
    skew = 25 * 3_600_000
    const again = await w.device(tok, { fetch: wire.fetch, storage, now })
    t.not(again.playerId, old, 'registered again: a new device')
    t.match(await w.deviceRow(again.playerId as string), { identifier: tok })
    t.equal(await w.recebidos(s1), 1, 'the receipt owed by the last run counted, for the device the push reached')
    t.same(await again.queued(), [])
    t.equal(wire.count(PLAYERS), 2, "the refresh only: the mark on the old device's receipt registers nothing more")
  },
)

t.test('no loop: a failing registration waits its backoff; a service that keeps saying "unknown" too', async (t) => {
  const w = await world(t)
  const wire = new Wire()
  const errors: PomboError[] = []
  const tok = w.token()
  let skew = 0
  const p = await w.device(tok, {
    fetch: wire.fetch,
    errors,
    retry: { baseMs: 60_000, maxMs: 600_000 },
    now: () => Date.now() + skew,
  })
  const old = p.playerId as string
  const sends = [await w.send([old]), await w.send([old]), await w.send([old]), await w.send([old])]
  await w.remove(old)
  wire.refuse.set(PLAYERS, 503)

  t.match(await p.handlePush(w.pushTo(tok, sends[0] as string)), { receipt: 'sent' })
  await until('the registration attempt', () => errors.some((e) => e.kind === 'register' && e.status === 503))
  t.equal(wire.count(PLAYERS), 2, 'init, then one attempt')
  for (const s of sends.slice(1, 3)) t.match(await p.handlePush(w.pushTo(tok, s)), { receipt: 'sent' })
  t.equal(wire.count(PLAYERS), 2, 'more marked answers inside the backoff: no registration')
  t.equal(p.playerId, old)

  // Past the backoff, the next marked answer tries again; the service is back and the device comes back.
  wire.refuse.clear()
  skew = 120_000
  t.match(await p.handlePush(w.pushTo(tok, sends[3] as string)), { receipt: 'sent' })
  const ids = sends.map((s) => w.recebidos(s))
  t.same(await Promise.all(ids), [1, 1, 1, 1], 'every receipt counted')
  t.equal((await until('a new player id', () => (p.playerId !== old ? p.playerId : null))) !== old, true)
  t.equal(wire.count(PLAYERS), 3)

  // A service (or a proxy) that marks every answer: the registration answers the same id, so the SDK backs off.
  wire.markAll = true
  const s5 = await w.send([p.playerId as string])
  const s6 = await w.send([p.playerId as string])
  const before = wire.count(PLAYERS)
  const id = p.playerId
  await p.handlePush(w.pushTo(tok, s5))
  await p.flush()
  t.equal(wire.count(PLAYERS), before + 1, 'one registration, answering the same id')
  t.equal(p.playerId, id)
  await p.handlePush(w.pushTo(tok, s6))
  await p.handleTap(w.pushTo(tok, s6))
  await p.flush()
  t.equal(wire.count(PLAYERS), before + 1, 'then nothing more inside the backoff')
})

t.test('the mark on the in-app route itself: also without campaigns, on a 304 too, exposed to browsers', async (t) => {
  const w = await world(t)
  t.equal((await w.inapp.config({ inapp_ativo: true })).status, 200)
  const live = await w.inapp.device()
  const gone = await w.inapp.device()
  await w.remove(gone)
  const ok = await w.inapp.pending(live)
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('x-pm-dispositivo'), null, 'a device the app has: no mark')
  const first = await w.inapp.pending(gone)
  t.equal(first.status, 200)
  t.same(first.json.messages, [], 'the empty package of the contract')
  t.equal(first.headers.get('x-pm-dispositivo'), 'desconhecido')
  t.match(first.headers.get('access-control-expose-headers'), /X-Pm-Dispositivo/, 'a web page may read it')
  const again = await w.inapp.pending(gone, '0.6', { 'if-none-match': first.json.etag })
  t.equal(again.status, 304)
  t.equal(again.headers.get('x-pm-dispositivo'), 'desconhecido')
})
