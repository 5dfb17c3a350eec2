// Without Firebase no push can reach the browser, so this plays the provider's part: it sends a real notification
// to your device through Pombo (the send, its `recipients` and its `recebidos` are real), then prints the FCM web
// push `data` map the device would have received, built by the service's own code (the same renderer, display
// block and proof as the delivery worker). Paste it into "Simular push" on the page: the service worker handles it
// exactly like a push, and the receipt counts in the send's `recebidos`.
//
//   npx tsx examples/web/push-data.ts --app APP_ID --api-key API_KEY --receipt-key RECEIPT_KEY --player PLAYER_ID \
//     [--title Olá] [--body 'Chegou!'] [--url https://exemplo.com] [--api http://127.0.0.1:8080]
import { parseArgs } from 'node:util'
import { proof } from '../../src/delivery/proof'
import { fcmMessage } from '../../src/delivery/providers/fcm-body'
import { renderMessage } from '../../src/sends/payload'
import { parseSend } from '../../src/sends/validate'

async function main(): Promise<void> {
  const { values: a } = parseArgs({
    options: {
      app: { type: 'string' },
      'api-key': { type: 'string' },
      'receipt-key': { type: 'string' },
      player: { type: 'string' },
      title: { type: 'string', default: 'Olá do Pombo' },
      body: { type: 'string', default: 'Esta notificação prova que chegou.' },
      url: { type: 'string' },
      api: { type: 'string', default: 'http://127.0.0.1:8080' },
    },
  })
  if (!a.app || !a['api-key'] || !a['receipt-key'] || !a.player) {
    throw new Error('uso: --app APP_ID --api-key API_KEY --receipt-key RECEIPT_KEY --player PLAYER_ID')
  }
  if (!/^[0-9a-f]{64}$/i.test(a['receipt-key'])) throw new Error('--receipt-key: os 64 caracteres hex mostrados na criação do app')
  const body: Record<string, unknown> = {
    app_id: a.app,
    include_player_ids: [a.player],
    headings: { pt: a.title },
    contents: { pt: a.body },
  }
  if (a.url) body.url = a.url
  const r = await fetch(`${a.api.replace(/\/+$/, '')}/api/v1/notifications`, {
    method: 'POST',
    headers: { authorization: `Basic ${a['api-key']}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const sent = (await r.json()) as { id?: string; errors?: unknown }
  if (r.status !== 200 || !sent.id) throw new Error(`envio recusado: ${r.status} ${JSON.stringify(sent)}`)
  const input = parseSend(body, {})
  const push = {
    sendId: sent.id,
    message: renderMessage(input),
    proof: proof(Buffer.from(a['receipt-key'], 'hex'), sent.id, a.player.toLowerCase()),
    ttlS: input.ttlS,
    lane: input.lane,
  }
  const { message } = fcmMessage({ deviceId: a.player, token: 'web', deviceType: 5 }, push, Date.now())
  console.error(`envio ${sent.id} criado; cole no exemplo o mapa abaixo:`)
  console.log(JSON.stringify(message.data))
}

main().catch((err) => {
  console.error(err.message)
  process.exit(1)
})
