// A real gRPC client of the confirmation stream (the repository's proto, @grpc/grpc-js), and a way to make many
// receipt events fast: a send that exists, and receipts with valid proofs for devices made up on the spot (the
// receipt statement checks the send and the proof, not the device list), posted through the real route.
import { randomUUID } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import { confirmationStream, type StreamEvent } from '../../src/confirmations/proto'
import { proof } from '../../src/message/proof'
import { basic, type TestService } from './service'

export type { StreamEvent }

export interface Ended {
  code: number
  details: string
}

export interface Subscription {
  events: StreamEvent[]
  /** Resolves with the call's final status (never rejects). */
  ended: Promise<Ended>
  call: grpc.ClientReadableStream<StreamEvent>
  client: grpc.Client
  /** Resolves once `n` events arrived (rejects after the timeout, naming what arrived). */
  waitFor(n: number, timeoutMs?: number): Promise<StreamEvent[]>
  cancel(): void
}

export function grpcClient(port: number): grpc.Client {
  const Ctor = confirmationStream()
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure())
}

/** Opens `Assinar`; `auth` is the whole metadata value (`Basic <key>`), or a Metadata for hostile cases. */
export function subscribe(
  port: number,
  auth: string | grpc.Metadata | null,
  appId: string,
  desde = '0',
  client = grpcClient(port),
): Subscription {
  let md: grpc.Metadata
  if (auth instanceof grpc.Metadata) md = auth
  else {
    md = new grpc.Metadata()
    if (auth !== null) md.set('authorization', auth)
  }
  const call = (
    client as unknown as { Assinar(req: unknown, md: grpc.Metadata): grpc.ClientReadableStream<StreamEvent> }
  ).Assinar({ app_id: appId, desde_seq: desde }, md)
  const events: StreamEvent[] = []
  const waiters: Array<() => void> = []
  call.on('data', (e: StreamEvent) => {
    events.push(e)
    for (const w of waiters.splice(0)) w()
  })
  const ended = new Promise<Ended>((resolve) => {
    call.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }))
    call.on('end', () => resolve({ code: grpc.status.OK, details: '' }))
  })
  void ended.then(() => {
    for (const w of waiters.splice(0)) w()
  })
  let done = false
  void ended.then(() => {
    done = true
  })
  return {
    events,
    ended,
    call,
    client,
    async waitFor(n, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs
      while (events.length < n) {
        if (done) throw new Error(`stream ended with ${events.length} of ${n} events: ${JSON.stringify(await ended)}`)
        if (Date.now() > until) throw new Error(`only ${events.length} of ${n} events within ${timeoutMs} ms`)
        await new Promise<void>((r) => {
          waiters.push(r)
          setTimeout(r, 100)
        })
      }
      return events
    },
    cancel() {
      call.cancel()
    },
  }
}

/**
 * An app in `grpc` mode with one registered device and one send to it (never delivered: API role only is fine). On
 * the pro plan by default: a free-plan app gets no `delivery.received` (src/apps/plan.ts).
 */
export async function streamApp(s: TestService, modo = 'grpc', plan: 'free' | 'pro' = 'pro') {
  const app = await s.createApp()
  await s.svc.deps.apps.setPlan(app.id, plan)
  const reg = await s.call('POST', '/api/v1/players', {
    body: { app_id: app.id, device_type: 1, identifier: `tok-${randomUUID()}` },
  })
  if (reg.status !== 200) throw new Error(`register: ${reg.status} ${reg.text}`)
  const send = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Hi' }, include_player_ids: [reg.json.id] },
    headers: basic(app.api_key),
  })
  if (send.status !== 200) throw new Error(`send: ${send.status} ${send.text}`)
  const put = await s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: app.id, modo }, headers: basic(app.api_key) })
  if (put.status !== 200) throw new Error(`modo: ${put.status} ${put.text}`)
  const key = Buffer.from(app.receipt_key, 'hex')
  return {
    app,
    auth: `Basic ${app.api_key}`,
    sendId: send.json.id as string,
    /** Posts receipts for `n` new made-up devices (`clique` also writes the arrival: two events each) on `via`. */
    async receipts(n: number, o: { via?: TestService; clique?: boolean; parallel?: number } = {}): Promise<string[]> {
      const via = o.via ?? s
      const players = Array.from({ length: n }, () => randomUUID())
      let next = 0
      const worker = async (): Promise<void> => {
        while (next < players.length) {
          const p = players[next++] as string
          const r = await via.call('POST', '/api/v1/receipts', {
            body: {
              app_id: app.id,
              notification_id: send.json.id,
              player_id: p,
              rcpt: proof(key, send.json.id, p),
              ...(o.clique ? { evento: 'clique' } : {}),
            },
          })
          if (r.status !== 200) throw new Error(`receipt: ${r.status} ${r.text}`)
        }
      }
      await Promise.all(Array.from({ length: o.parallel ?? 8 }, worker))
      return players
    },
  }
}

export { until } from './until'

/** seq strictly increasing by one from `first`. */
export function contiguous(events: StreamEvent[], first: number): boolean {
  return events.every((e, i) => Number(e.seq) === first + i)
}
