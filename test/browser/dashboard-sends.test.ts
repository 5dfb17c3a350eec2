// The sending pages and the in-app editor in a real browser (Debian's Chromium driven by playwright-core): an error
// beside its field, a live preview, a test send that shows what the provider said, a double click that sends once
// (the confirmation showing the audience's size), the send reaching the fake provider and then proved by receipts
// while its page is open, a scheduled send written with the keyboard only, the sends list's filters, an in-app
// campaign written, previewed, published and then served to a device's poll, every new page readable on a phone-sized
// window, and 404 for a person of another organisation. Screenshots go where dashboard.test.ts writes them.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { ROOT } from '../../src/core/root'
import { launchChromium } from '../helpers/browser'
import { makeOrg, makePerson } from '../helpers/dashboard'
import { startDelivery } from '../helpers/delivery'
import { until } from '../helpers/until'

const SENHA = 'uma-senha-bem-longa'

t.setTimeout(300_000)

/** `AAAA-MM-DD HH:MM` in the business zone (UTC-03:00), `ms` from now. */
function businessTime(ms: number): string {
  const d = new Date(Date.now() + ms - 3 * 3_600_000).toISOString()
  return `${d.slice(0, 10)} ${d.slice(11, 16)}`
}

t.test('sending and in-app pages in Chromium', async (t) => {
  const shots = process.env.PM_SCREENSHOT_DIR || join(ROOT, '.scratch', 'screenshots')
  mkdirSync(shots, { recursive: true })
  t.comment(`screenshots: ${shots}`)
  const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] }, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const orgA = await makeOrg(w.s, 'Loja Azul', 'pro')
  const orgB = await makeOrg(w.s, 'Outra Empresa')
  await makePerson(w.s, 'ana@example.com', SENHA, orgA)
  await makePerson(w.s, 'bia@example.com', SENHA, orgB)
  const created = await w.s.svc.deps.apps.create({ name: 'Loja Azul Android', orgId: orgA })
  const app = { ...created, nome: 'Loja Azul Android', kid: '', rate_por_min: 60000, criado_em: '' }
  await w.fcmFor(app)
  // Deliveries take a moment, so the open send page visibly moves.
  w.fcm.script(/^br-/, 'slow:1500')
  const players: string[] = []
  for (let i = 0; i < 3; i++)
    players.push(await w.device(app, `br-${i}-${'x'.repeat(30)}`, { external_user_id: `cliente-${i}`, sdk_versao: '0.6.0' }))
  const base = w.s.dashboardUrl
  const appPath = `/apps/${app.id}`
  const sendsOf = async () => (await w.s.sql('SELECT count(*)::int AS n FROM sends WHERE app_id = $1', [app.id]))[0]?.n as number

  const { ctx, close } = await launchChromium()
  t.teardown(close)
  const page = ctx.pages()[0] ?? (await ctx.newPage())
  page.setDefaultTimeout(20_000)
  const dialogs: string[] = []
  page.on('dialog', (d) => {
    dialogs.push(d.message())
    d.accept().catch(() => {})
  })
  await page.goto(`${base}/entrar`)
  await page.getByRole('textbox', { name: 'E-mail' }).fill('ana@example.com')
  await page.getByRole('textbox', { name: 'Senha' }).fill(SENHA)
  await page.getByRole('button', { name: 'Entrar' }).click()
  await page.waitForURL(`${base}/apps`)

  // The app page links to the composer.
  await page.goto(`${base}${appPath}`)
  await page.getByRole('link', { name: 'Nova notificação' }).click()
  await page.getByRole('heading', { name: 'Nova notificação' }).waitFor()
  const preview = page.getByRole('region', { name: 'Pré-visualização' })

  // The live preview follows the typing: the texts as the devices show them, and the payload's size.
  await page.getByRole('textbox', { name: 'Título', exact: true }).fill('Promoção')
  await page.getByRole('textbox', { name: 'Mensagem', exact: true }).fill('Só hoje: frete grátis')
  await preview.getByText('Promoção').first().waitFor()
  await preview.getByText(/de 3\.891 bytes/).waitFor()
  // The preview is redrawn from the server's answer to each keystroke's request: the last one may land a moment later.
  await preview.getByText('Só hoje: frete grátis').nth(2).waitFor()
  t.equal(await preview.getByText('Só hoje: frete grátis').count(), 3, 'Android, iOS and web show it')

  // An error beside its field: a TTL the API refuses. The script's count fails, so the server's page shows it.
  await page.getByRole('checkbox', { name: 'Subscribed Users' }).check()
  await page.getByRole('textbox', { name: 'TTL (segundos)' }).fill('três dias')
  await page.getByRole('button', { name: 'Enviar', exact: true }).click()
  const ttl = page.getByRole('textbox', { name: 'TTL (segundos)' })
  await page
    .locator('.erro-campo')
    .getByText(/Campo inválido: ttl/)
    .waitFor()
  t.equal(await ttl.getAttribute('aria-invalid'), 'true')
  const describedBy = (await ttl.getAttribute('aria-describedby'))?.split(' ') ?? []
  t.match(
    await page.locator(`#${describedBy[0]}`).textContent(),
    /Campo inválido: ttl: deve ser um número inteiro/,
    'the error describes the field',
  )
  t.equal(await sendsOf(), 0, 'nothing sent')
  await shot(page, '10-compositor-erro')

  // A test send to one device picked by search: the provider's answer comes back on the page.
  await page.getByRole('textbox', { name: 'TTL (segundos)' }).fill('')
  const search = page.getByRole('combobox', { name: 'Dispositivo de teste' })
  await search.fill('cliente-0')
  await page.getByRole('button', { name: 'Enviar teste' }).click()
  await page.getByText(/Teste enviado para/).waitFor()
  await page.getByText(/FCM aceitou a mensagem/).waitFor({ timeout: 30_000 })
  t.equal(await page.getByText(/Teste enviado para/).count(), 1, "the device it went to stays beside the provider's answer")
  t.ok(
    w.fcm.delivered.some((x) => x.target === `br-0-${'x'.repeat(30)}`),
    'the test reached the fake provider',
  )
  await shot(page, '11-compositor-teste')
  const afterTest = await sendsOf()

  // A double click on Enviar: one confirmation with the audience's size, one send.
  dialogs.length = 0
  await page.getByRole('button', { name: 'Enviar', exact: true }).dblclick()
  await page.waitForURL(/\/envios\/[0-9a-f-]{36}$/)
  t.same(dialogs, ['Enviar esta notificação para cerca de 3 dispositivos?'], 'one dialog, with the dry run count')
  t.equal(await sendsOf(), afterTest + 1, 'one send for a double click')
  const sendId = page.url().split('/').at(-1) as string
  for (const h of ['Funil', 'Plataformas', 'Tempo até o recibo', 'Falhas'])
    t.ok(await page.getByRole('heading', { name: h, exact: true }).isVisible(), `heading ${h}`)

  // The open page moves as the provider accepts, then as devices prove arrival.
  const counter = (k: string) => page.locator(`[data-contador="${k}"]`).first()
  const before = await counter('successful').textContent()
  await until('successful reaches 3 on the open page', async () => (await counter('successful').textContent()) === '3', 30_000)
  t.not(before, '3', `successful moved from ${before} to 3 on the open page`)
  for (const [i, p] of players.slice(0, 2).entries()) {
    const m = await until('delivered', () =>
      w.fcm.delivered.find((x) => x.target === `br-${i}-${'x'.repeat(30)}` && x.body.message.data.pm_msg_id === sendId),
    )
    const r = await w.s.call('POST', '/api/v1/receipts', {
      body: { app_id: app.id, notification_id: sendId, player_id: p, rcpt: m.body.message.data.pm_rcpt },
    })
    t.equal(r.status, 200, r.text)
  }
  await until('recebidos reaches 2 on the open page', async () => (await counter('recebidos').textContent()) === '2', 30_000)
  t.ok(await page.getByText(/p50/).isVisible(), 'time to receipt shown')
  await shot(page, '12-envio')

  // A scheduled send written with the keyboard only.
  await page.goto(`${base}${appPath}/envios/novo`)
  await page.getByRole('textbox', { name: 'Mensagem', exact: true }).focus()
  await page.keyboard.type('Amanhã tem mais')
  await page.getByRole('checkbox', { name: 'Active Users' }).focus()
  await page.keyboard.press('Space')
  await page.getByRole('textbox', { name: 'Agendar para' }).focus()
  const at = businessTime(86_400_000)
  await page.keyboard.type(at)
  dialogs.length = 0
  await page.getByRole('button', { name: 'Enviar', exact: true }).focus()
  await page.keyboard.press('Enter')
  await page.waitForURL(/\/envios\/[0-9a-f-]{36}$/)
  t.match(dialogs[0], /cerca de 3 dispositivos/)
  const scheduledId = page.url().split('/').at(-1) as string
  await page.getByText('agendado', { exact: true }).first().waitFor()
  const [row] = await w.s.sql('SELECT send_after FROM sends WHERE id = $1', [scheduledId])
  t.ok((row?.send_after as Date) > new Date(Date.now() + 23 * 3_600_000), 'stored for tomorrow')
  t.notOk(
    w.fcm.delivered.some((x) => x.body.message.data.pm_msg_id === scheduledId),
    'nothing delivered before its time',
  )

  // The sends list: newest first, filtered by state, each row a link to its page.
  await page.goto(`${base}${appPath}/envios`)
  await page.getByRole('combobox', { name: 'Estado' }).selectOption('agendado')
  await page.getByRole('button', { name: 'Filtrar' }).click()
  await page.waitForURL(/estado=agendado/)
  t.equal(await page.locator('#lista-envios tbody tr').count(), 1, 'only the scheduled send')
  await shot(page, '13-lista-envios')
  await page.locator('#lista-envios tbody a').first().click()
  t.match(page.url(), new RegExp(`${scheduledId}$`))

  // An in-app campaign: written, previewed, published, seen by a device's poll.
  await page.goto(`${base}${appPath}`)
  await page.getByRole('checkbox', { name: 'Canal in-app ativo' }).check()
  await page.getByRole('button', { name: 'Salvar in-app' }).click()
  await page.getByRole('link', { name: 'Nova campanha' }).click()
  await page.getByRole('textbox', { name: 'Nome', exact: true }).fill('Boas-vindas')
  await page.getByRole('textbox', { name: 'Título', exact: true }).fill('Olá de novo')
  await page.getByRole('textbox', { name: 'Corpo', exact: true }).fill('Tem novidade na loja')
  await page.getByRole('textbox', { name: 'Texto do botão', exact: true }).fill('Ver')
  await page.getByRole('combobox', { name: 'Ação do botão', exact: true }).selectOption('dismiss')
  const inappPreview = page.getByRole('region', { name: 'Pré-visualização' })
  await inappPreview.getByText('Olá de novo').waitFor()
  await inappPreview.getByText('A API aceita esta campanha como está.').waitFor()
  await shot(page, '14-inapp-editor')
  await page.getByRole('button', { name: 'Salvar rascunho' }).click()
  await page.getByText(/Rascunho salvo/).waitFor()
  t.equal(await page.getByRole('button', { name: 'Pausar' }).count(), 0, 'a draft cannot be paused')
  await page.getByRole('button', { name: 'Publicar' }).click()
  await page.getByText(/Campanha publicada/).waitFor()
  t.equal(await page.locator('#estado-campanha').textContent(), 'ativa')
  const campaignId = page.url().split('/').at(-1) as string
  t.equal(await page.locator('#alcance').textContent(), '3', 'its reach, counted after the page was shown')
  const poll = await w.s.call('GET', `/api/v1/inapp/pending?app_id=${app.id}&player_id=${players[0]}&schema=0.6`)
  t.equal(poll.status, 200, poll.text)
  t.match(
    poll.json.messages,
    [{ campanha_id: campaignId, conteudo: { pt: { titulo: 'Olá de novo' } } }],
    'the device is served it',
  )
  await shot(page, '15-inapp-campanha')

  // Phone-sized: every new page fits the width (no sideways scrolling) and keeps its controls.
  await page.setViewportSize({ width: 390, height: 844 })
  for (const [path, name] of [
    [`${appPath}/envios/novo`, '16-celular-compositor'],
    [`${appPath}/envios/${sendId}`, '17-celular-envio'],
    [`${appPath}/envios`, '18-celular-lista'],
    [`${appPath}/inapp/nova`, '19-celular-inapp'],
    [`${appPath}/inapp/${campaignId}`, '20-celular-campanha'],
  ] as const) {
    await page.goto(`${base}${path}`)
    const wide = (await page.evaluate('document.documentElement.scrollWidth')) as number
    t.ok(wide <= 390, `${path}: ${wide}px wide on a 390px window`)
    await shot(page, name)
  }
  t.ok(await page.getByRole('button', { name: 'Encerrar' }).isVisible())

  // A person of another organisation: 404 on every new page.
  const other = await ctx.browser()?.newContext()
  const bia = other ? await other.newPage() : await ctx.newPage()
  if (!other) await ctx.clearCookies()
  await bia.goto(`${base}/entrar`)
  await bia.getByRole('textbox', { name: 'E-mail' }).fill('bia@example.com')
  await bia.getByRole('textbox', { name: 'Senha' }).fill(SENHA)
  await bia.getByRole('button', { name: 'Entrar' }).click()
  await bia.waitForURL(`${base}/apps`)
  for (const path of [
    `${appPath}/envios/novo`,
    `${appPath}/envios`,
    `${appPath}/envios/${sendId}`,
    `${appPath}/inapp/nova`,
    `${appPath}/inapp/${campaignId}`,
  ]) {
    const res = await bia.goto(`${base}${path}`)
    t.equal(res?.status(), 404, path)
    t.notOk(await bia.getByText('Loja Azul Android').count(), `${path}: nothing of the app`)
  }
  await shot(bia, '21-outra-organizacao-404')
})
