// Follows one send to the fake FCM until Postgres has it closed: the fake's accepted count sampled every 200 ms (the
// send's row read every 500 ms), and from those samples the steady rate (10% → 90% of the audience over the time it
// took) and the first → last delivery rate. Shared by the deliver and slices benchmarks.
import type pg from 'pg'

export interface Followed {
  /** Deliveries the fake accepted for this send. */
  delivered: number
  steady: number
  overall: number
  /** Seconds from `t0` (the send's request) until Postgres had it closed. */
  wall: number
  row: Record<string, unknown> | undefined
}

export async function followSend(o: {
  db: pg.Client
  sendId: string
  devices: number
  fake: { stats(): Promise<{ delivered: number }> }
  /** The fake's count before the send. */
  base: number
  t0: number
  timeoutMs: number
  /** Called at every sample (e.g. to read a process's memory). */
  onSample?: () => void
}): Promise<Followed> {
  const samples: Array<{ at: number; n: number }> = []
  let row: Record<string, unknown> | undefined
  let lastPoll = 0
  const deadline = Date.now() + o.timeoutMs
  for (;;) {
    o.onSample?.()
    const n = (await o.fake.stats()).delivered - o.base
    samples.push({ at: Date.now(), n })
    if (Date.now() - lastPoll > 500 || n >= o.devices) {
      lastPoll = Date.now()
      row = (await o.db.query('SELECT * FROM sends WHERE id = $1', [o.sendId])).rows[0]
      if (row?.completed_at) break
    }
    if (Date.now() > deadline) throw new Error(`send did not close: ${n} delivered, ${JSON.stringify(row)}`)
    await new Promise((res) => setTimeout(res, 200))
  }
  const wall = (Date.now() - o.t0) / 1000
  const at = (frac: number) => samples.find((s) => s.n >= o.devices * frac) ?? (samples.at(-1) as { at: number; n: number })
  const lo = at(0.1)
  const hi = at(0.9)
  const first = samples.find((s) => s.n > 0) ?? lo
  const last = samples.at(-1) as { at: number; n: number }
  return {
    delivered: last.n,
    steady: (hi.n - lo.n) / Math.max(0.001, (hi.at - lo.at) / 1000),
    overall: last.n / Math.max(0.001, (last.at - first.at) / 1000),
    wall,
    row,
  }
}

/** POSTs a send to the app's whole audience (`Subscribed Users`); answers its id. */
export async function sendToEveryone(
  apiUrl: string,
  app: { id: string; api_key: string },
  body: Record<string, unknown>,
): Promise<string> {
  const r = await fetch(`${apiUrl}/api/v1/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: app.id, included_segments: ['Subscribed Users'], ...body }),
  })
  const sent = (await r.json()) as { id?: string }
  if (r.status !== 200 || !sent.id) throw new Error(`send: ${r.status} ${JSON.stringify(sent)}`)
  return sent.id
}
