// The SDK's in-app feed against a real service: the package fetched with its ETag, triggers evaluated on the device
// (ao_abrir, evento with the text-vs-number rule, sessao_duracao, inatividade), atraso_ms, caps and priority, and
// impressao / clique / fechou reported with the package's proofs, read back from the campaign's funnel.
import { MemoryStorage, Pombo, type InappDisplay, type PomboOptions } from '@pombo/sdk'
import t from 'tap'
import { type InappWorld, inappWorld } from '../helpers/inapp'
import { Network } from '../helpers/sdk'

type Tap = Parameters<typeof inappWorld>[0]

async function sdk(t: Tap, w: InappWorld, o: Partial<PomboOptions> = {}): Promise<Pombo> {
  const p = await Pombo.init({
    baseUrl: w.s.url,
    appId: w.app.id,
    appVersion: '2.0.0',
    deviceType: 5,
    language: 'pt',
    getToken: () => `web-${Math.random().toString(36).slice(2)}`,
    storage: new MemoryStorage(),
    autoRetry: false,
    inappPollMs: 0,
    ...o,
  })
  t.teardown(() => p.close())
  return p
}

/** Collects what the feed asks the app to draw. */
function screen(p: Pombo): InappDisplay[] {
  const shown: InappDisplay[] = []
  p.inapp.onShow((d) => shown.push(d))
  return shown
}

async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  return cond()
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function funnel(w: InappWorld, id: string) {
  await w.s.svc.deps.inapp.served.stop() // flushes `servidos`
  const f = await w.get(`/${id}/funil`)
  return { impressoes: f.json.impressoes, cliques: f.json.cliques, fechados: f.json.fechados }
}

t.test(
  'ao_abrir: shown once with the device language, events reported in one batch with the proof, cap_total holds',
  async (t) => {
    const w = await inappWorld(t)
    const id = await w.campaign({
      conteudo: { pt: { titulo: 'Olá', corpo: 'Oi' }, en: { titulo: 'Hello', corpo: 'Hi' } },
      gatilho: { tipo: 'ao_abrir', atraso_ms: 0 },
    })
    const net = new Network()
    const storage = new MemoryStorage()
    const p = await sdk(t, w, { storage, fetch: net.fetch, language: 'en' })
    const shown = screen(p)
    t.ok(await until(() => shown.length === 1), 'shown')
    const d = shown[0] as InappDisplay
    t.match(d, {
      campanhaId: id,
      formato: 'modal',
      idioma: 'en',
      conteudo: { titulo: 'Hello' },
      ocorrencia: 1,
      regras: { cap_total: 1 },
    })
    t.same(Object.keys(d.conteudoCompleto).sort(), ['en', 'pt'])
    d.click()
    d.click()
    d.close()
    const before = net.seen.filter((x) => x === '/api/v1/inapp/eventos').length
    t.match(await p.flush(), { sent: 3, pending: 0 })
    t.equal(net.seen.filter((x) => x === '/api/v1/inapp/eventos').length - before, 1, 'one request for the three events')
    t.same(await funnel(w, id), { impressoes: 1, cliques: 1, fechados: 1 })

    // The next launch: the campaign is still served, but cap_total 1 was reached on this device.
    p.close()
    const again = await sdk(t, w, { storage, fetch: net.fetch, language: 'en', getToken: () => p.token })
    const shown2 = screen(again)
    await again.inapp.idle()
    await pause(300)
    t.equal(shown2.length, 0, 'cap_total 1: not shown again')
    t.equal(again.inapp.messages.length, 1, 'although the device holds it')
    const polls = net.answers.filter((a) => a.path === '/api/v1/inapp/pending')
    t.match(polls.at(-1), { status: 304 }, 'the package came back as a 304')
    t.ok(polls.at(-1)?.ifNoneMatch, 'with the ETag as If-None-Match')
  },
)

t.test('evento: every comparator, text never equals a number, maior/menor only for numbers', async (t) => {
  const w = await inappWorld(t)
  const cfg = await w.config({ inapp_cap_horas: 0 })
  t.equal(cfg.status, 200)
  const rules = { cap_total: 0, cooldown_h: 0 }
  const mk = (gatilho: Record<string, unknown>) =>
    w.campaign({ gatilho: { tipo: 'evento', atraso_ms: 0, ...gatilho }, regras: rules })
  const ids = {
    igualNum: await mk({ chave: 'nivel', comparador: 'igual', valor: 10 }),
    igualTxt: await mk({ chave: 'nivel', comparador: 'igual', valor: '10' }),
    maior: await mk({ chave: 'nivel', comparador: 'maior', valor: 5 }),
    menor: await mk({ chave: 'nivel', comparador: 'menor', valor: 5 }),
    diferente: await mk({ chave: 'plano', comparador: 'diferente', valor: 'ouro' }),
    existe: await mk({ chave: 'carrinho', comparador: 'existe' }),
    naoExiste: await mk({ chave: 'cupom', comparador: 'nao_existe' }),
  }
  const name = new Map(Object.entries(ids).map(([k, v]) => [v, k]))
  const p = await sdk(t, w)
  const shown = screen(p)
  const step = async (key: string, value: string | number | null, expect: string[]) => {
    shown.length = 0
    p.inapp.trigger(key, value)
    await p.inapp.idle()
    await pause(150)
    await p.inapp.idle()
    t.same(shown.map((d) => name.get(d.campanhaId)).sort(), [...expect].sort(), `${key} = ${JSON.stringify(value)}`)
  }
  t.ok(await until(() => shown.length === 1), 'nao_existe matches at the start: cupom was never signalled')
  t.equal(name.get((shown[0] as InappDisplay).campanhaId), 'naoExiste')
  await step('nivel', '10', ['igualTxt'])
  await step('nivel', 3, ['menor'])
  await step('nivel', '3', [])
  await step('plano', 'ouro', [])
  await step('plano', 'prata', ['diferente'])
  await step('carrinho', 'x', ['existe'])
  await step('cupom', 'ABC', [])
  await step('cupom', null, ['naoExiste'])
  await step('nivel', 7, ['maior'])
  // 10 matches `igual 10` and `maior 5`: one display per moment; same priority, so the first in the package.
  await step('nivel', 10, ['igualNum'])
  await step('nivel', 'dez', [])
  await p.flush()
  t.same(await funnel(w, ids.maior), { impressoes: 1, cliques: 0, fechados: 0 }, 'every display proved to the service')
})

t.test(
  'priority and the global gap: of two campaigns due together the higher wins, the other waits inapp_cap_horas',
  async (t) => {
    const w = await inappWorld(t)
    const low = await w.campaign({ gatilho: { atraso_ms: 0 }, regras: { prioridade: 10 } })
    const high = await w.campaign({ gatilho: { atraso_ms: 0 }, regras: { prioridade: 200 } })
    // The device's clock runs 8 hours behind so the jumps below stay in the past (events dated ahead are refused).
    let now = Date.now() - 8 * 3_600_000
    const storage = new MemoryStorage()
    const p = await sdk(t, w, { storage, now: () => now })
    const shown = screen(p)
    t.ok(await until(() => shown.length === 1))
    await pause(200)
    t.same(
      shown.map((d) => d.campanhaId),
      [high],
      'prioridade 200 wins',
    )
    await p.flush()
    p.close()
    // Next launch an hour later: the app's 6-hour gap (default inapp_cap_horas) still holds.
    now += 3_600_000
    const again = await sdk(t, w, { storage, now: () => now, getToken: () => p.token })
    const shown2 = screen(again)
    await again.inapp.idle()
    await pause(300)
    t.same(shown2, [], 'within inapp_cap_horas')
    again.close()
    now += 6 * 3_600_000
    const later = await sdk(t, w, { storage, now: () => now, getToken: () => p.token })
    const shown3 = screen(later)
    t.ok(await until(() => shown3.length === 1))
    t.same(
      shown3.map((d) => d.campanhaId),
      [low],
      'after the gap, the other campaign',
    )
    await later.flush()
    t.same(await funnel(w, low), { impressoes: 1, cliques: 0, fechados: 0 })
    t.same(await funnel(w, high), { impressoes: 1, cliques: 0, fechados: 0 })
  },
)

t.test('cooldown_h between displays of one campaign, occurrences numbered; atraso_ms delays the display', async (t) => {
  const w = await inappWorld(t)
  await w.config({ inapp_cap_horas: 0 })
  const id = await w.campaign({
    gatilho: { tipo: 'evento', chave: 'compra', comparador: 'existe', atraso_ms: 400 },
    regras: { cap_total: 0, cooldown_h: 2 },
  })
  let now = Date.now() - 3 * 3_600_000
  const p = await sdk(t, w, { now: () => now })
  const shown = screen(p)
  await p.inapp.idle()
  const t0 = Date.now()
  p.inapp.trigger('compra', 1)
  t.ok(await until(() => shown.length === 1))
  t.ok(Date.now() - t0 >= 350, 'not before atraso_ms')
  p.inapp.trigger('compra', 2)
  await pause(700)
  t.equal(shown.length, 1, 'within cooldown_h: not again')
  now += 2 * 3_600_000 + 1
  p.inapp.trigger('compra', 3)
  t.ok(await until(() => shown.length === 2))
  t.same(
    shown.map((d) => d.ocorrencia),
    [1, 2],
  )
  await p.flush()
  t.same(await funnel(w, id), { impressoes: 2, cliques: 0, fechados: 0 })
})

t.test('sessao_duracao after N seconds of session; inatividade after N hours away; fechar_apos_ms closes', async (t) => {
  const w = await inappWorld(t)
  await w.config({ inapp_cap_horas: 0 })
  const sess = await w.campaign({
    gatilho: { tipo: 'sessao_duracao', segundos: 1, atraso_ms: 0 },
    regras: { fechar_apos_ms: 300 },
  })
  const inat = await w.campaign({ gatilho: { tipo: 'inatividade', horas: 48, atraso_ms: 0 } })
  let now = Date.now() - 72 * 3_600_000
  const storage = new MemoryStorage()
  const first = await sdk(t, w, { storage, now: () => now })
  const shown = screen(first)
  await first.inapp.idle()
  await pause(300)
  t.same(shown, [], 'first session: no inactivity known, one second not yet passed')
  first.close()
  now = Date.now()
  const second = await sdk(t, w, { storage, now: () => Date.now(), getToken: () => first.token })
  const shown2 = screen(second)
  t.ok(await until(() => shown2.length === 1))
  t.equal(shown2[0]?.campanhaId, inat, '72 h since the last session ≥ 48 h')
  let closedByTimer = false
  t.ok(await until(() => shown2.length === 2), 'and after a second in session')
  const d = shown2[1] as InappDisplay
  t.equal(d.campanhaId, sess)
  d.onClose = () => {
    closedByTimer = true
  }
  t.ok(await until(() => closedByTimer), 'fechar_apos_ms: the SDK closed it')
  await second.flush()
  t.same(await funnel(w, sess), { impressoes: 1, cliques: 0, fechados: 1 })
  t.same(await funnel(w, inat), { impressoes: 1, cliques: 0, fechados: 0 })
})

t.test("a device clock 10 minutes ahead: events are dated on the service's clock and accepted", async (t) => {
  const w = await inappWorld(t)
  const id = await w.campaign({ gatilho: { atraso_ms: 0 } })
  const p = await sdk(t, w, { now: () => Date.now() + 10 * 60_000 })
  const shown = screen(p)
  t.ok(await until(() => shown.length === 1))
  t.match(await p.flush(), { sent: 1, dropped: 0 })
  t.same(await funnel(w, id), { impressoes: 1, cliques: 0, fechados: 0 })
})

t.test('a token change: the package is fetched again for the new device, whose events count', async (t) => {
  const w = await inappWorld(t)
  await w.config({ inapp_cap_horas: 0 })
  const id = await w.campaign({
    gatilho: { tipo: 'evento', chave: 'tela', comparador: 'igual', valor: 'loja', atraso_ms: 0 },
    regras: { cap_total: 0, cooldown_h: 0 },
  })
  let token = 'web-antes'
  const p = await sdk(t, w, { getToken: () => `${token}-${w.app.id}` })
  const shown = screen(p)
  await p.inapp.idle()
  const before = p.inapp.messages[0]?.prova
  token = 'web-depois'
  const oldId = p.playerId
  await p.refreshToken()
  t.not(p.playerId, oldId)
  await p.inapp.idle()
  t.not(p.inapp.messages[0]?.prova, before, "the new device's proof")
  p.inapp.trigger('tela', 'loja')
  t.ok(await until(() => shown.length === 1))
  shown[0]?.click()
  t.match(await p.flush(), { sent: 2, dropped: 0 })
  t.same(await funnel(w, id), { impressoes: 1, cliques: 1, fechados: 0 })
})
