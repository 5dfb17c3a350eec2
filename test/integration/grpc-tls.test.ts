// The confirmation stream over TLS (PM_GRPC_TLS_CERT / PM_GRPC_TLS_KEY), through a real service and a real gRPC
// client: a client that trusts the certificate's CA subscribes and receives its events; a plaintext client gets
// nothing (API keys never travel in clear to a TLS server); one file without the other, or an unreadable one, stops
// the start with the setting's name.
import * as grpc from '@grpc/grpc-js'
import t from 'tap'
import { confirmationStream } from '../../src/confirmations/proto'
import { loadConfig } from '../../src/core/config'
import { testTls } from '../fakes/tls'
import { streamApp, subscribe, until } from '../helpers/grpc'
import { startService } from '../helpers/service'

function tlsEnv() {
  const tls = testTls()
  return { PM_GRPC_TLS_CERT: `${tls.dir}/server.pem`, PM_GRPC_TLS_KEY: `${tls.dir}/server.key` }
}

t.test('with a certificate the stream speaks TLS: a trusting client subscribes, a plaintext one gets nothing', async (t) => {
  const s = await startService(t, { grpc: true, env: tlsEnv() })
  const port = s.svc.grpc?.port as number
  const a = await streamApp(s)
  const Ctor = confirmationStream()
  const secure = new Ctor(`localhost:${port}`, grpc.credentials.createSsl(Buffer.from(testTls().caPem)))
  t.teardown(() => secure.close())
  const sub = subscribe(port, a.auth, a.app.id, '0', secure)
  t.teardown(() => sub.cancel())
  await a.receipts(2)
  await until('two events over TLS', () => sub.events.length >= 2)
  t.ok(sub.events.length >= 2, 'events arrive over TLS')

  const plain = subscribe(port, a.auth, a.app.id, '0')
  const ended = await plain.ended
  t.equal(ended.code, grpc.status.UNAVAILABLE, 'a plaintext client cannot talk to it')
  t.equal(plain.events.length, 0)
  t.ok(
    s.logs.some((l) => l.msg === 'confirmation stream listening (TLS)' && l.tls === true),
    'the start-up log says TLS',
  )
})

t.test('without a certificate the stream is plaintext, and the log says to keep it behind TLS', async (t) => {
  const s = await startService(t, { grpc: true })
  t.ok(s.logs.some((l) => l.tls === false && /plaintext: keep it behind TLS/.test(String(l.msg))))
})

t.test('one file without the other, or an unreadable one, is refused by name', async (t) => {
  const env = tlsEnv()
  t.throws(() => loadConfig({ PM_GRPC_TLS_CERT: env.PM_GRPC_TLS_CERT }), /PM_GRPC_TLS_CERT and PM_GRPC_TLS_KEY/)
  t.throws(() => loadConfig({ PM_GRPC_TLS_KEY: env.PM_GRPC_TLS_KEY }), /PM_GRPC_TLS_CERT and PM_GRPC_TLS_KEY/)
  await t.rejects(
    startService(t, { grpc: true, env: { ...env, PM_GRPC_TLS_KEY: '/nonexistent/key.pem' } }),
    /PM_GRPC_TLS_KEY: cannot read \/nonexistent\/key\.pem \(ENOENT\)/,
  )
})
