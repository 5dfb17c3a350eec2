// The SDK's offline queue and retries against a real service: Retry-After honoured, backoff retries on its own,
// proofs refused for good are dropped (not retried), the queue is bounded, a service unreachable at init, a storage
// that is asynchronous or broken, and a token change that retires the old device without losing its late pushes.
import { type PomboError, type StorageAdapter, Pombo } from '@pombo/sdk'
import t from 'tap'
import { Network, sdkWorld } from '../helpers/sdk'

const receiptsSeen = (net: Network) => net.seen.filter((p) => p === '/api/v1/receipts').length

t.test('429 with Retry-After: nothing is sent before it expires, not even by flush; then exactly once', async (t) => {
  const w = await sdkWorld(t)
  const net = new Network()
  let now = Date.now()
  const tok = w.token()
  const p = await w.device(tok, { fetch: net.fetch, now: () => now })
  const s1 = await w.send([p.playerId as string])
  net.fail = { status: 429, headers: { 'retry-after': '30' } }
  t.match(await p.handlePush(w.pushTo(tok, s1)), { receipt: 'queued' })
  net.fail = null
  const before = receiptsSeen(net)
  t.match(await p.flush(), { sent: 0, pending: 1 }, 'the service asked for 30 s')
  t.match(await p.handleTap(w.pushTo(tok, s1)), { receipt: 'queued' }, 'a tap in the meantime waits too')
  t.equal(receiptsSeen(net), before, 'no request reached the service')
  now += 31_000
  t.match(await p.flush(), { sent: 2, pending: 0 })
  t.same(await w.counters(s1), { recebidos: 1, converted: 1 })
})

t.test('5xx: the automatic retry follows the backoff and delivers the receipt by itself', async (t) => {
  const w = await sdkWorld(t)
  const net = new Network()
  const tok = w.token()
  const p = await w.device(tok, { fetch: net.fetch, autoRetry: true, retry: { baseMs: 200, maxMs: 400 } })
  const s1 = await w.send([p.playerId as string])
  net.fail = { status: 503 }
  t.match(await p.handlePush(w.pushTo(tok, s1)), { receipt: 'queued' })
  net.fail = null
  const until = Date.now() + 10_000
  while ((await p.queued()).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  t.same(await p.queued(), [], 'retried without anyone calling flush')
  t.same(await w.counters(s1), { recebidos: 1, converted: 0 })
})

t.test('a refused proof is dropped with its reason, never retried; errors never throw into the handler', async (t) => {
  const w = await sdkWorld(t)
  const errors: PomboError[] = []
  const tok = w.token()
  const p = await w.device(tok, { errors })
  const s1 = await w.send([p.playerId as string])
  const data = { ...w.pushTo(tok, s1), pm_rcpt: 'A'.repeat(32) }
  t.match(await p.handlePush(data), { notificationId: s1, receipt: 'dropped' })
  t.same(await p.queued(), [])
  t.match(errors.at(-1), { kind: 'receipt', status: 403 })
  t.match(errors.at(-1)?.message, /^403: /)
  t.same(await w.counters(s1), { recebidos: 0, converted: 0 })
  t.equal(await p.handlePush({ qualquer: 'coisa' }), null, 'not a Pombo push')
  t.equal(await p.handlePush(null), null)
  t.equal(await p.handlePush('texto'), null)
  t.equal(await p.handleTap(undefined), null)
  t.match(await p.handlePush(w.pushTo(tok, s1)), { receipt: 'sent' }, 'the real proof still counts')
})

t.test('the queue is bounded: past maxQueue the oldest receipt is dropped and reported', async (t) => {
  const w = await sdkWorld(t)
  const net = new Network()
  const errors: PomboError[] = []
  const tok = w.token()
  const p = await w.device(tok, { fetch: net.fetch, maxQueue: 2, errors })
  const sends = [await w.send([p.playerId as string]), await w.send([p.playerId as string]), await w.send([p.playerId as string])]
  net.offline = true
  for (const s of sends) await p.handlePush(w.pushTo(tok, s))
  t.same(
    (await p.queued()).map((j) => j.id),
    [`${sends[1]}:recebido`, `${sends[2]}:recebido`],
  )
  t.ok(errors.some((e) => e.kind === 'receipt' && /fila cheia/.test(e.message) && e.job?.id === `${sends[0]}:recebido`))
  net.offline = false
  t.match(await p.flush(), { sent: 2 })
  t.same(await Promise.all(sends.map((s) => w.counters(s))), [
    { recebidos: 0, converted: 0 },
    { recebidos: 1, converted: 0 },
    { recebidos: 1, converted: 0 },
  ])
})

t.test('service unreachable at init: init resolves, reports, and flush registers once it is back', async (t) => {
  const w = await sdkWorld(t)
  const net = new Network()
  net.offline = true
  const errors: PomboError[] = []
  const tok = w.token()
  const p = await w.device(tok, { fetch: net.fetch, errors })
  t.equal(p.playerId, null)
  t.match(errors[0], { kind: 'register' })
  net.offline = false
  await p.flush()
  t.match(p.playerId, /^[0-9a-f-]{36}$/)
  const s1 = await w.send([p.playerId as string])
  t.match(await p.handlePush(w.pushTo(tok, s1)), { receipt: 'sent' })
  t.same(await w.counters(s1), { recebidos: 1, converted: 0 })

  // An address where nothing listens: a real connection refusal, not a simulated one.
  const dead = await Pombo.init({
    baseUrl: 'http://127.0.0.1:9',
    appId: w.app.id,
    appVersion: '1',
    deviceType: 1,
    getToken: () => 'x',
    autoRetry: false,
    onError: (e) => errors.push(e),
  })
  t.equal(dead.playerId, null)
  t.match(errors.at(-1), { kind: 'register', message: /rede/ })
  await t.rejects(
    Pombo.init({ appId: w.app.id, appVersion: '1', deviceType: 1, getToken: () => 'x' } as never),
    /baseUrl é obrigatório/,
    'no default host: baseUrl must be given',
  )
})

t.test('service-worker conditions: asynchronous storage, a background init, and a storage that throws', async (t) => {
  const w = await sdkWorld(t)
  const map = new Map<string, string>()
  const later = <T>(f: () => T): Promise<T> => new Promise((r) => setTimeout(() => r(f()), 1))
  const idb: StorageAdapter = {
    getItem: (k) => later(() => map.get(k) ?? null),
    setItem: (k, v) => later(() => map.set(k, v)),
    removeItem: (k) => later(() => map.delete(k)),
  }
  const tok = w.token()
  const page = await w.device(tok, { storage: idb })
  const s1 = await w.send([page.playerId as string])
  const sw = await w.device(tok, { storage: idb, background: true })
  t.equal(sw.playerId, page.playerId, 'the worker finds the registration the page made')
  t.match(await sw.handlePush(w.pushTo(tok, s1)), { receipt: 'sent' })
  t.same(await w.counters(s1), { recebidos: 1, converted: 0 })

  const errors: PomboError[] = []
  const broken: StorageAdapter = {
    getItem: () => {
      throw new Error('SecurityError')
    },
    setItem: () => {
      throw new Error('QuotaExceededError')
    },
    removeItem: () => {
      throw new Error('nope')
    },
  }
  const tok2 = w.token()
  const q = await w.device(tok2, { storage: broken, errors })
  t.match(q.playerId, /^[0-9a-f-]{36}$/, 'registered all the same')
  t.ok(
    errors.some((e) => e.kind === 'storage'),
    'and the storage failure was reported',
  )
  const s2 = await w.send([q.playerId as string])
  t.match(await q.handlePush(w.pushTo(tok2, s2)), { receipt: 'sent' })
  t.same(await w.counters(s2), { recebidos: 1, converted: 0 })
})

t.test('a token change re-registers with the install id: the old device retires, its late pushes still count', async (t) => {
  const w = await sdkWorld(t)
  const storage = new (await import('@pombo/sdk')).MemoryStorage()
  let tok = w.token('old')
  const oldTok = tok
  const p = await w.device(() => tok, { storage })
  const oldId = p.playerId as string
  const s1 = await w.send([oldId])
  tok = w.token('new')
  const newId = await p.refreshToken()
  t.not(newId, oldId, 'a new token is a new device')
  t.equal(p.token, tok)
  const [oldRow, newRow] = [await w.deviceRow(oldId), await w.deviceRow(newId as string)]
  t.equal(oldRow.invalid_identifier, true, 'the old token retired at registration')
  t.equal(oldRow.invalid_reason, 'substituido')
  t.equal(newRow.invalid_identifier, false)
  t.equal(newRow.instalacao_id, oldRow.instalacao_id)
  t.equal(await p.refreshToken(), newId, 'nothing changed: no new registration')

  t.match(await p.handlePush(w.pushTo(oldTok, s1)), { receipt: 'sent' }, 'a push sent before the change still proves arrival')
  t.same(await w.counters(s1), { recebidos: 1, converted: 0 })
  const s2 = await w.send([oldId, newId as string])
  const [row] = await w.s.sql('SELECT recipients FROM sends WHERE id = $1', [s2])
  t.equal(row?.recipients, 1, 'the retired device is out of the audience')
  t.match(await p.handlePush(w.pushTo(tok, s2)), { receipt: 'sent' })
  t.same(await w.counters(s2), { recebidos: 1, converted: 0 })

  // Next launch with yet another token: init itself re-registers.
  p.close()
  tok = w.token('third')
  const again = await w.device(() => tok, { storage })
  t.not(again.playerId, newId)
  t.equal((await w.deviceRow(newId as string)).invalid_identifier, true)
  t.equal(again.installId, p.installId)
})
