// The in-app proof is made with a key derived from the app's receipt key for that purpose alone
// (HMAC-SHA256(receipt key, "pombo inapp proof v1")), while the delivery proof keeps the spec's construction
// (HMAC-SHA256(receipt key, "<send>:<device>")): through the real routes, a package's proof is exactly the derived
// construction, a proof made with the receipt key itself is refused, and neither kind of proof passes as the other.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { inappWorld, nowIso } from '../helpers/inapp'
import { basic } from '../helpers/service'

/** The in-app construction, computed here from its description (not from the service's code). */
function inappMac(key: Buffer, campaign: string, device: string, epochS: number): string {
  return createHmac('sha256', key).update(`inapp:${campaign}:${device}:${epochS}`).digest().subarray(0, 18).toString('base64url')
}
const derive = (receiptKey: Buffer) => createHmac('sha256', receiptKey).update('pombo inapp proof v1').digest()
const deliveryProof = (receiptKey: Buffer, send: string, device: string) =>
  createHmac('sha256', receiptKey).update(`${send}:${device}`).digest('base64url').slice(0, 32)

t.test('a package proof is made with the derived key; one made with the receipt key itself is refused', async (t) => {
  const w = await inappWorld(t)
  const receiptKey = Buffer.from((w.app as unknown as { receipt_key: string }).receipt_key, 'hex')
  const id = await w.campaign()
  const dev = await w.device()
  const p = await w.pending(dev)
  t.equal(p.status, 200)
  const prova = p.json.messages.find((x: { campanha_id: string }) => x.campanha_id === id).prova as string
  const [epoch36, mac] = prova.split('.') as [string, string]
  const epoch = Number.parseInt(epoch36, 36)
  t.equal(mac, inappMac(derive(receiptKey), id, dev, epoch), 'HMAC(HMAC(receipt key, "pombo inapp proof v1"), inapp:…)')
  t.not(mac, inappMac(receiptKey, id, dev, epoch), 'not the receipt key itself')

  const event = (proof: string, n: number) => ({
    campanha_id: id,
    prova: proof,
    evento: 'impressao',
    ocorrencia_n: n,
    em: nowIso(),
  })
  const raw = `${epoch36}.${inappMac(receiptKey, id, dev, epoch)}`
  const r = await w.events(dev, [event(prova, 1), event(raw, 2)])
  t.equal(r.status, 200)
  t.same(r.json.resultados, ['aceito', 'prova_invalida'], 'the receipt-key proof is refused, the package proof accepted')
  t.equal((await w.events(dev, [event(raw, 3)])).status, 403, 'a batch of receipt-key proofs only: 403')
})

t.test('a delivery proof is never an in-app proof, nor the reverse; the delivery proof keeps its construction', async (t) => {
  const w = await inappWorld(t)
  const receiptKey = Buffer.from((w.app as unknown as { receipt_key: string }).receipt_key, 'hex')
  const id = await w.campaign()
  const dev = await w.device()
  const prova = (await w.pending(dev)).json.messages[0].prova as string
  const send = await w.s.call('POST', '/api/v1/notifications', {
    body: { app_id: w.app.id, contents: { en: 'Oi' }, include_player_ids: [dev] },
    headers: basic(w.app.api_key),
  })
  t.equal(send.status, 200, send.text)
  const sendId = send.json.id as string
  const receipt = (rcpt: string) =>
    w.s.call('POST', '/api/v1/receipts', { body: { app_id: w.app.id, notification_id: sendId, player_id: dev, rcpt } })

  // The in-app proof as a receipt, and a delivery proof made of the campaign's ids as an in-app proof.
  t.equal((await receipt(prova)).status, 403, 'an in-app proof is not a receipt')
  t.equal((await receipt(prova.slice(prova.indexOf('.') + 1))).status, 403, 'nor its MAC alone')
  const crossed = [
    deliveryProof(receiptKey, id, dev),
    `${prova.slice(0, prova.indexOf('.'))}.${deliveryProof(receiptKey, id, dev).slice(0, 24)}`,
    `${prova.slice(0, prova.indexOf('.'))}.${deliveryProof(derive(receiptKey), id, dev).slice(0, 24)}`,
  ]
  const r = await w.events(
    dev,
    crossed.map((c, i) => ({ campanha_id: id, prova: c, evento: 'impressao', ocorrencia_n: i + 1, em: nowIso() })),
  )
  t.equal(r.status, 403, 'no delivery-shaped proof passes as an in-app one')
  // The delivery proof is still the spec's: HMAC(receipt key, "<send>:<device>"), 32 characters.
  const ok = await receipt(deliveryProof(receiptKey, sendId, dev))
  t.equal(ok.status, 200, ok.text)
})
