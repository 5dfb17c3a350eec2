// `pombo credentials …` through the real entry point (docs/spec/contract.md, the spec, Delivery credentials): stored sealed,
// never printed, firebase_params served at once, the APNs environment switched alone, deleted, and every bad input
// refused in one line with nothing written.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { type CredentialChange, loadCredential, onCredentialChange } from '../../src/credentials/store'
import { Keys } from '../../src/redis/keys'
import { Vault } from '../../src/core/vault'
import { allRefused, oneLineFailure, pombo, type Run } from '../helpers/cli'
import { googleServices, p8Pem, rsaPem, serviceAccount } from '../helpers/credentials'
import { startService, type TestService, VAULT_KEY } from '../helpers/service'

const vault = new Vault(Buffer.from(VAULT_KEY, 'hex'))
const UNKNOWN_APP = '00000000-0000-4000-8000-000000000000'

/** A directory of input files, removed at teardown. */
function files(t: Test): (name: string, content: unknown) => string {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-cred-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return (name, content) => {
    const path = join(dir, name)
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2))
    return path
  }
}

/** Every credential change published on the service's Redis, as it arrives. */
async function changes(t: Test, s: TestService): Promise<Array<CredentialChange | 'all'>> {
  const seen: Array<CredentialChange | 'all'> = []
  const stop = await onCredentialChange(s.svc.deps.redis, new Keys(s.cfg.redisPrefix), (c) => seen.push(c))
  t.teardown(stop)
  return seen
}

/** Polls (no sleep of a fixed length) until `n` changes arrived; pub/sub delivery is asynchronous. */
async function waitFor(seen: unknown[], n: number): Promise<void> {
  for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 10))
}

/** The whole table as text, sealed bytes included, for "no secret appears" checks. */
async function tableDump(s: TestService): Promise<string> {
  const rows = await s.sql('SELECT * FROM credentials')
  return rows
    .map((r) => `${r.app_id} ${r.platform} ${Buffer.from(r.sealed).toString('latin1')} ${JSON.stringify(r.meta)}`)
    .join('\n')
}

const credentialCount = async (s: TestService) => (await s.sql('SELECT count(*)::int AS n FROM credentials'))[0]?.n

t.test('fcm: validated, stored sealed, only meta printed, firebase_params served at once', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const file = files(t)
  const seen = await changes(t, s)
  const fb = `/api/v1/apps/${app.id}/firebase_params`
  t.same((await s.call('GET', fb)).json, { android: null, ios: null }, 'cached by the service before the change')

  const sa = serviceAccount('pombo-demo')
  const r = await pombo(s, [
    'credentials',
    'fcm',
    app.id,
    file('sa.json', sa),
    '--config',
    file('google-services.json', googleServices('pombo-demo', ['com.example.loja', 'com.example.entregador'])),
    '--package',
    'com.example.entregador',
  ])
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.match(out, {
    id: app.id,
    plataforma: 'fcm',
    project_id: 'pombo-demo',
    client_email: sa.client_email,
    token_uri: 'https://oauth2.googleapis.com/token',
    firebase_params: { package_name: 'com.example.entregador' },
    atualizada_em: /\+00:00$/,
  })
  t.notOk(r.stdout.includes('PRIVATE KEY'), 'the key is never printed')

  const pemLines = rsaPem()
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
  const dump = await tableDump(s)
  t.notOk(dump.includes('PRIVATE KEY'), 'no PEM armour in the table')
  t.notOk(
    pemLines.some((l) => dump.includes(l)),
    'no line of the private key in the table',
  )
  const stored = await loadCredential(s.svc.deps.db, vault, app.id, 'fcm')
  t.same(stored?.credential, sa, 'opens with the vault to exactly the file that was given')
  t.equal(stored?.meta.client_email, sa.client_email)

  t.same((await s.call('GET', fb)).json, {
    android: {
      project_id: 'pombo-demo',
      sender_id: '123456789012',
      app_id: '1:123456789012:android:aaaaaaaaaaaaaaaaaaaaa2',
      api_key: 'AIzaSyD-public-key-1',
      package_name: 'com.example.entregador',
    },
    ios: null,
  })
  await waitFor(seen, 1)
  t.same(seen, [{ appId: app.id, platform: 'fcm' }], 'workers are told on the credentials channel')

  // Replacing the service account alone keeps the public parameters.
  const again = await pombo(s, ['credentials', 'fcm', app.id, file('sa2.json', serviceAccount('pombo-demo'))])
  t.equal(again.code, 0, again.stderr)
  t.notOk('firebase_params' in JSON.parse(again.stdout))
  t.equal((await s.call('GET', fb)).json.android.package_name, 'com.example.entregador')
  t.equal(await credentialCount(s), 1, 'replaced, not added')
})

t.test('apns: stored, then the environment switched without the key, effective at once', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const file = files(t)
  const seen = await changes(t, s)
  const p8 = p8Pem()
  const args = [
    '--p8',
    file('AuthKey.p8', p8),
    '--key-id',
    'ABC123DEFG',
    '--team-id',
    'TEAM123456',
    '--bundle-id',
    'com.example.loja',
  ]

  oneLineFailure(t, await pombo(s, ['credentials', 'apns-env', app.id, 'production']), /no APNs credential/)

  const r = await pombo(s, ['credentials', 'apns', app.id, ...args, '--env', 'sandbox'])
  t.equal(r.code, 0, r.stderr)
  t.match(JSON.parse(r.stdout), {
    id: app.id,
    plataforma: 'apns',
    key_id: 'ABC123DEFG',
    team_id: 'TEAM123456',
    bundle_id: 'com.example.loja',
    env: 'sandbox',
  })
  t.notOk(r.stdout.includes('PRIVATE KEY'))
  const dump = await tableDump(s)
  t.notOk(
    p8
      .split('\n')
      .filter((l) => l && !l.startsWith('-----'))
      .some((l) => dump.includes(l)),
    'the .p8 is not in the table',
  )
  const before = await loadCredential(s.svc.deps.db, vault, app.id, 'apns')
  t.same(before?.credential, { p8, keyId: 'ABC123DEFG', teamId: 'TEAM123456', bundleId: 'com.example.loja', env: 'sandbox' })

  const sw = await pombo(s, ['credentials', 'apns-env', app.id, 'production'])
  t.equal(sw.code, 0, sw.stderr)
  t.match(JSON.parse(sw.stdout), { id: app.id, plataforma: 'apns', env: 'production', key_id: 'ABC123DEFG' })
  const after = await loadCredential(s.svc.deps.db, vault, app.id, 'apns')
  t.same(after?.credential, { ...before?.credential, env: 'production' }, 'same key, new environment')
  t.equal(after?.meta.env, 'production')
  t.ok((after?.updatedAt.getTime() ?? 0) >= (before?.updatedAt.getTime() ?? Infinity))
  await waitFor(seen, 2)
  t.same(
    seen,
    [
      { appId: app.id, platform: 'apns' },
      { appId: app.id, platform: 'apns' },
    ],
    'each change is published',
  )

  await allRefused(t, [
    [pombo(s, ['credentials', 'apns-env', app.id, 'prod']), /sandbox or production/],
    [pombo(s, ['credentials', 'apns-env', app.id]), /sandbox or production/],
  ])
  t.equal((await loadCredential(s.svc.deps.db, vault, app.id, 'apns'))?.credential.env, 'production')
})

t.test('delete: the platform stops at once; the other stays; deleting twice is harmless', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const file = files(t)
  const seen = await changes(t, s)
  t.equal(
    (
      await pombo(s, [
        'credentials',
        'fcm',
        app.id,
        file('sa.json', serviceAccount()),
        '--config',
        file('g.json', googleServices()),
      ])
    ).code,
    0,
  )
  const apnsArgs = [
    '--p8',
    file('k.p8', p8Pem()),
    '--key-id',
    'ABC123DEFG',
    '--team-id',
    'TEAM123456',
    '--bundle-id',
    'com.x.y',
    '--env',
    'production',
  ]
  t.equal((await pombo(s, ['credentials', 'apns', app.id, ...apnsArgs])).code, 0)

  const del = await pombo(s, ['credentials', 'delete', app.id, 'fcm'])
  t.equal(del.code, 0, del.stderr)
  t.same(JSON.parse(del.stdout), { id: app.id, plataforma: 'fcm', removida: true })
  t.equal(await loadCredential(s.svc.deps.db, vault, app.id, 'fcm'), null)
  t.ok(await loadCredential(s.svc.deps.db, vault, app.id, 'apns'), 'the other platform is untouched')
  t.equal(
    (await s.call('GET', `/api/v1/apps/${app.id}/firebase_params`)).json.android.project_id,
    'pombo-demo',
    'public parameters stay',
  )
  await waitFor(seen, 3)
  t.same(seen[2], { appId: app.id, platform: 'fcm' })

  const twice = await pombo(s, ['credentials', 'delete', app.id, 'fcm'])
  t.same(JSON.parse(twice.stdout), { id: app.id, plataforma: 'fcm', removida: false })
  await allRefused(t, [
    [pombo(s, ['credentials', 'delete', app.id, 'ios']), /fcm or apns/],
    [pombo(s, ['credentials', 'delete', UNKNOWN_APP, 'fcm']), /App não encontrado/],
  ])
})

t.test('bad input: one line, exit 2, nothing written', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const file = files(t)
  const sa = file('sa.json', serviceAccount('pombo-demo'))
  const two = file('two.json', googleServices('pombo-demo', ['com.a.b', 'com.c.d']))
  const legacy = 'AAAAq1w2e3r:APA91bHPRgkFLJu6b4Zk3xRzCzT8sMgEvQ8d7hJk3HcJQe8Yc7dPq2sJvKxM0n1oTzWuYb4Rk5Lm6Nn7Pp8Qq9Rr0Ss'
  const fcm = (...a: string[]) => pombo(s, ['credentials', 'fcm', ...a])

  const p8 = file('k.p8', p8Pem())
  const apns = (over: Record<string, string>) => {
    const o = {
      '--p8': p8,
      '--key-id': 'ABC123DEFG',
      '--team-id': 'TEAM123456',
      '--bundle-id': 'com.example.loja',
      '--env': 'sandbox',
      ...over,
    }
    return pombo(s, ['credentials', 'apns', app.id, ...Object.entries(o).flat()])
  }
  // Every refusal is a process of its own and none writes anything: they run side by side, checked in order.
  const refusals: Array<[Promise<Run>, RegExp]> = [
    [fcm(app.id, file('bad-email.json', serviceAccount('pombo-demo', { client_email: 'a@gmail.com' }))), /client_email/],
    [fcm(app.id, file('flat.json', serviceAccount('pombo-demo', { private_key: rsaPem().replace(/\n/g, '') }))), /line breaks/],
    [fcm(app.id, sa, '--config', two), /several Android apps \(com\.a\.b, com\.c\.d\)/],
    [fcm(app.id, sa, '--config', two, '--package', 'com.x.y'), /--package: com\.x\.y is not in/],
    [fcm(app.id, sa, '--config', file('other.json', googleServices('outro-projeto'))), /project outro-projeto.*pombo-demo/],
    [fcm(app.id, sa, '--package', 'com.a.b'), /--package: only meaningful with --config/],
    [fcm(app.id, join(tmpdir(), 'does-not-exist.json')), /cannot read .*ENOENT/],
    [fcm(app.id), /SERVICE_ACCOUNT\.json: required/],
    [fcm('not-a-uuid', sa), /APP_ID: expected a UUID/],
    [fcm(UNKNOWN_APP, sa), /App não encontrado/],
    [fcm(app.id, sa, '--bogus'), /bogus/],
    [
      pombo(s, ['credentials', 'fcm', app.id, sa, '--config', two, '--package', 'com.a.b'], { PM_VAULT_KEY: '' }),
      /Cofre|PM_VAULT_KEY/,
    ],
    [apns({ '--p8': file('notes.txt', 'ABC123DEFG\n') }), /--p8: expected the \.p8 file contents/],
    [apns({ '--p8': sa }), /--p8: not a readable P-256/],
    [apns({ '--key-id': 'ABC123' }), /--key-id/],
    [apns({ '--team-id': 'TEAM-12345' }), /--team-id/],
    [apns({ '--bundle-id': 'loja' }), /--bundle-id/],
    [apns({ '--env': 'prod' }), /--env: expected sandbox or production/],
    [pombo(s, ['credentials', 'frobnicate']), /unknown credentials command/],
  ]
  const legacyRun = await fcm(app.id, file('server-key.txt', `${legacy}\n`))
  oneLineFailure(t, legacyRun, /legacy FCM server key/)
  t.notOk(legacyRun.stderr.includes('APA91b'), 'the legacy key is not echoed')
  for (const [run, pattern] of refusals) oneLineFailure(t, await run, pattern)

  t.equal(await credentialCount(s), 0, 'no credential was written')
  t.same((await s.sql('SELECT firebase_params FROM apps'))[0]?.firebase_params, null, 'firebase_params untouched')
})
