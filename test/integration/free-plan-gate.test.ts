// The free plan withholds proof of arrival on every surface, through one rule (src/apps/plan.ts): the window
// statistics' `entregues`, the webhook's and the gRPC stream's delivery.received events, and the dashboard's
// counters, totals and charts. Real sends delivered through the fake FCM, real receipts through the real route.
import t from 'tap'
import { ARRIVALS_GATE } from '../../src/sends/read'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { type App, startDelivery } from '../helpers/delivery'
import { subscribe } from '../helpers/grpc'
import { until } from '../helpers/until'
import { basic } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

t.test('free plan: no entregues, no delivery.received, no receipts on the dashboard; pro shows them all', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const d = await startDelivery(t, {
    env: { PM_LIMIT_IP_PER_MIN: '0', PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    service: {
      roles: ['api', 'worker', 'dashboard'],
      grpc: true,
      webhookCa: testCa(),
      webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 10_000 },
    },
  })
  // Two apps of one free organisation: one reads by webhook (and is the one whose statistics and page are read),
  // one by the gRPC stream.
  const org = await makeOrg(d.s, 'Grátis', 'free')
  await makePerson(d.s, 'bia@example.com', SENHA, org)
  const hooked = (await d.s.svc.deps.apps.create({ name: 'Webhook', orgId: org })) as unknown as App
  const streamed = (await d.s.svc.deps.apps.create({ name: 'Stream', orgId: org })) as unknown as App
  const put = async (app: App, body: Record<string, unknown>) => {
    const r = await d.s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: app.id, ...body }, headers: basic(app.api_key) })
    t.equal(r.status, 200, r.text)
    return r.json
  }
  rx.secret('/gate', (await put(hooked, { url: rx.url('/gate'), modo: 'webhook' })).segredo)
  await put(streamed, { modo: 'grpc' })
  const port = d.s.svc.grpc?.port as number
  const stream = subscribe(port, `Basic ${streamed.api_key}`, streamed.id)
  t.teardown(() => stream.cancel())

  /** A send to three devices of the app, delivered and closed, and a receipt poster with the proofs they got. */
  const delivered = async (app: App, tag: string) => {
    await d.fcmFor(app)
    const ids = [await d.device(app, `${tag}-0`), await d.device(app, `${tag}-1`), await d.device(app, `${tag}-2`)]
    const sendId = await d.send(app, { include_player_ids: ids })
    t.equal((await d.closed(sendId)).successful, 3)
    const receipt = async (i: number, evento: 'recebido' | 'clique') => {
      const rcpt = d.fcm.delivered.find((r) => r.target === `${tag}-${i}`)?.body.message.data.pm_rcpt
      const r = await d.s.call('POST', '/api/v1/receipts', {
        body: { app_id: app.id, notification_id: sendId, player_id: ids[i], rcpt, evento },
      })
      t.equal(r.status, 200, r.text)
    }
    return { ids, sendId, receipt }
  }
  const h = await delivered(hooked, 'gate-h')
  const g = await delivered(streamed, 'gate-g')
  // Free: a delivery receipt from device 0, a click from device 1 (which also proves its arrival), on both apps.
  for (const x of [h, g]) {
    await x.receipt(0, 'recebido')
    await x.receipt(1, 'clique')
  }
  const [counted] = await d.s.sql('SELECT recebidos, converted FROM sends WHERE id = $1', [h.sendId])
  t.same(counted, { recebidos: 2, converted: 1 }, 'counted all along: only what is shown depends on the plan')

  const desde = new Date(Date.now() - 3_600_000).toISOString()
  const ate = new Date(Date.now() + 3_600_000).toISOString()
  const stats = async () => {
    const r = await d.s.call('GET', `/api/v1/notifications/stats?app_id=${hooked.id}&desde=${desde}&ate=${ate}`, {
      headers: basic(hooked.api_key),
    })
    t.equal(r.status, 200, r.text)
    return r.json
  }
  const c = new DashClient(d.s.dashboardUrl)
  t.equal((await c.signIn('bia@example.com', SENHA)).status, 303)
  const page = async () => (await c.get(`/apps/${hooked.id}`)).text
  const live = async () => JSON.parse((await c.get(`/apps/${hooked.id}/envios.json?ids=${h.sendId}`)).text).envios[h.sendId]

  // Window statistics: entregues withheld, with the read shape's gate.
  const free = await stats()
  t.same(free.totais, { disparos: 1, enviados: 3, falhas: 0, entregues: null, cliques: 1 })
  t.same(
    free.por_dia.map((x: { entregues: unknown }) => x.entregues),
    [null],
  )
  t.same(free.recebidos_gate, ARRIVALS_GATE)

  // Webhook and stream: notification.completed and delivery.clicked; no delivery.received (they are serial, in seq
  // order, so what arrives after them shows nothing was held back).
  // Distinct events, signed, in the order they first arrived (an attempt the dispatcher timed out is sent again).
  const hooks = async (n: number) => {
    const events = () => {
      const seen = new Map<string, [string, string | undefined]>()
      for (const r of rx.on('/gate')) {
        const id = r.headers['x-pm-evento-id'] as string
        if (r.signed && !seen.has(id)) seen.set(id, [r.json.evento, r.json.player_id])
      }
      return [...seen.values()]
    }
    await until(`${n} webhook events`, () => events().length >= n, 30_000)
    return events()
  }
  t.same(await hooks(2), [
    ['notification.completed', undefined],
    ['delivery.clicked', h.ids[1]],
  ])
  t.same(
    (await stream.waitFor(2)).map((e) => [e.evento, e.player_id]),
    [
      ['notification.completed', ''],
      ['delivery.clicked', g.ids[1]],
    ],
  )

  // Dashboard: no receipts' total, series or proof chart; the counters show no recebidos, not even in a meter's text.
  const freePage = await page()
  t.notMatch(freePage, /com recibo de chegada/)
  t.notMatch(freePage, /grafico-prova/)
  t.notMatch(freePage, /"entregues"|"provados"/)
  t.match(freePage, ARRIVALS_GATE.por_que)
  t.match(freePage, /<td data-campo="recebidos">—<\/td>/)
  t.match(freePage, /<meter data-campo="recebidos" min="0" max="3" value="0">0<\/meter>/)
  t.equal((await live()).recebidos, null)

  // Pro: everything shows, and proofs from now on become events (those of the free period stay unsent).
  await d.s.svc.deps.apps.setPlan(hooked.id, 'pro') // the organisation's plan: both apps
  await h.receipt(2, 'recebido')
  await g.receipt(2, 'recebido')
  t.same((await hooks(3)).slice(2), [['delivery.received', h.ids[2]]])
  t.same(
    (await stream.waitFor(3)).slice(2).map((e) => [e.evento, e.player_id]),
    [['delivery.received', g.ids[2]]],
  )
  const pro = await stats()
  t.same(pro.totais, { disparos: 1, enviados: 3, falhas: 0, entregues: 3, cliques: 1 })
  t.same(
    pro.por_dia.map((x: { entregues: unknown }) => x.entregues),
    [3],
  )
  t.equal(pro.recebidos_gate, undefined)
  const proPage = await page()
  t.match(proPage, /3 com recibo de chegada/)
  t.match(proPage, /grafico-prova/)
  t.match(proPage, /"entregues":\[3\]/)
  t.match(proPage, /<td data-campo="recebidos">3<\/td>/)
  t.equal((await live()).recebidos, 3)
  const received = await d.s.sql("SELECT count(*)::int AS n FROM events WHERE evento = 'delivery.received'")
  t.equal(received[0]?.n, 2, 'one per app, both after the plan changed')
})
