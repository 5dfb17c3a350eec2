// The confirmation stream (docs/spec/contract.md "Confirmation stream"): a real gRPC client against the real
// service. Refusals and hostile metadata, replay from 0, resume from a seq, live tail, two consumers of one app,
// order under concurrent receipts from two API instances, a consumer slower than the producer, revocation / pause
// / mode change on an open stream, streams_ativos, pm_problema in notification.completed, and retention.
import * as grpc from '@grpc/grpc-js'
import t from 'tap'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { startDelivery } from '../helpers/delivery'
import { contiguous, type StreamEvent, streamApp, subscribe, until } from '../helpers/grpc'
import { basic, FakeClock, startService, type TestService } from '../helpers/service'

const S = grpc.status

function port(s: TestService): number {
  const p = s.svc.grpc?.port
  if (!p) throw new Error('no gRPC server')
  return p
}

async function ativos(s: TestService, app: { id: string; api_key: string }): Promise<number> {
  const r = await s.call('GET', `/api/v1/confirmacoes?app_id=${app.id}`, { headers: basic(app.api_key) })
  return r.json.streams_ativos
}

function body(e: StreamEvent): Record<string, unknown> {
  return JSON.parse(e.corpo_json)
}

t.test('refusals: key, app, mode, arguments; hostile metadata is UNAUTHENTICATED; nothing escapes', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const other = await streamApp(s)
  const polling = await streamApp(s, 'consulta')
  const code = async (auth: string | grpc.Metadata | null, appId: string, desde = '0') =>
    (await subscribe(port(s), auth, appId, desde).ended).code
  t.equal(await code(null, a.app.id), S.UNAUTHENTICATED, 'no authorization')
  t.equal(await code('', a.app.id), S.UNAUTHENTICATED, 'empty authorization')
  t.equal(await code('Basic nonsense', a.app.id), S.UNAUTHENTICATED, 'malformed key')
  t.equal(
    await code(`Basic ${a.app.api_key.slice(0, -1)}${a.app.api_key.endsWith('A') ? 'B' : 'A'}`, a.app.id),
    S.UNAUTHENTICATED,
    'wrong secret',
  )
  t.equal(await code(`Digest ${a.app.api_key}`, a.app.id), S.UNAUTHENTICATED, 'unknown scheme')
  t.equal(await code(`Basic ${'x'.repeat(6000)}`, a.app.id), S.UNAUTHENTICATED, 'a huge value')
  const two = new grpc.Metadata()
  two.add('authorization', a.auth)
  two.add('authorization', a.auth)
  // Node's HTTP/2 refuses a repeated authorization header before it leaves the client (INTERNAL there).
  t.not(await code(two, a.app.id), S.OK, 'two authorization entries: refused')
  const bin = new grpc.Metadata()
  bin.set('authorization-bin', Buffer.from(a.auth))
  t.equal(await code(bin, a.app.id), S.UNAUTHENTICATED, 'a binary entry is not the key')
  t.equal(await code(other.auth, a.app.id), S.PERMISSION_DENIED, "another app's key")
  t.equal(await code(a.auth, 'not-a-uuid'), S.INVALID_ARGUMENT, 'app_id not a UUID')
  t.equal(await code(a.auth, ''), S.INVALID_ARGUMENT, 'app_id empty')
  t.equal(await code(a.auth, a.app.id, '18446744073709551615'), S.INVALID_ARGUMENT, 'desde_seq past int64')
  t.equal(await code(polling.auth, polling.app.id), S.FAILED_PRECONDITION, 'mode consulta')
  // Bytes that are not an SubscribeRequest: the transport refuses them; the service carries on.
  const Raw = grpc.makeGenericClientConstructor(
    {
      Assinar: {
        path: '/pombo.confirmacoes.v1.Confirmacoes/Assinar',
        requestStream: false,
        responseStream: true,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    'Raw',
  )
  const raw = new Raw(`127.0.0.1:${port(s)}`, grpc.credentials.createInsecure())
  for (const bytes of [
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
    Buffer.from('\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01'),
    Buffer.alloc(5000, 7),
  ]) {
    const md = new grpc.Metadata()
    md.set('authorization', a.auth)
    const c = (raw as unknown as { Assinar(b: Buffer, m: grpc.Metadata): grpc.ClientReadableStream<Buffer> }).Assinar(bytes, md)
    const ended = await new Promise<number>((resolve) => {
      c.on('error', (e: grpc.ServiceError) => resolve(e.code))
      c.on('end', () => resolve(S.OK))
      c.on('data', () => {})
    })
    t.not(ended, S.OK, `garbage request (${bytes.length} bytes) refused`)
  }
  raw.close()
  await s.svc.deps.apps.setPaused(a.app.id, true)
  t.equal(await code(a.auth, a.app.id), S.PERMISSION_DENIED, 'paused app')
  await s.svc.deps.apps.setPaused(a.app.id, false)
  const audits = s.logs.filter((l) => l.evento === 'auth_rejeitada' && l.rota === 'grpc Assinar')
  t.ok(audits.length >= 5, 'refusals are audited')
  t.notOk(JSON.stringify(audits).includes(a.app.api_key.slice(-43)), 'never with the key')
  t.equal(s.logs.filter((l) => (l.level as number) >= 50).length, 0, 'no error logged')
  // After all that, the three accepted forms work.
  for (const auth of [a.auth, `Bearer ${a.app.api_key}`, `Basic ${Buffer.from(`x:${a.app.api_key}`).toString('base64')}`]) {
    const sub = subscribe(port(s), auth, a.app.id)
    await a.receipts(1)
    await sub.waitFor(1)
    sub.cancel()
  }
})

t.test('replay from 0, resume from a seq, live tail, two consumers; streams_ativos follows them', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const first = await a.receipts(20)
  t.equal(await ativos(s, a.app), 0)
  const one = subscribe(port(s), a.auth, a.app.id, '0')
  await one.waitFor(20)
  t.ok(contiguous(one.events, 1), 'replay from 0: seq 1..20')
  t.same(new Set(one.events.map((e) => e.player_id)), new Set(first), 'one event per receipt')
  const e0 = one.events[0] as StreamEvent
  t.match(e0, { evento: 'delivery.received', app_id: a.app.id, notification_id: a.sendId, canal: 'grpc' })
  t.same(body(e0), {
    evento: 'delivery.received',
    app_id: a.app.id,
    notification_id: a.sendId,
    player_id: e0.player_id,
    quando: e0.quando,
    canal: 'grpc',
  })
  t.match(e0.quando, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/)
  const two = subscribe(port(s), `Bearer ${a.app.api_key}`, a.app.id, '10')
  await two.waitFor(10)
  t.same(
    two.events.map((e) => e.seq),
    one.events.slice(10).map((e) => e.seq),
    'resume from 10: 11..20',
  )
  await until('two streams counted', async () => (await ativos(s, a.app)) === 2)
  const clicked = await a.receipts(10, { clique: true })
  await one.waitFor(40)
  await two.waitFor(30)
  t.ok(contiguous(one.events, 1), 'live: 1..40, nothing skipped')
  t.same(two.events, one.events.slice(10), 'the second consumer sees the same events in the same order')
  for (const p of clicked) {
    const kinds = one.events.filter((e) => e.player_id === p).map((e) => e.evento)
    t.same(kinds, ['delivery.received', 'delivery.clicked'], 'received before clicked')
  }
  two.cancel()
  await until('closed stream uncounted', async () => (await ativos(s, a.app)) === 1)
  const last = (one.events.at(-1) as StreamEvent).seq
  one.cancel()
  await until('none open', async () => (await ativos(s, a.app)) === 0)
  await a.receipts(1)
  const again = subscribe(port(s), a.auth, a.app.id, last)
  await again.waitFor(1)
  t.equal(again.events[0]?.seq, String(Number(last) + 1), 'a stream resumed from its last seq continues right after it')
  again.cancel()
})

t.test('PM_GRPC_STREAMS_PER_APP caps the open streams of one app on one instance', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_GRPC_STREAMS_PER_APP: '1' } })
  const a = await streamApp(s)
  const first = subscribe(port(s), a.auth, a.app.id)
  await until('open', async () => (await ativos(s, a.app)) === 1)
  const second = await subscribe(port(s), a.auth, a.app.id).ended
  t.same(second, { code: S.RESOURCE_EXHAUSTED, details: 'Mais de 1 streams abertos deste app nesta instância.' })
  first.cancel()
  await first.ended
  await until('closed', async () => (await ativos(s, a.app)) === 0)
  const again = subscribe(port(s), a.auth, a.app.id)
  await until('a new one opens once the first is gone', async () => (await ativos(s, a.app)) === 1)
  again.cancel()
  await again.ended
})

t.test('order under concurrent receipts from two API instances, read live on a third stream', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const s2 = await startService(t, { grpc: true, shareWith: s, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const live = subscribe(port(s2), a.auth, a.app.id, '0')
  await until('open', async () => (await ativos(s, a.app)) === 1)
  await Promise.all([
    a.receipts(150, { via: s, parallel: 16 }),
    a.receipts(150, { via: s2, parallel: 16, clique: true }),
    a.receipts(150, { via: s2, parallel: 16 }),
  ])
  const n = 150 + 300 + 150
  await live.waitFor(n, 60_000)
  t.equal(live.events.length, n)
  t.ok(contiguous(live.events, 1), `seq 1..${n} in order, nothing skipped or repeated while writers raced`)
  const db = await s.sql<{ seq: string; p: string; evento: string }>(
    "SELECT seq::text, body->>'player_id' AS p, evento FROM events WHERE app_id = $1 ORDER BY events.seq",
    [a.app.id],
  )
  t.same(
    live.events.map((e) => [e.seq, e.player_id, e.evento]),
    db.map((r) => [r.seq, r.p, r.evento]),
    'exactly the committed events, in seq order',
  )
  t.ok(
    s.svc.deps.receipts.writer.stats.statements > 1 && s2.svc.deps.receipts.writer.stats.statements > 1,
    'many batches on both instances',
  )
  live.cancel()
})

t.test('a consumer slower than the producer: back-pressure, bounded buffer, nothing dropped', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const slow = subscribe(port(s), a.auth, a.app.id, '0')
  await a.receipts(1)
  await slow.waitFor(1)
  slow.call.pause() // stops reading: HTTP/2 flow control fills up, the server's write() answers false
  await a.receipts(1500, { clique: true, parallel: 16 })
  const total = 1 + 3000
  const grpcServer = s.svc.grpc
  if (!grpcServer) throw new Error('no server')
  await until('the server waits on drain', async () => grpcServer.stats.waitingDrain > 0)
  const got = slow.events.length
  t.ok(got < total, `the paused consumer has not got everything (${got} of ${total})`)
  t.ok(
    grpcServer.stats.maxQueued <= 32,
    `the stream never queued more than gRPC's buffer (${grpcServer.stats.maxQueued} messages)`,
  )
  // Now it reads, slowly at first: a few milliseconds of reading every 20.
  let slowly = true
  const reader = setInterval(() => {
    slow.call.resume()
    setTimeout(() => {
      if (slowly) slow.call.pause()
    }, 3)
  }, 20)
  await until('half read', async () => slow.events.length > total / 2, 60_000)
  slowly = false
  clearInterval(reader)
  slow.call.resume()
  await slow.waitFor(total, 60_000)
  t.ok(contiguous(slow.events, 1), `all ${total} arrived, in order`)
  t.ok(grpcServer.stats.maxQueued <= 32, `queue bounded throughout (${grpcServer.stats.maxQueued})`)
  slow.cancel()
})

t.test('revocation, pause and mode change end an open stream at once', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const s2 = await startService(t, { grpc: true, shareWith: s, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  // On the other instance: the revocation reaches it through the invalidation channel.
  const sub = subscribe(port(s2), a.auth, a.app.id, '0')
  await a.receipts(3)
  await sub.waitFor(3)
  const t0 = Date.now()
  t.equal(await s.svc.deps.apps.revokeKeys(a.app.id), 1)
  const ended = await sub.ended
  t.equal(ended.code, S.UNAUTHENTICATED, `revoked: UNAUTHENTICATED (${ended.details})`)
  t.ok(Date.now() - t0 < 2_000, `within ${Date.now() - t0} ms`)
  await a.receipts(2)
  t.equal(sub.events.length, 3, 'nothing after the revocation (the stream has ended: nothing more can arrive on it)')
  t.equal((await subscribe(port(s2), a.auth, a.app.id).ended).code, S.UNAUTHENTICATED, 'and no new stream')

  const b = await streamApp(s)
  const p = subscribe(port(s2), b.auth, b.app.id, '0')
  await b.receipts(1)
  await p.waitFor(1)
  await s.svc.deps.apps.setPaused(b.app.id, true)
  await s.svc.deps.dir.invalidate(b.app.id)
  t.equal((await p.ended).code, S.PERMISSION_DENIED, 'paused: PERMISSION_DENIED')
  await s.svc.deps.apps.setPaused(b.app.id, false)
  await s.svc.deps.dir.invalidate(b.app.id)

  const m = subscribe(port(s2), b.auth, b.app.id, '1')
  await until('open', async () => (await ativos(s, b.app)) === 1)
  const put = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: b.app.id, modo: 'consulta' },
    headers: basic(b.app.api_key),
  })
  t.equal(put.status, 200)
  t.equal((await m.ended).code, S.FAILED_PRECONDITION, 'mode left grpc: FAILED_PRECONDITION')
  await until('uncounted', async () => (await ativos(s, b.app)) === 0)
  t.equal(s.svc.grpc?.open, 0)
  t.equal(s2.svc.grpc?.open, 0)
})

t.test('mode changes: each event keeps the channel it was written for; the stream resumes across them', async (t) => {
  const s = await startService(t, { grpc: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  await a.receipts(2) // grpc: seq 1, 2
  const put = (body: Record<string, unknown>) =>
    s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: a.app.id, ...body }, headers: basic(a.app.api_key) })
  t.equal((await put({ modo: 'webhook', url: 'https://hooks.example.com/pombo' })).status, 200)
  await a.receipts(2) // webhook: seq 3, 4
  t.equal((await put({ modo: 'consulta' })).status, 200)
  await a.receipts(1) // consulta: no event
  t.equal((await put({ modo: 'grpc' })).status, 200)
  await a.receipts(1) // grpc: seq 5
  const rows = await s.sql<{ seq: string; canal: string; c: string }>(
    "SELECT seq::text, canal, body->>'canal' AS c FROM events WHERE app_id = $1 ORDER BY events.seq",
    [a.app.id],
  )
  t.same(
    rows.map((r) => [r.seq, r.canal, r.c]),
    [
      ['1', 'grpc', 'grpc'],
      ['2', 'grpc', 'grpc'],
      ['3', 'webhook', 'webhook'],
      ['4', 'webhook', 'webhook'],
      ['5', 'grpc', 'grpc'],
    ],
  )
  const sub = subscribe(port(s), a.auth, a.app.id, '0')
  // Events arrive in seq order: with 5 third, 3 and 4 were never carried.
  await sub.waitFor(3)
  t.same(
    sub.events.map((e) => e.seq),
    ['1', '2', '5'],
    'the stream carries the grpc events; the webhook ones stay with the destination queue',
  )
  const pending = await s.call('GET', `/api/v1/confirmacoes?app_id=${a.app.id}`, { headers: basic(a.app.api_key) })
  t.match(pending.json, { modo: 'grpc', fila_pendente: 2, streams_ativos: 1 }, 'the webhook queue still owes its two')
  sub.cancel()
})

t.test('notification.completed carries pm_problema, on the stream and in the webhook body', async (t) => {
  const rx = await WebhookReceiver.start(t)
  const d = await startDelivery(t, {
    env: { PM_LIMIT_IP_PER_MIN: '0', PM_WEBHOOK_ALLOW_PRIVATE: '1' },
    service: { grpc: true, webhookCa: testCa(), webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 2_000 } },
  })
  const streamed = await d.s.createApp()
  const hooked = await d.s.createApp()
  await d.s.call('PUT', '/api/v1/confirmacoes', { body: { app_id: streamed.id, modo: 'grpc' }, headers: basic(streamed.api_key) })
  const put = await d.s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: hooked.id, modo: 'webhook', url: rx.url('/problema') },
    headers: basic(hooked.api_key),
  })
  rx.secret('/problema', put.json.segredo)
  const sub = subscribe(port(d.s), `Basic ${streamed.api_key}`, streamed.id, '0')
  // No FCM credential: every device ends errored and the send names the problem.
  const s1 = await d.send(streamed, { include_player_ids: [await d.device(streamed, 'pp-1')] })
  const s2 = await d.send(hooked, { include_player_ids: [await d.device(hooked, 'pp-2')] })
  await d.closed(s1)
  await d.closed(s2)
  const [done] = await sub.waitFor(1)
  t.equal(done?.evento, 'notification.completed')
  t.equal(done?.player_id, '', 'no player on notification.completed')
  t.match(body(done as StreamEvent), {
    evento: 'notification.completed',
    notification_id: s1,
    errored: 1,
    recipients: 1,
    pm_problema: 'credencial_ausente:fcm',
    canal: 'grpc',
  })
  const [hook] = (await rx.waitFor(1, '/problema', 20_000)).filter((r) => r.status === 200)
  t.ok(hook?.signed, 'signed')
  t.match(
    hook?.json,
    {
      evento: 'notification.completed',
      notification_id: s2,
      errored: 1,
      pm_problema: 'credencial_ausente:fcm',
      canal: 'webhook',
    },
    'the webhook body too, as delivered',
  )
  // With a credential, nothing went wrong: no pm_problema key at all.
  await d.fcmFor(streamed)
  const s3 = await d.send(streamed, { include_player_ids: [await d.device(streamed, 'pp-3')] })
  await d.closed(s3)
  const [, ok] = await sub.waitFor(2)
  t.match(body(ok as StreamEvent), { notification_id: s3, successful: 1 })
  t.notOk('pm_problema' in body(ok as StreamEvent), 'absent when there is none')
  sub.cancel()
})

t.test('retention keeps what a recently active stream has not been sent', async (t) => {
  const s = await startService(t, { grpc: true, dispatcher: true, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const idle = await streamApp(s)
  await a.receipts(6)
  await idle.receipts(3)
  const sub = subscribe(port(s), a.auth, a.app.id, '4') // reads 5 and 6
  await sub.waitFor(2)
  sub.cancel()
  await until('position written at close', async () => {
    const [r] = await s.sql('SELECT last_seq::text AS l FROM event_streams WHERE app_id = $1', [a.app.id])
    return r?.l === '6'
  })
  // A second, older position: a consumer that stopped at 2 three days ago.
  await s.sql(
    `INSERT INTO event_streams (id, app_id, last_seq, opened_at, seen_at) VALUES (gen_random_uuid(), $1, 2, now() - interval '3 days', now() - interval '3 days')`,
    [a.app.id],
  )
  await s.sql("UPDATE events SET created_at = now() - interval '10 days'")
  const dispatcher = s.svc.dispatcher
  if (!dispatcher) throw new Error('no dispatcher')
  await dispatcher.pruneNow(30, 7)
  const left = async (app: { id: string }) =>
    (await s.sql<{ seq: string }>('SELECT seq::text FROM events WHERE app_id = $1 ORDER BY events.seq', [app.id])).map(
      (r) => r.seq,
    )
  t.same(await left(a.app), ['3', '4', '5', '6'], 'old events after the lowest recent position stay')
  t.same(await left(idle.app), [], 'an app no stream read recently keeps nothing older than the retention')
  await s.sql("UPDATE event_streams SET seen_at = now() - interval '8 days' WHERE last_seq = 2")
  await dispatcher.pruneNow(30, 7)
  t.same(await left(a.app), [], 'once that consumer has been gone longer than the retention, its position no longer holds events')
  t.same(await s.sql('SELECT 1 FROM event_streams WHERE last_seq = 2'), [], 'and the position itself is dropped')
  // A client reconnecting in a loop leaves many closed positions: past 100 they fold into one, the lowest.
  await s.sql(
    `INSERT INTO event_streams (id, app_id, last_seq, opened_at, seen_at)
     SELECT gen_random_uuid(), $1, 100 + i, now() - interval '2 hours', now() - interval '2 hours' + i * interval '1 second'
       FROM generate_series(1, 150) i`,
    [idle.app.id],
  )
  await dispatcher.pruneNow(30, 7)
  const folded = await s.sql<{ n: number; low: string }>(
    'SELECT count(*)::int AS n, min(last_seq)::text AS low FROM event_streams WHERE app_id = $1',
    [idle.app.id],
  )
  t.same(folded, [{ n: 1, low: '101' }], '150 closed positions folded into the lowest')
})

t.test("a rotated key's stream lives through the overlap and ends when the old key expires", async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, { grpc: true, clock, env: { PM_LIMIT_IP_PER_MIN: '0' } })
  const a = await streamApp(s)
  const old = subscribe(port(s), a.auth, a.app.id, '0')
  await a.receipts(1)
  await old.waitFor(1)
  const rotated = await s.svc.deps.apps.rotate(a.app.id)
  const fresh = subscribe(port(s), `Basic ${rotated.api_key}`, a.app.id, '0')
  await a.receipts(1)
  await old.waitFor(2)
  await fresh.waitFor(2)
  t.same(old.events, fresh.events, 'both keys stream during the overlap')
  clock.advance(24 * 3600_000 + 1_000)
  const ended = await old.ended
  t.equal(ended.code, S.UNAUTHENTICATED, `the old key's stream ends once it expires (${ended.details})`)
  await a.receipts(1)
  await fresh.waitFor(3)
  t.equal(old.events.length, 2, 'nothing more on the old one')
  fresh.cancel()
})
