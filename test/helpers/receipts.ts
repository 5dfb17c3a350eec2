// A send really delivered to the fake FCM, and the proofs its devices got: a test presents exactly what a device
// received (pm_msg_id, pm_rcpt), through the real receipt route.
import { startDelivery } from './delivery'
import type { Answer } from './service'

type Tap = Parameters<typeof startDelivery>[0]

export async function deliveredSend(t: Tap, o: { devices?: number; env?: Record<string, string> } = {}) {
  const d = await startDelivery(t, { env: { PM_LIMIT_IP_PER_MIN: '0', ...o.env } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const tag = Math.random().toString(36).slice(2, 8)
  const players: string[] = []
  for (let i = 0; i < (o.devices ?? 2); i++) players.push(await d.device(app, `rc-${tag}-${i}`))

  /** Sends to every device (or the given ones) and waits for the send to close; answers its id. */
  async function sendTo(ids: string[] = players): Promise<string> {
    const id = await d.send(app, { include_player_ids: ids })
    await d.closed(id)
    return id
  }
  const first = await sendTo()

  /** The pm_rcpt the device got for the send, read from what the fake FCM accepted. */
  function rcpt(player: string, sendId: string = first): string {
    const token = `rc-${tag}-${players.indexOf(player)}`
    const m = d.fcm.delivered.find((r) => r.target === token && r.body.message.data.pm_msg_id === sendId)
    if (!m) throw new Error(`no delivery of ${sendId} to ${token}`)
    return m.body.message.data.pm_rcpt
  }

  return {
    d,
    s: d.s,
    app,
    players,
    sendId: first,
    sendTo,
    rcpt,
    body(player: string, extra: Record<string, unknown> = {}, sendId: string = first): Record<string, unknown> {
      return { app_id: app.id, notification_id: sendId, player_id: player, rcpt: rcpt(player, sendId), ...extra }
    },
    post(body: unknown): Promise<Answer> {
      return d.s.call('POST', '/api/v1/receipts', { body })
    },
    async counters(sendId: string = first): Promise<{ recebidos: number; converted: number }> {
      const [r] = await d.s.sql<{ recebidos: number; converted: number }>(
        'SELECT recebidos, converted FROM sends WHERE id = $1',
        [sendId],
      )
      if (!r) throw new Error('no send')
      return r
    },
  }
}
