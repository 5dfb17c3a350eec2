// The dashboard's sending pages over HTTP (no browser): the composer goes through the same steps as
// POST /api/v1/notifications (the API's errors beside their fields, its dry-run count in the confirmation, its
// idempotency so a double submission sends once, its rendering for the preview's size), a test send shows what the
// provider said, a send's page shows its funnel, platforms, time to receipt and failures, and the sends list
// filters and pages. Another organisation's person gets 404 everywhere.
import t from 'tap'
import { BUSINESS_OFFSET } from '../../src/core/business-time'
import { listSends } from '../../src/dashboard/sends/list'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { sample } from '../helpers/metrics'
import { startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'
import { until } from '../helpers/until'

const SENHA = 'uma-senha-bem-longa'

async function world(t: Parameters<typeof startDelivery>[0], plan: 'free' | 'pro' = 'pro') {
  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] }, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const org = await makeOrg(w.s, 'Loja', plan)
  await makePerson(w.s, 'ana@example.com', SENHA, org)
  const app = await w.s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const full = { ...app, nome: 'Loja', kid: '', rate_por_min: 60000, criado_em: '' }
  await w.fcmFor(full)
  const c = new DashClient(w.s.dashboardUrl)
  if ((await c.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
  const base = `/apps/${app.id}`
  const composer = `${base}/envios/novo`
  /** Posts the composer's form with these fields (the form's token and a key taken from a fresh composer). */
  const compose = async (fields: Record<string, string>, key?: string) => {
    const p = await c.get(composer)
    const chave = key ?? (/name="chave" value="([^"]+)"/.exec(p.text)?.[1] as string)
    return c.post(composer, { _csrf: DashClient.token(p), chave, idioma_0: 'pt', ...fields })
  }
  const sendsCount = async () => (await w.s.sql('SELECT count(*)::int AS n FROM sends WHERE app_id = $1', [app.id]))[0]?.n
  return { ...w, app: full, org, c, base, composer, compose, sendsCount }
}

/** The text of the error shown beside a field (its `erro-<id>` element), or null. */
function besideField(html: string, id: string): string | null {
  const m = new RegExp(`<p class="erro-campo" id="erro-${id}">([^<]*)</p>`).exec(html)
  return m ? (m[1] as string) : null
}

/** A day and time in the business zone (UTC-03:00), `AAAA-MM-DD HH:MM`, `ms` from now (whole minutes). */
function businessTime(ms: number): string {
  const d = new Date(Date.now() + ms - 3 * 3_600_000)
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)}`
}

t.test('the composer: the API errors beside their fields, the confirmation with its count, one send per form', async (t) => {
  const w = await world(t)
  const devices = [await w.device(w.app, 'tok-a'), await w.device(w.app, 'tok-b')]

  // The contract's names are on the page, and the app page links to it.
  const page = await w.c.get(w.composer)
  t.equal(page.status, 200)
  t.match(page.text, /<h1>Nova notificação<\/h1>/)
  for (const label of ['Título', 'Mensagem', 'URL ao tocar', 'Agendar para'])
    t.match(page.text, new RegExp(`<label for="[^"]+">${label}</label>`), `label ${label}`)
  t.match(page.text, /<button type="submit" name="acao" value="teste"[^>]*>Enviar teste<\/button>/)
  t.match(page.text, /<button type="submit" name="acao" value="enviar"[^>]*>Enviar<\/button>/)
  t.match(page.text, /<section aria-labelledby="titulo-previa"[^>]*>\s*<h2 id="titulo-previa">Pré-visualização<\/h2>/)
  t.match((await w.c.get(w.base)).text, new RegExp(`<a [^>]*href="${w.composer}"[^>]*>Nova notificação</a>`))

  // A TTL the API refuses: its 400 text beside TTL, the field marked invalid, nothing written.
  const badTtl = await w.compose({ mensagem_0: 'Oi', segmento_0: '1', ttl: 'três dias', acao: 'enviar', confirmar: '1' })
  t.equal(badTtl.status, 422)
  t.match(besideField(badTtl.text, 'ttl'), /^Campo inválido: ttl: deve ser um número inteiro de segundos/)
  t.match(
    badTtl.text,
    /id="ttl" name="ttl" type="text" value="três dias" aria-invalid="true" aria-describedby="erro-ttl dica-ttl"/,
  )
  t.match(badTtl.text, /name="mensagem_0"[^>]*>Oi<\/textarea>/, 'what was typed stays')
  // The API says the same for the same body.
  const api = await w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: w.app.id, contents: { pt: 'Oi' }, included_segments: ['Subscribed Users'], ttl: 'três dias' },
    headers: basic(w.app.api_key),
  })
  t.equal(api.json.errors[0], besideField(badTtl.text, 'ttl'), 'the same error text as the API')
  // Two targets: the API's "one target" rule, beside the audience.
  const two = await w.compose({ mensagem_0: 'Oi', segmento_0: '1', player_ids: devices[0] as string, acao: 'enviar' })
  t.match(besideField(two.text, 'publico'), /apenas um alvo por envio/)
  // No message: beside Mensagem.
  t.match(besideField((await w.compose({ segmento_0: '1', acao: 'enviar' })).text, 'mensagem_0'), /contents: não pode ser vazio/)
  // Too far ahead: beside Agendar para.
  const far = await w.compose({ mensagem_0: 'Oi', segmento_0: '1', agendar: businessTime(40 * 86_400_000), acao: 'enviar' })
  t.match(besideField(far.text, 'agendar'), /28 dias/)
  t.match(
    besideField((await w.compose({ mensagem_0: 'Oi', segmento_0: '1', agendar: 'amanhã', acao: 'enviar' })).text, 'agendar'),
    /AAAA-MM-DD HH:MM/,
  )
  // What the API's door refuses (U+0000): beside its field too.
  t.match(
    besideField(
      (await w.compose({ mensagem_0: 'a\u0000b', segmento_0: '1', acao: 'enviar', confirmar: '1' })).text,
      'mensagem_0',
    ),
    /contents\.pt: contém o caractere U\+0000/,
  )
  t.equal(await w.sendsCount(), 0, 'nothing was written')

  // Without the script, Enviar asks first on a page of its own, with the audience's size from the API's dry run.
  const ask = await w.compose({ mensagem_0: 'Oi', player_ids: devices.join('\n'), acao: 'enviar' })
  t.equal(ask.status, 200)
  t.match(ask.text, /Esta notificação vai para <b id="tamanho-publico">2 dispositivos<\/b>/)
  t.match(
    ask.text,
    /name="confirmar" value="1"><button type="submit" name="acao" value="enviar" class="principal">Confirmar envio/,
  )
  t.equal(await w.sendsCount(), 0, 'asking sends nothing')
  // What the script asks for: the same count as JSON; a segment is counted for real, with all reachable devices.
  const p = await w.c.get(w.composer)
  const count = await w.c.post(`${w.base}/envios/contar`, {
    _csrf: DashClient.token(p),
    idioma_0: 'pt',
    mensagem_0: 'Oi',
    segmento_0: '1',
  })
  t.same(JSON.parse(count.text), { ok: true, recipients: 2, exact: false })
  const countBad = await w.c.post(`${w.base}/envios/contar`, { _csrf: DashClient.token(p), idioma_0: 'pt', mensagem_0: 'Oi' })
  t.match(JSON.parse(countBad.text), { ok: false, errors: { publico: /alvo/ } })

  // Confirmed: the send is made and the page goes to its page. The same form again (a double click) is the same send.
  const form = await w.c.get(w.composer)
  const key = /name="chave" value="([^"]+)"/.exec(form.text)?.[1] as string
  const fields = {
    _csrf: DashClient.token(form),
    chave: key,
    idioma_0: 'pt',
    titulo_0: 'Promoção',
    mensagem_0: 'Só hoje',
    idioma_1: 'en',
    titulo_1: 'Sale',
    mensagem_1: 'Today only',
    url: 'https://loja.example/promo',
    player_ids: devices.join(', '),
    prioridade: 'marketing',
    nome: 'Promo de teste',
    acao: 'enviar',
    confirmar: '1',
  }
  const acceptedBefore =
    sample(await (await fetch(`${w.s.opsUrl}/metrics`)).text(), 'pombo_sends_accepted_total', { lane: '1' }) ?? 0
  const [first, second] = await Promise.all([w.c.post(w.composer, fields), w.c.post(w.composer, fields)])
  t.equal(first.status, 303)
  t.equal(second.status, 303)
  const sendId = first.headers.get('location')?.split('/').at(-1) as string
  t.equal(second.headers.get('location'), first.headers.get('location'), 'both clicks land on the one send')
  t.equal(await w.sendsCount(), 1, 'one send for a double submission')
  const acceptedAfter = sample(await (await fetch(`${w.s.opsUrl}/metrics`)).text(), 'pombo_sends_accepted_total', { lane: '1' })
  t.equal(acceptedAfter, acceptedBefore + 1, 'counted once in pombo_sends_accepted_total, like an API send')
  const [row] = await w.s.sql('SELECT * FROM sends WHERE id = $1', [sendId])
  t.same(row?.contents, { pt: 'Só hoje', en: 'Today only' })
  t.same(row?.headings, { pt: 'Promoção', en: 'Sale' })
  t.equal(row?.lane, 1)
  t.equal(row?.name, 'Promo de teste')
  // The stored message is the one the API stores for the same body: one rendering.
  const viaApi = await w.send(w.app, {
    contents: { pt: 'Só hoje', en: 'Today only' },
    headings: { pt: 'Promoção', en: 'Sale' },
    url: 'https://loja.example/promo',
    include_player_ids: devices,
    priority: 'marketing',
  })
  const [apiRow] = await w.s.sql('SELECT message FROM sends WHERE id = $1', [viaApi])
  t.same(row?.message, apiRow?.message, 'the same message as the API stores')
  const sendPage = await w.c.get(`/apps/${w.app.id}/envios/${sendId}`)
  t.match(sendPage.text, /Envio criado para 2 dispositivos/)
  await w.closed(sendId)
})

t.test('the preview: the API size, the language the server chooses, over the limit', async (t) => {
  const w = await world(t)
  const p = await w.c.get(w.composer)
  const preview = async (fields: Record<string, string>) =>
    JSON.parse((await w.c.post(`${w.base}/envios/previa`, { _csrf: DashClient.token(p), ...fields })).text).html as string
  const two = await preview({ idioma_0: 'pt', mensagem_0: 'Olá', titulo_0: 'Oi', idioma_1: 'en', mensagem_1: 'Hello' })
  t.match(two, /Idioma que o servidor escolhe: <b id="idioma-escolhido">en<\/b>/)
  t.match(two, /<p class="n-corpo">Hello<\/p>/)
  const es = await preview({ idioma_0: 'pt', mensagem_0: 'Olá', idioma_1: 'es', mensagem_1: 'Hola' })
  t.match(es, /<b id="idioma-escolhido">es<\/b> \(iOS pelo APNs direto: <b>pt<\/b>\)/, 'iOS direct prefers pt')
  // Over the limit: the preview's number is the one the API reports for the same message.
  const long = 'x'.repeat(4000)
  const over = await preview({ idioma_0: 'pt', mensagem_0: long })
  const api = await w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: w.app.id, contents: { pt: long }, included_segments: ['Subscribed Users'] },
    headers: basic(w.app.api_key),
  })
  t.equal(api.status, 422)
  const bytes = api.json.explain.bytes as number
  t.match(over, new RegExp(`<span id="tamanho-texto">${bytes.toLocaleString('pt-BR')} de 3\\.891 bytes</span>`))
  t.match(over, /Acima do limite de 3\.891 bytes/)
  const sent = await w.compose({ mensagem_0: long, segmento_0: '1', acao: 'enviar', confirmar: '1' })
  t.match(besideField(sent.text, 'mensagem_0'), new RegExp(`^Payload final de ${bytes} bytes`))
})

t.test('a test send shows what the provider said; a scheduled send waits; the send page moves', async (t) => {
  const w = await world(t)
  w.fcm.script('tok-morto', 'unregistered')
  const dead = await w.device(w.app, 'tok-morto', { external_user_id: 'cliente-morto' })
  const good = await w.device(w.app, 'tok-bom', { external_user_id: 'cliente-bom' })

  // The search finds a device by the start of its id or its external user id.
  const found = JSON.parse((await w.c.get(`${w.base}/envios/dispositivos.json?q=${good.slice(0, 6)}`)).text)
  t.ok(found.devices.some((x: { id: string }) => x.id === good))
  t.match(JSON.parse((await w.c.get(`${w.base}/envios/dispositivos.json?q=cliente-morto`)).text), { devices: [{ id: dead }] })

  const test = await w.compose({ mensagem_0: 'Teste', teste_dispositivo: 'cliente-morto', acao: 'teste' })
  t.equal(test.status, 200)
  t.match(test.text, /Teste enviado para/)
  const url = /data-estado="([^"]+)"/.exec(test.text)?.[1]?.replace(/&amp;/g, '&') as string
  const result = await until('the provider answered', async () => {
    const r = JSON.parse((await w.c.get(url)).text)
    return r.state === 'pending' ? null : r
  })
  t.equal(result.state, 'failed')
  t.match(result.text, /token morto.*o provedor disse: UNREGISTERED/)
  const [del] = await w.s.sql('SELECT reason FROM deliveries WHERE device_id = $1', [dead])
  t.equal(del?.reason, 'dead_token:UNREGISTERED', 'the delivery keeps the provider reason')
  const ok = await w.compose({ mensagem_0: 'Teste', teste_dispositivo: good, acao: 'teste' })
  const okUrl = /data-estado="([^"]+)"/.exec(ok.text)?.[1]?.replace(/&amp;/g, '&') as string
  const okResult = await until('accepted', async () => {
    const r = JSON.parse((await w.c.get(okUrl)).text)
    return r.state === 'pending' ? null : r
  })
  t.match(okResult, { state: 'accepted', text: /FCM aceitou/ })
  t.match(besideField((await w.compose({ mensagem_0: 'x', acao: 'teste' })).text, 'teste_dispositivo'), /Escolha o dispositivo/)

  // A scheduled send: stored with the business-zone time, shown as scheduled, nothing delivered yet.
  const at = businessTime(2 * 86_400_000)
  const scheduled = await w.compose({ mensagem_0: 'Amanhã', segmento_0: '1', agendar: at, acao: 'enviar', confirmar: '1' })
  t.equal(scheduled.status, 303)
  const schedId = scheduled.headers.get('location')?.split('/').at(-1) as string
  const [srow] = await w.s.sql('SELECT send_after FROM sends WHERE id = $1', [schedId])
  t.equal((srow?.send_after as Date | undefined)?.getTime(), Date.parse(`${at.replace(' ', 'T')}:00${BUSINESS_OFFSET}`))
  t.match((await w.c.get(`${w.base}/envios/${schedId}`)).text, /data-contador="estado">agendado</)

  // A send to a good device and a dead one (the first dead token left every audience); one receipt: the page says so.
  w.fcm.script('tok-morto-2', 'unregistered')
  const dead2 = await w.device(w.app, 'tok-morto-2')
  const sendId = await w.send(w.app, { include_player_ids: [dead2, good, dead], contents: { pt: 'Oi' } })
  await w.closed(sendId)
  const m = w.fcm.delivered.find((x) => x.target === 'tok-bom' && x.body.message.data.pm_msg_id === sendId)
  const r = await w.s.call('POST', '/api/v1/receipts', {
    body: { app_id: w.app.id, notification_id: sendId, player_id: good, rcpt: m?.body.message.data.pm_rcpt },
  })
  t.equal(r.status, 200)
  const sp = await w.c.get(`${w.base}/envios/${sendId}`)
  for (const h of ['Funil', 'Plataformas', 'Tempo até o recibo', 'Falhas'])
    t.match(sp.text, new RegExp(`<h2 id="[^"]+">${h}</h2>`), `heading ${h}`)
  t.match(sp.text, /data-contador="successful">1</)
  t.match(sp.text, /data-contador="recebidos">1</)
  t.match(sp.text, /<td>token morto[^<]*<\/td><td>1<\/td><td>UNREGISTERED<\/td>/)
  const live = JSON.parse((await w.c.get(`${w.base}/envios/${sendId}/dados.json`)).text)
  t.equal(live.open, false)
  t.equal(live.charts.proven.at(-1), 1, 'the funnel chart ends at the receipts')
  t.equal(live.charts.accepted.at(-1), 1)
  t.match(live.parts.latency, /<dt>p50<\/dt>/)
  t.match(live.parts.platforms, /<th scope="row">Android<\/th><td>2<\/td><td>1 \(50%\)<\/td><td>1<\/td>/)
})

t.test('the sends list: filters, keyset pages, links; the free plan withholds proof with its reason', async (t) => {
  const w = await world(t, 'free')
  const dev = await w.device(w.app, 'tok-l')
  const ids: string[] = []
  for (let i = 0; i < 30; i++)
    ids.push(await w.send(w.app, { include_player_ids: [dev], contents: { pt: `Mensagem ${i}` }, name: `lote ${i}` }))
  const first = await w.c.get(`${w.base}/envios`)
  t.equal(first.status, 200)
  const rows = (html: string) => [...html.matchAll(/<a href="\/apps\/[^/]+\/envios\/([0-9a-f-]{36})">/g)].map((x) => x[1])
  t.same(rows(first.text), ids.slice().reverse().slice(0, 25), 'newest first, 25 a page')
  const more = /<a href="([^"]+)">Mais antigos<\/a>/.exec(first.text)?.[1]?.replace(/&amp;/g, '&') as string
  t.same(rows((await w.c.get(more)).text), ids.slice(0, 5).reverse(), 'the next page by keyset')
  t.same(rows((await w.c.get(`${w.base}/envios?q=Mensagem%2017`)).text), [ids[17]], 'text filter')
  t.same(rows((await w.c.get(`${w.base}/envios?q=${ids[3]}`)).text), [ids[3]], 'by id')
  t.same(rows((await w.c.get(`${w.base}/envios?q=100%25`)).text), [], 'a % is a character, not a wildcard')
  const today = new Date(Date.now() - 3 * 3_600_000).toISOString().slice(0, 10)
  t.equal(rows((await w.c.get(`${w.base}/envios?desde=${today}&ate=${today}`)).text).length, 25)
  t.same(rows((await w.c.get(`${w.base}/envios?desde=2001-01-01&ate=2001-01-02`)).text), [])
  t.same(rows((await w.c.get(`${w.base}/envios?estado=agendado`)).text), [])
  // A text search reads a bounded number of sends a page, and says where to go on from.
  const none = { from: null, to: null, state: null, text: 'lote 2' }
  const db = w.s.svc.deps.db
  const first10 = await listSends(db, w.app.id, none, null, Date.now(), 26, 10)
  t.same(
    first10.rows.map((x) => x.id),
    [ids[29], ids[28], ids[27], ids[26], ids[25], ids[24], ids[23], ids[22], ids[21], ids[20]],
  )
  t.equal(first10.scannedTo?.id, ids[20], 'stopped at the 10th send read')
  const on = await listSends(db, w.app.id, none, first10.scannedTo, Date.now(), 26, 10)
  t.same(on.rows, [], 'nothing among the next ten')
  t.equal(on.scannedTo?.id, ids[10], 'and where to go on from')
  const end = await listSends(db, w.app.id, none, on.scannedTo, Date.now(), 26, 10)
  t.same(
    end.rows.map((x) => x.id),
    [ids[2]],
    'found further on',
  )
  t.equal(end.scannedTo, null, 'the end of the list: nothing further to search')

  // Free plan: no proof of arrival on the send's page, with the reason.
  const sp = await w.c.get(`${w.base}/envios/${ids[0]}`)
  t.match(sp.text, /data-contador="recebidos">—</)
  t.match(sp.text, /A prova de chegada por dispositivo \(recebidos\) é um recurso do plano pro/)
  t.notMatch(sp.text, /grafico-tempo/)
  t.equal(JSON.parse((await w.c.get(`${w.base}/envios/${ids[0]}/dados.json`)).text).charts.proven, null)
})

t.test("another organisation's person: 404 on every new page and action", async (t) => {
  const w = await world(t)
  const dev = await w.device(w.app, 'tok-x')
  const sendId = await w.send(w.app, { include_player_ids: [dev] })
  const other = await makeOrg(w.s, 'Outra')
  await makePerson(w.s, 'bia@example.com', SENHA, other)
  const bia = new DashClient(w.s.dashboardUrl)
  await bia.signIn('bia@example.com', SENHA)
  const token = DashClient.token(await bia.get('/apps'))
  for (const path of [
    w.composer,
    `${w.base}/envios`,
    `${w.base}/envios/${sendId}`,
    `${w.base}/envios/${sendId}/dados.json`,
    `${w.base}/envios/${sendId}/teste.json?dispositivo=${dev}`,
    `${w.base}/envios/dispositivos.json?q=tok-x`,
  ])
    t.equal((await bia.get(path)).status, 404, path)
  for (const path of [w.composer, `${w.base}/envios/previa`, `${w.base}/envios/contar`]) {
    const r = await bia.post(path, {
      _csrf: token,
      idioma_0: 'pt',
      mensagem_0: 'x',
      segmento_0: '1',
      acao: 'enviar',
      confirmar: '1',
    })
    t.equal(r.status, 404, path)
  }
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM sends')).at(0)?.n, 1, 'nothing sent')
  // A send of another app of the same person's organisation is not reachable through this app either.
  const own = await w.s.svc.deps.apps.create({ name: 'Segundo', orgId: w.org })
  t.equal((await w.c.get(`/apps/${own.id}/envios/${sendId}`)).status, 404)
  // Signed out: to /entrar.
  const anon = new DashClient(w.s.dashboardUrl)
  t.equal((await anon.get(w.composer)).headers.get('location'), '/entrar')
})
