// The SDK's outbox through its public API, against a scripted fetch (no service): which answers keep a receipt,
// which drop it, the automatic retries' growing waits, work queued during a round, in-app events in batches of at
// most 50, and a property over random answers: every receipt ends counted once or reported dropped.
import { MemoryStorage, Pombo, type PomboError } from '@pombo/sdk'
import fc from 'fast-check'
import t from 'tap'
import { until } from '../helpers/until'

const APP = '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'
const PLAYER = '11111111-2222-4333-8444-555555555555'
const sid = (i: number) => `0f8fad5b-d9cb-469f-a165-${String(i).padStart(12, '0')}`
const push = (i: number) => ({ pm_msg_id: sid(i), pm_rcpt: `proof-${i}`, pmx_title: 't', pmx_body: 'b' })

type Answer = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | 'offline'

/** A fake service: registration always works; receipts answer from `script` (then `fallback`). */
function fakeService(script: Answer[] = [], fallback: Answer = { status: 200, body: { ok: true } }) {
  const calls: Array<{ path: string; at: number; body: unknown }> = []
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const path = new URL(url).pathname
    const body = init.body ? JSON.parse(String(init.body)) : undefined
    calls.push({ path, at: Date.now(), body })
    if (path === '/api/v1/players') return Response.json({ success: true, id: PLAYER })
    if (path === '/api/v1/inapp/pending') return new Response(null, { status: 304 })
    if (path === '/api/v1/inapp/eventos')
      return Response.json({ ok: true, resultados: (body as { eventos: unknown[] }).eventos.map(() => 'aceito') })
    const a = script.shift() ?? fallback
    if (a === 'offline') throw new TypeError('fetch failed')
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs))
    return new Response(a.body === undefined ? '' : JSON.stringify(a.body), { status: a.status, headers: a.headers })
  }
  return { fetch, calls, receipts: () => calls.filter((c) => c.path === '/api/v1/receipts') }
}

async function device(
  fetch: (u: string, i: RequestInit) => Promise<Response>,
  o: Record<string, unknown> = {},
  errors: PomboError[] = [],
) {
  const p = await Pombo.init({
    baseUrl: 'http://pombo.test/',
    appId: APP,
    appVersion: '1',
    deviceType: 1,
    getToken: () => 'tok',
    fetch,
    autoRetry: false,
    storage: new MemoryStorage(),
    onError: (e) => errors.push(e),
    ...o,
  })
  return p
}

t.test('what keeps a receipt and what drops it', async (t) => {
  const svc = fakeService([
    { status: 500 },
    { status: 503, headers: { 'retry-after': '0' } },
    { status: 408 },
    'offline',
    { status: 200, body: { ok: true, duplicado: true } },
    { status: 400, body: { errors: ['player_id: deve ser um UUID'], explain: {} } },
    { status: 404 },
    { status: 200, body: { ok: true, tardio: true } },
  ])
  const errors: PomboError[] = []
  const p = await device(svc.fetch, {}, errors)
  t.equal(p.playerId, PLAYER)
  t.match(await p.handlePush(push(1)), { receipt: 'queued' }, '500')
  t.match(await p.flush(), { sent: 0, pending: 1, error: /^503/ }, '503')
  t.match(await p.flush(), { sent: 0, pending: 1, error: /^408/ }, '408')
  t.match(await p.flush(), { sent: 0, pending: 1, error: /rede/ }, 'offline')
  t.match(await p.flush(), { duplicate: 1, pending: 0 }, 'duplicado: counted before, not retried')
  t.same(
    svc.receipts().map((c) => c.body),
    Array.from({ length: 5 }, () => ({
      app_id: APP,
      notification_id: sid(1),
      player_id: PLAYER,
      rcpt: 'proof-1',
      evento: 'recebido',
    })),
    'the same body each time',
  )
  t.match(await p.handlePush(push(2)), { receipt: 'dropped' }, '400: refused for good')
  t.match(errors.at(-1), { kind: 'receipt', status: 400, message: '400: player_id: deve ser um UUID' })
  t.match(await p.handleTap(push(3)), { receipt: 'dropped' }, '404')
  t.match(await p.handlePush(push(4)), { receipt: 'sent' }, 'tardio is a success')
  t.same(await p.queued(), [])
  t.equal(svc.receipts().length, 8)
})

t.test('automatic retries wait longer after each failure (lower bounds only: the machine may be slow)', async (t) => {
  const svc = fakeService([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }])
  const p = await device(svc.fetch, { autoRetry: true, retry: { baseMs: 100, maxMs: 10_000 } })
  t.teardown(() => p.close())
  await p.handlePush(push(1))
  const until = Date.now() + 15_000
  while ((await p.queued()).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  const at = svc.receipts().map((c) => c.at)
  t.equal(at.length, 5, 'four failures, then counted')
  const gaps = at.slice(1).map((x, i) => x - (at[i] as number))
  for (const [i, g] of gaps.entries()) t.ok(g >= 50 * 2 ** i - 5, `wait ${i + 1} (${g} ms) ≥ half of ${100 * 2 ** i} ms`)
})

t.test('Retry-After as an HTTP date is honoured by flush', async (t) => {
  let now = Date.parse('2026-11-26T12:00:00Z')
  const svc = fakeService([{ status: 429, headers: { 'retry-after': 'Thu, 26 Nov 2026 12:02:00 GMT' } }])
  const p = await device(svc.fetch, { now: () => now })
  await p.handlePush(push(1))
  now += 119_000
  t.match(await p.flush(), { sent: 0, pending: 1 })
  t.equal(svc.receipts().length, 1)
  now += 1_000
  t.match(await p.flush(), { sent: 1, pending: 0 })
})

t.test('a push arriving while a round is in flight is queued, not lost, and sent right after', async (t) => {
  const svc = fakeService([{ status: 200, body: { ok: true }, delayMs: 200 }])
  const p = await device(svc.fetch)
  const first = p.handlePush(push(1))
  await until('the first receipt is in flight', () => svc.receipts().length === 1)
  const second = p.handlePush(push(2))
  t.match(await Promise.all([first, second]), [{ receipt: 'sent' }, { receipt: 'sent' }])
  t.same(
    svc
      .receipts()
      .map((c) => (c.body as { notification_id: string }).notification_id)
      .sort(),
    [sid(1), sid(2)],
  )
  t.same(await p.queued(), [])
})

t.test('receipts owed with no device yet wait for the registration', async (t) => {
  let registered = false
  const svc = fakeService()
  const fetch = (url: string, init: RequestInit) => {
    if (!registered && url.endsWith('/api/v1/players')) return Promise.reject(new TypeError('fetch failed'))
    return svc.fetch(url, init)
  }
  const p = await device(fetch)
  t.equal(p.playerId, null)
  t.match(await p.handlePush(push(1)), { receipt: 'queued' })
  t.equal(svc.receipts().length, 0, 'no player id to send with')
  registered = true
  t.match(await p.flush(), { sent: 1 })
  t.match(svc.receipts()[0]?.body, { player_id: PLAYER })
})

t.test('in-app events travel in batches of at most 50', async (t) => {
  const id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee'
  const svc = fakeService()
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (new URL(url).pathname === '/api/v1/inapp/pending') {
      return Response.json({
        pacote_id: 'x',
        messages: [
          {
            campanha_id: id,
            formato: 'modal',
            conteudo: { pt: { titulo: 'x' } },
            gatilho: { tipo: 'evento', chave: 'k', comparador: 'existe', atraso_ms: 0 },
            regras: { cap_total: 0, cooldown_h: 0, fechar_apos_ms: 0, prioridade: 100 },
            prova: 'prova-1',
          },
        ],
        validade_s: 86400,
        cap_global_h: 0,
        etag: '"e"',
      })
    }
    return svc.fetch(url, init)
  }
  const p = await device(fetch, { inappPollMs: 0 })
  t.teardown(() => p.close())
  let shown = 0
  p.inapp.onShow((d) => {
    shown++
    d.close()
  })
  await p.inapp.idle()
  for (let i = 1; i <= 60; i++) {
    p.inapp.trigger('k', i)
    const until = Date.now() + 5_000
    while (shown < i && Date.now() < until) await new Promise((r) => setTimeout(r, 2))
  }
  t.equal(shown, 60)
  t.match(await p.flush(), { sent: 120, pending: 0 })
  const batches = svc.calls
    .filter((c) => c.path === '/api/v1/inapp/eventos')
    .map((c) => (c.body as { eventos: unknown[] }).eventos.length)
  t.same(batches, [50, 50, 20])
  const first = svc.calls.find((c) => c.path === '/api/v1/inapp/eventos')?.body as {
    player_id: string
    eventos: Array<Record<string, unknown>>
  }
  t.equal(first.player_id, PLAYER)
  t.match(first.eventos[0], { campanha_id: id, prova: 'prova-1', evento: 'impressao', ocorrencia_n: 1 })
  t.match(first.eventos[1], { campanha_id: id, prova: 'prova-1', evento: 'fechou', ocorrencia_n: 1 })
})

t.test('one malformed event named by the service is dropped; the rest of its batch is sent again', async (t) => {
  const id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee'
  const batches: number[] = []
  let refuseOnce = true
  const svc = fakeService()
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const path = new URL(url).pathname
    if (path === '/api/v1/inapp/pending') {
      return Response.json({
        pacote_id: 'x',
        messages: [
          {
            campanha_id: id,
            formato: 'modal',
            conteudo: { pt: { titulo: 'x' } },
            gatilho: { tipo: 'ao_abrir', atraso_ms: 0 },
            regras: { cap_total: 1, cooldown_h: 24, fechar_apos_ms: 0, prioridade: 100 },
            prova: 'prova-1',
          },
        ],
        validade_s: 86400,
        cap_global_h: 6,
        etag: '"e"',
      })
    }
    if (path === '/api/v1/inapp/eventos') {
      const body = JSON.parse(String(init.body)) as { eventos: unknown[] }
      batches.push(body.eventos.length)
      if (refuseOnce) {
        refuseOnce = false
        return Response.json(
          { errors: ['Horário fora da janela aceita: eventos[1].em.'], explain: { campo: 'eventos[1].em' } },
          { status: 422 },
        )
      }
      return Response.json({ ok: true, resultados: body.eventos.map(() => 'aceito') })
    }
    return svc.fetch(url, init)
  }
  const errors: PomboError[] = []
  const p = await device(fetch, { inappPollMs: 0 }, errors)
  t.teardown(() => p.close())
  let d: import('@pombo/sdk').InappDisplay | undefined
  p.inapp.onShow((x) => {
    d = x
  })
  for (const end = Date.now() + 5_000; !d && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5))
  d?.click()
  d?.close()
  t.match(await p.flush(), { sent: 2, dropped: 1, pending: 0 })
  t.same(batches, [3, 2])
  t.match(errors.at(-1), { kind: 'inapp', status: 422, job: { evento: 'clique' } })
})

t.test('property: whatever the service answers, every receipt ends counted once or reported dropped, never lost', async (t) => {
  const answer = fc.constantFrom<Answer>(
    { status: 200, body: { ok: true } },
    { status: 200, body: { ok: true, duplicado: true } },
    { status: 503 },
    { status: 429, headers: { 'retry-after': '0' } },
    { status: 400, body: { errors: ['x'] } },
    'offline',
  )
  // fc.assert throws with the shrunk counterexample when the property fails.
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(answer, { maxLength: 20 }), async (pushes, script) => {
        const counted = new Map<string, number>()
        const refused = new Set<string>()
        const svc = fakeService()
        const fetch = async (url: string, init: RequestInit): Promise<Response> => {
          if (!url.endsWith('/api/v1/receipts')) return svc.fetch(url, init)
          const b = JSON.parse(String(init.body)) as { notification_id: string; evento: string }
          const key = `${b.notification_id}:${b.evento}`
          const a = script.shift() ?? { status: 200, body: { ok: true } }
          if (a === 'offline') throw new TypeError('fetch failed')
          if (a.status === 200) {
            const dup = counted.has(key) || (a.body as { duplicado?: boolean }).duplicado === true
            counted.set(key, (counted.get(key) ?? 0) + (counted.has(key) ? 0 : 1))
            return Response.json(dup ? { ok: true, duplicado: true } : { ok: true })
          }
          if (a.status === 400) refused.add(key)
          return new Response(JSON.stringify(a.body ?? {}), { status: a.status, headers: a.headers })
        }
        const errors: PomboError[] = []
        const p = await device(fetch, {}, errors)
        for (let i = 1; i <= pushes; i++) await p.handlePush(push(i))
        for (let k = 0; k < 30 && (await p.queued()).length > 0; k++) await p.flush()
        const dropped = new Set(errors.filter((e) => e.job).map((e) => e.job?.id as string))
        for (let i = 1; i <= pushes; i++) {
          const id = `${sid(i)}:recebido`
          // Counted (the fake counted it, once) or dropped (and then reported), never both missing.
          if (!(counted.get(id) === 1 || dropped.has(id))) return false
          if (dropped.has(id) && !refused.has(id)) return false // only a 4xx drops
        }
        return (await p.queued()).length === 0
      }),
      { numRuns: 60 },
    ),
    'the property held',
  )
})
