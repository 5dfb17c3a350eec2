// Without Firebase no push can reach the browser, so this plays the provider's part: it sends a real notification
// to your device through Pombo (the send, its `recipients` and its `recebidos` are real), then prints the FCM web
// push `data` map the device would have received, built by the service's own code (the same renderer, display
// block and proof as the delivery worker). Paste it into "Simular push" on the page: the service worker handles it
// exactly like a push, and the receipt counts in the send's `recebidos`.
//
//   npx tsx examples/web/push-data.ts --app APP_ID --api-key API_KEY --receipt-key RECEIPT_KEY --player PLAYER_ID \
//     [--title Olá] [--body 'Chegou!'] [--url https://exemplo.com] [--api http://127.0.0.1:8080]
import { parseArgs } from 'node:util'
import { proof } from '../../src/message/proof'
import { fcmMessage } from '../../src/providers/fcm-body'
import { renderMessage } from '../../src/message/payload'
import { parseSend } from '../../src/sends/validate'

export interface PushDataOptions {
  api: string
  appId: string
  apiKey: string
  receiptKey: string
  player: string
  title: string
  body: string
  url?: string
}

/** Sends the notification through Pombo and answers its id and the web push `data` map the device would get. */
export async function sendAndBuild(o: PushDataOptions): Promise<{ sendId: string; data: Record<string, string> }> {
  if (!/^[0-9a-f]{64}$/i.test(o.receiptKey)) throw new Error('--receipt-key: os 64 caracteres hex mostrados na criação do app')
  const body: Record<string, unknown> = {
    app_id: o.appId,
    include_player_ids: [o.player],
    headings: { pt: o.title },
    contents: { pt: o.body },
  }
  if (o.url) body.url = o.url
  const r = await fetch(`${o.api.replace(/\/+$/, '')}/api/v1/notifications`, {
    method: 'POST',
    headers: { authorization: `Basic ${o.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const sent = (await r.json()) as { id?: string; errors?: unknown }
  if (r.status !== 200 || !sent.id) throw new Error(`envio recusado: ${r.status} ${JSON.stringify(sent)}`)
  const input = parseSend(body, {})
  const push = {
    sendId: sent.id,
    message: renderMessage(input),
    proof: proof(Buffer.from(o.receiptKey, 'hex'), sent.id, o.player.toLowerCase()),
    ttlS: input.ttlS,
    lane: input.lane,
  }
  const { message } = fcmMessage({ deviceId: o.player, token: 'web', deviceType: 5 }, push, Date.now())
  return { sendId: sent.id, data: message.data as Record<string, string> }
}

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
  const { sendId, data } = await sendAndBuild({
    api: a.api,
    appId: a.app,
    apiKey: a['api-key'],
    receiptKey: a['receipt-key'],
    player: a.player,
    title: a.title,
    body: a.body,
    url: a.url,
  })
  console.error(`envio ${sendId} criado; cole no exemplo o mapa abaixo:`)
  console.log(JSON.stringify(data))
}

if (process.argv[1] && /push-data\.ts$/.test(process.argv[1])) {
  main().catch((err) => {
    console.error(err.message)
    process.exit(1)
  })
}
