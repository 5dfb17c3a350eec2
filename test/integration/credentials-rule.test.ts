// Credentials cannot aim our servers elsewhere (issue #31, point 2): a service account's token_uri is Google's token
// endpoint, or an https URL on the host PM_FCM_BASE_URL names when that is a test provider. Refused by name when
// stored (the CLI, the dashboard), refused again before every token request (a credential stored before the rule),
// and the dashboard's connection test shows a provider's reason code and our words, never what a remote answered.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { saveCredential } from '../../src/credentials/store'
import { parseServiceAccount } from '../../src/credentials/validate'
import { Vault } from '../../src/core/vault'
import { oneLineFailure, pombo } from '../helpers/cli'
import { serviceAccount } from '../helpers/credentials'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { startDelivery } from '../helpers/delivery'
import { startService, VAULT_KEY } from '../helpers/service'

const vault = new Vault(Buffer.from(VAULT_KEY, 'hex'))
const SENHA = 'uma-senha-bem-longa'

/** A TCP listener on every local address that counts who connects to it: an address nothing may call. */
async function trap(t: Test): Promise<{ port: number; connections: () => number }> {
  let n = 0
  const sockets = new Set<Socket>()
  const srv = createServer((s) => {
    n++
    sockets.add(s)
    s.destroy()
  })
  await new Promise<void>((resolve) => srv.listen(0, resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  return { port: (srv.address() as { port: number }).port, connections: () => n }
}

function files(t: Test): (name: string, content: unknown) => string {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-rule-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return (name, content) => {
    const path = join(dir, name)
    writeFileSync(path, JSON.stringify(content))
    return path
  }
}

t.test('pombo credentials fcm refuses a token_uri outside the rule, by name, and stores nothing', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const file = files(t)
  const count = async () => (await s.sql('SELECT count(*)::int AS n FROM credentials'))[0]?.n
  const fcm = (tokenUri: string, base: string) =>
    pombo(s, ['credentials', 'fcm', app.id, file('sa.json', serviceAccount('pombo-demo', { token_uri: tokenUri }))], {
      PM_FCM_BASE_URL: base,
    })

  // The default settings: Google's FCM, so Google's token endpoint only.
  for (const uri of ['https://127.0.0.1:8443/token', 'https://169.254.169.254/token', 'https://[::1]/token']) {
    oneLineFailure(
      t,
      await fcm(uri, ''),
      /pombo: SERVICE_ACCOUNT\.json: token_uri must be Google's token endpoint https:\/\/oauth2\.googleapis\.com\/token; got an address on /,
    )
  }
  t.equal(await count(), 0, 'nothing stored')
  t.equal((await fcm('https://oauth2.googleapis.com/token', '')).code, 0, "Google's endpoint is stored")

  // A test provider: an https URL on its host, any port; no other host.
  t.equal((await fcm('https://127.0.0.1:8443/token', 'https://127.0.0.1:9443')).code, 0, "on the test provider's host")
  oneLineFailure(
    t,
    await fcm('https://localhost:8443/token', 'https://127.0.0.1:9443'),
    /token_uri must be .* or an https URL on 127\.0\.0\.1 \(the host of PM_FCM_BASE_URL\); got an address on localhost/,
  )
  const [row] = await s.sql<{ meta: { token_uri: string } }>("SELECT meta FROM credentials WHERE platform = 'fcm'")
  t.equal(row?.meta.token_uri, 'https://127.0.0.1:8443/token', 'the refused file replaced nothing')
})

async function world(t: Test) {
  const w = await startDelivery(t, { service: { roles: ['api', 'worker', 'dashboard'] } })
  const org = await makeOrg(w.s, 'Loja', 'pro')
  await makePerson(w.s, 'ana@example.com', SENHA, org)
  const app = await w.s.svc.deps.apps.create({ name: 'Loja', orgId: org })
  const c = new DashClient(w.s.dashboardUrl)
  if ((await c.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
  const appPath = `/apps/${app.id}`
  const act = async (action: string, multipart?: FormData) => {
    const r = await c.submit(appPath, `${appPath}/${action}`, {}, { multipart })
    return r.status === 303 ? c.get(appPath) : r
  }
  return { ...w, app, act }
}

t.test('the dashboard refuses it by name; one stored before is refused at every use, and nothing is called', async (t) => {
  const w = await world(t)
  const listener = await trap(t)
  // PM_FCM_BASE_URL is the fake (127.0.0.1): a token_uri on another host (localhost) is outside the rule.
  const aimed = { ...w.fcm.serviceAccount('pombo-rule'), token_uri: `https://localhost:${listener.port}/token` }

  const fd = new FormData()
  fd.set('conta', new File([JSON.stringify(aimed)], 'conta.json'))
  const refused = await w.act('credenciais/fcm', fd)
  t.equal(refused.status, 400)
  t.match(refused.text, /Conta de serviço \(JSON\): token_uri must be .* or an https URL on 127\.0\.0\.1/)
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM credentials')).at(0)?.n, 0, 'nothing stored')

  // Stored before the rule existed (straight into the table, as an older release did).
  const { credential, meta } = parseServiceAccount(JSON.stringify(aimed))
  await saveCredential(w.s.svc.deps.db, vault, w.app.id, 'fcm', credential, meta)

  const tested = await w.act('credenciais/fcm/testar')
  t.match(tested.text, /FCM: Falhou: service account refused: token_uri must be/)

  const device = await w.device(w.app, 'rule-device-token')
  const sendId = await w.send(w.app, { include_player_ids: [device] })
  const row = await w.closed(sendId)
  t.match(row.problem, /^credencial_recusada:fcm:service account refused: token_uri must be/, 'a credential problem')
  t.equal(row.errored, 1)
  t.equal(listener.connections(), 0, 'neither the test nor the worker called the address')
  t.equal(w.fcm.tokensIssued, 0, 'nor posted the assertion anywhere else')
})

t.test("the connection test shows the provider's reason code and our words, never the remote text", async (t) => {
  const w = await world(t)
  const account = w.fcm.serviceAccount('pombo-rule')
  const save = async (over: Record<string, unknown>) => {
    const { credential, meta } = parseServiceAccount(JSON.stringify({ ...account, ...over }))
    await w.creds.save(w.app.id, 'fcm', credential, meta)
  }

  // FCM's refusal carries a message naming resources: only its code is shown.
  await save({ project_id: 'someone-else' })
  const denied = await w.act('credenciais/fcm/testar')
  t.match(denied.text, /FCM: Falhou: PERMISSION_DENIED — a conta de serviço não tem permissão/)
  t.notMatch(denied.text, /cloudmessaging|cloudresourcemanager|denied on resource/, 'not the message FCM sent')

  // The token endpoint's refusal carries an error_description: only the OAuth error code is shown.
  await save({})
  w.fcm.revoke(account.client_email as string)
  const revoked = await w.act('credenciais/fcm/testar')
  t.match(revoked.text, /FCM: Falhou: oauth invalid_grant — o Google recusou a conta de serviço/)
  t.notMatch(revoked.text, /Invalid (grant|JWT)|account not found/, 'not the description the endpoint sent')

  // Nothing answers on that port: which kind of failure, not the error's text (no port scan through the page).
  await save({ token_uri: 'https://127.0.0.1:1/token' })
  const down = await w.act('credenciais/fcm/testar')
  t.match(down.text, /FCM: Falhou: sem resposta do provedor \(connection\)\. Confira a rede/)
  t.notMatch(down.text, /ECONNREFUSED|127\.0\.0\.1:1\b/)
})
