// The dashboard in a real browser: Debian's Chromium driven by playwright-core. Signs in, creates an app (the key
// shown once), uploads credentials against the fake FCM and APNs, runs both connection tests (one passes, one
// fails with Apple's reason), sends through the API and watches the counters move, deletes a device after the
// confirmation, and checks that a person of another organisation sees nothing of the app (404). Screenshots of the
// main pages go to a folder printed at the start (PM_SCREENSHOT_DIR, default .scratch/screenshots).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { PLACEHOLDER_APNS_TOKEN } from '../../src/credentials/connection-test'
import { ROOT } from '../../src/core/root'
import { launchChromium } from '../helpers/browser'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { BUNDLE_ID, startDelivery } from '../helpers/delivery'
import { basic } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

t.setTimeout(300_000)

t.test('the dashboard in Chromium', async (t) => {
  const shots = process.env.PM_SCREENSHOT_DIR || join(ROOT, '.scratch', 'screenshots')
  mkdirSync(shots, { recursive: true })
  t.comment(`screenshots: ${shots}`)
  const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] }, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const orgA = await makeOrg(w.s, 'Loja Azul', 'pro')
  const orgB = await makeOrg(w.s, 'Outra Empresa')
  await makePerson(w.s, 'ana@example.com', SENHA, orgA)
  await makePerson(w.s, 'bia@example.com', SENHA, orgB)
  // Apple answers BadDeviceToken for the test's placeholder token; deliveries take a moment so counters visibly move.
  w.apns.script(PLACEHOLDER_APNS_TOKEN, 'bad-device-token')
  w.fcm.script(/^br-/, 'slow:1500')

  const { ctx, close } = await launchChromium()
  t.teardown(close)
  const page = ctx.pages()[0] ?? (await ctx.newPage())
  page.setDefaultTimeout(20_000)
  const base = w.s.dashboardUrl

  // Signed out: every page sends to /entrar. A wrong password is refused with "inválid".
  await page.goto(`${base}/apps`)
  t.equal(new URL(page.url()).pathname, '/entrar')
  await page.getByRole('textbox', { name: 'E-mail' }).fill('ana@example.com')
  await page.getByRole('textbox', { name: 'Senha' }).fill('senha-errada-123')
  await page.getByRole('button', { name: 'Entrar' }).click()
  await page.getByText(/inválid/).waitFor()
  await shot(page, '01-entrar')
  await page.getByRole('textbox', { name: 'Senha' }).fill(SENHA)
  await page.getByRole('button', { name: 'Entrar' }).click()
  await page.waitForURL(`${base}/apps`)

  // A new app: the key is shown once, in the element named "Chave da API".
  await page.getByRole('link', { name: 'Novo app' }).click()
  await page.getByRole('textbox', { name: 'Nome' }).fill('Loja Azul Android')
  await page.getByRole('button', { name: 'Criar' }).click()
  const keyBox = page.getByRole('textbox', { name: 'Chave da API' })
  const apiKey = await keyBox.inputValue()
  t.match(apiKey, /^pm_live_[a-z0-9]{8}_/)
  t.equal((await keyBox.textContent())?.trim(), apiKey, 'its text is the key too')
  await shot(page, '02-app-criado')
  await page.getByRole('link', { name: 'Abrir o app' }).click()
  const appId = new URL(page.url()).pathname.split('/')[2] as string
  for (const h of ['Chaves', 'Credenciais', 'Dispositivos', 'Envios', 'Webhook', 'In-app']) {
    t.ok(await page.getByRole('heading', { name: h, exact: true }).isVisible(), `heading ${h}`)
  }

  // Credentials against the fakes: FCM passes its test; an APNs key of the sandbox against production APNs fails
  // with Apple's reason.
  const account = w.fcm.serviceAccount('loja-azul')
  await page
    .getByLabel('Conta de serviço (JSON)')
    .setInputFiles({ name: 'conta.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(account)) })
  await page.getByRole('button', { name: 'Salvar credencial FCM' }).click()
  await page.getByText('Credencial FCM salva').waitFor()
  const key = w.apns.key({ environment: 'sandbox' })
  await page
    .getByLabel('Chave .p8')
    .setInputFiles({ name: 'AuthKey.p8', mimeType: 'application/octet-stream', buffer: Buffer.from(key.p8) })
  await page.getByRole('textbox', { name: 'Key ID' }).fill(key.keyId)
  await page.getByRole('textbox', { name: 'Team ID' }).fill(key.teamId)
  await page.getByRole('textbox', { name: 'Bundle ID' }).fill(BUNDLE_ID)
  await page.getByRole('combobox', { name: 'Ambiente' }).selectOption('production')
  await page.getByRole('button', { name: 'Salvar credencial APNs' }).click()
  await page.getByText('Credencial APNs salva').waitFor()
  await page.getByRole('group', { name: 'Android e web push (FCM)' }).getByRole('button', { name: 'Testar conexão' }).click()
  await page.getByText(/Conexão OK/).waitFor()
  t.equal(await page.getByText(/Conexão OK/).count(), 1, 'FCM: Conexão OK')
  await page.getByRole('group', { name: 'iOS (APNs)' }).getByRole('button', { name: 'Testar conexão' }).click()
  const failure = page.getByText(/Falhou: BadEnvironmentKeyIdInToken/)
  await failure.waitFor()
  t.match(await failure.textContent(), /ambiente/)
  await shot(page, '03-credenciais')

  // Devices registered and a send through the public API; the page's counters move as deliveries land.
  const players: string[] = []
  for (let i = 0; i < 3; i++) {
    const r = await w.s.call('POST', '/api/v1/players', {
      body: { app_id: appId, device_type: 1, identifier: `br-${i}-${'x'.repeat(30)}`, external_user_id: `cliente-${i}` },
    })
    t.equal(r.status, 200, r.text)
    players.push(r.json.id)
  }
  const sent = await w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: appId, include_player_ids: players, contents: { pt: 'Olá' }, name: 'Promoção' },
    headers: basic(apiKey),
  })
  t.equal(sent.status, 200, sent.text)
  const sendId = sent.json.id as string
  await page.goto(`${base}/apps/${appId}`)
  const row = page.locator(`tr[data-envio="${sendId}"]`)
  const cell = (f: string) => row.locator(`td[data-campo="${f}"]`)
  t.equal(await cell('recipients').textContent(), '3')
  const before = await cell('successful').textContent()
  await page.waitForFunction(
    (id) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }
      ).document.querySelector(`tr[data-envio="${id}"] td[data-campo="successful"]`)?.textContent === '3',
    sendId,
    { timeout: 30_000 },
  )
  t.not(before, '3', `successful moved from ${before} to 3 on the open page`)
  t.equal(await cell('remaining').textContent(), '0')
  // Two devices prove arrival: recebidos moves too, without reloading.
  for (const p of players.slice(0, 2)) {
    const token = `br-${players.indexOf(p)}-${'x'.repeat(30)}`
    const m = w.fcm.delivered.find((x) => x.target === token && x.body.message.data.pm_msg_id === sendId)
    const r = await w.s.call('POST', '/api/v1/receipts', {
      body: { app_id: appId, notification_id: sendId, player_id: p, rcpt: m?.body.message.data.pm_rcpt },
    })
    t.equal(r.status, 200, r.text)
  }
  await page.waitForFunction(
    (id) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }
      ).document.querySelector(`tr[data-envio="${id}"] td[data-campo="recebidos"]`)?.textContent === '2',
    sendId,
    { timeout: 30_000 },
  )
  t.equal(
    await page.locator(`tr[data-envio="${sendId}"] td[data-campo="recebidos"]`).textContent(),
    '2',
    'recebidos moved to 2 on the open page',
  )
  await shot(page, '04-app')

  // Delete a device found by its external user id: the browser asks to confirm first.
  await page.getByRole('searchbox', { name: 'Buscar dispositivo' }).fill('cliente-1')
  await page.getByRole('button', { name: 'Buscar', exact: true }).click()
  const victim = players[1] as string
  await page.getByRole('link', { name: victim }).waitFor()
  page.once('dialog', (d) => d.accept())
  await page.locator('#dispositivos').getByRole('button', { name: 'Excluir' }).click()
  await page.getByText(/excluído com o histórico/).waitFor()
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM devices WHERE id = $1', [victim])).at(0)?.n, 0, 'device gone')
  t.equal(
    (await w.s.sql('SELECT count(*)::int AS n FROM deliveries WHERE device_id = $1', [victim])).at(0)?.n,
    0,
    'its deliveries gone',
  )
  await shot(page, '05-dispositivo-excluido')
  await page.goto(`${base}/apps`)
  await shot(page, '06-apps')

  // A person of another organisation sees nothing of it.
  const other = await ctx.browser()?.newContext()
  const bia = other ? await other.newPage() : await ctx.newPage()
  if (!other) await ctx.clearCookies()
  await bia.goto(`${base}/entrar`)
  await bia.getByRole('textbox', { name: 'E-mail' }).fill('bia@example.com')
  await bia.getByRole('textbox', { name: 'Senha' }).fill(SENHA)
  await bia.getByRole('button', { name: 'Entrar' }).click()
  await bia.waitForURL(`${base}/apps`)
  t.notOk(await bia.getByText('Loja Azul Android').count(), 'not in her list')
  const res = await bia.goto(`${base}/apps/${appId}`)
  t.equal(res?.status(), 404, 'the app page answers 404')
  t.notOk(await bia.getByText('Loja Azul Android').count())
  await shot(bia, '07-outra-organizacao-404')
  // The same holds without a browser, for an action.
  const c = new DashClient(base)
  await c.signIn('bia@example.com', SENHA)
  const apps = await c.get('/apps')
  t.equal((await c.post(`/apps/${appId}/pausar`, { _csrf: DashClient.token(apps) })).status, 404)
})
