// The web example (examples/web) in a real browser: its server forwards /api to a real service, the page registers
// the device through the SDK with the IndexedDB storage it shares with its worker (sw.js: the SDK's script through
// importScripts), draws an in-app card whose impression, click and close reach the funnel, and a push handed to the
// worker is shown by the SDK and proved in `recebidos`.
import { type ChildProcess, spawn } from 'node:child_process'
import t from 'tap'
import { sendAndBuild } from '../../examples/web/push-data'
import { launchChromium } from '../helpers/browser'
import { inappWorld } from '../helpers/inapp'
import { freePort } from '../helpers/serve-child'

function started(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (c) => {
      out += c
      if (out.includes('exemplo:')) resolve()
    })
    child.on('exit', (code) => reject(new Error(`serve.mjs exited ${code}`)))
  })
}

t.test('the web example: registration, an in-app card, a push proved from the service worker', async (t) => {
  const w = await inappWorld(t)
  const app = w.app as typeof w.app & { receipt_key: string }
  const campaign = await w.campaign({
    conteudo: {
      pt: { titulo: 'Bem-vindo ao exemplo', corpo: 'Um cartão in-app', botao: { texto: 'Ok', acao: { tipo: 'dismiss' } } },
    },
    gatilho: { atraso_ms: 0 },
  })
  const port = await freePort()
  const server = spawn(process.execPath, ['examples/web/serve.mjs'], {
    env: { ...process.env, POMBO_URL: w.s.url, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => {
    server.kill()
  })
  await started(server)
  const { ctx, close } = await launchChromium()
  t.teardown(close)
  await ctx.grantPermissions(['notifications'], { origin: `http://localhost:${port}` }) // "Permitir notificações"
  const page = await ctx.newPage()
  await page.goto(`http://localhost:${port}/?app=${app.id}`)
  await page.getByText(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/).waitFor({ timeout: 20_000 })
  const player = (await page.textContent('#player')) as string
  const [row] = await w.s.sql('SELECT device_type, sdk_versao, instalacao_id, app_version FROM devices WHERE id = $1', [player])
  t.match(row, { device_type: 5, sdk_versao: '0.7.0', app_version: '1.0.0' }, 'registered by the SDK in the page')
  t.ok(row?.instalacao_id)

  const card = page.getByRole('dialog', { name: 'Mensagem in-app' })
  await card.waitFor({ timeout: 20_000 })
  t.equal(await page.textContent('#card h3'), 'Bem-vindo ao exemplo')
  await card.getByRole('button', { name: 'Ok' }).click()
  await card.waitFor({ state: 'hidden' })

  const { sendId, data } = await sendAndBuild({
    api: w.s.url,
    appId: app.id,
    apiKey: app.api_key,
    receiptKey: app.receipt_key,
    player,
    title: 'Olá',
    body: 'Chegou',
  })
  await page.fill('#payload', JSON.stringify(data))
  await page.getByRole('button', { name: 'Entregar ao service worker' }).click()
  await page.getByText(`push ${sendId}: "Olá" — exibido, recibo: sent`).waitFor({ timeout: 20_000 })
  const [send] = await w.s.sql('SELECT recebidos FROM sends WHERE id = $1', [sendId])
  t.equal(send?.recebidos, 1, 'the service worker proved arrival')
  const shown = await page.evaluate(async () => {
    const sw = (globalThis as unknown as { navigator: { serviceWorker: { ready: Promise<unknown> } } }).navigator.serviceWorker
    const reg = (await sw.ready) as { getNotifications(): Promise<Array<{ title: string; body: string }>> }
    return (await reg.getNotifications()).map((n) => ({ title: n.title, body: n.body }))
  })
  t.same(shown, [{ title: 'Olá', body: 'Chegou' }], 'the SDK drew it')

  // The page's outbox sends the card's events on its own (batched after a second).
  let f: Record<string, unknown> = {}
  for (const end = Date.now() + 20_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    await w.s.svc.deps.inapp.served.stop()
    f = (await w.get(`/${campaign}/funil`)).json
    if (f.fechados === 1) break
  }
  t.match(f, { impressoes: 1, cliques: 1, fechados: 1 })
})
