// Every row of the spec, Delivery credentials, the legacy server key, and google-services.json → firebase_params.
import { generateKeyPairSync } from 'node:crypto'
import t, { type Test } from 'tap'
import {
  CredentialError,
  DEFAULT_TOKEN_URI,
  parseApns,
  parseApnsEnv,
  parseGoogleServices,
  parsePlatform,
  parseServiceAccount,
} from '../../src/credentials/validate'
import { googleServices, p8Pem, rsaPem, serviceAccount } from '../helpers/credentials'

/** Asserts a one-line CredentialError matching `pattern` that does not quote `secret`. */
function refused(t: Test, fn: () => unknown, pattern: RegExp, secret?: string): void {
  try {
    fn()
    t.fail(`expected a refusal matching ${pattern}`)
  } catch (err) {
    t.ok(err instanceof CredentialError, 'a CredentialError')
    const msg = (err as Error).message
    t.match(msg, pattern)
    t.notOk(msg.includes('\n'), `one line: ${msg}`)
    if (secret) t.notOk(msg.includes(secret), 'the secret is not quoted')
  }
}

const sa = (over: Record<string, unknown> = {}) => JSON.stringify(serviceAccount('pombo-demo', over), null, 2)

t.test('service account: a file as Google issues it is accepted, whole', async (t) => {
  const { credential, meta } = parseServiceAccount(sa())
  t.equal(credential.project_id, 'pombo-demo')
  t.equal(credential.private_key, rsaPem())
  t.equal(credential.type, 'service_account', 'other fields are kept as they came')
  t.same(meta, {
    project_id: 'pombo-demo',
    client_email: 'firebase-adminsdk-x1y2z@pombo-demo.iam.gserviceaccount.com',
    token_uri: 'https://oauth2.googleapis.com/token',
    private_key_id: '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c',
  })
  t.notOk(JSON.stringify(meta).includes('PRIVATE KEY'), 'meta holds nothing secret')
})

t.test('service account: the whole JSON on one line is fine (\\n escapes parse to real line breaks)', async (t) => {
  const oneLine = JSON.stringify(serviceAccount())
  t.notOk(oneLine.includes('\n'))
  t.ok(parseServiceAccount(oneLine).credential.private_key.includes('\n'))
  t.ok(parseServiceAccount(`\uFEFF${oneLine}\r\n`), 'a BOM and a trailing CRLF are tolerated')
})

t.test('service account: token_uri https, defaulted when absent', async (t) => {
  const doc = serviceAccount()
  delete doc.token_uri
  const { credential, meta } = parseServiceAccount(JSON.stringify(doc))
  t.equal(credential.token_uri, DEFAULT_TOKEN_URI)
  t.equal(meta.token_uri, 'https://oauth2.googleapis.com/token')
  t.equal(parseServiceAccount(sa({ token_uri: 'https://127.0.0.1:4443/token' })).meta.token_uri, 'https://127.0.0.1:4443/token')
  refused(t, () => parseServiceAccount(sa({ token_uri: 'http://oauth2.googleapis.com/token' })), /token_uri must be an https URL/)
  refused(t, () => parseServiceAccount(sa({ token_uri: 'not a url' })), /token_uri/)
  refused(t, () => parseServiceAccount(sa({ token_uri: 42 })), /token_uri/)
  refused(t, () => parseServiceAccount(sa({ token_uri: '' })), /token_uri/)
})

t.test('service account: project_id is a non-empty string', async (t) => {
  for (const v of [undefined, '', '   ', 7, null, ['x']]) {
    refused(t, () => parseServiceAccount(sa({ project_id: v })), /project_id must be a non-empty string/)
  }
})

t.test('service account and google-services.json: a value that cannot be stored exactly is refused by path', async (t) => {
  refused(t, () => parseServiceAccount(sa({ project_id: 'demo\ud800' })), /project_id .*surrogate/)
  refused(t, () => parseServiceAccount(sa({ extra: { deep: 'a\u0000b' } })), /extra\.deep .*U\+0000/)
  refused(t, () => parseGoogleServices(gs(undefined, 'demo\udc00')), /project_info\.project_id .*surrogate/)
})

t.test('service account: client_email has @ and the service-account suffix', async (t) => {
  for (const v of [
    'firebase-adminsdk.pombo-demo.iam.gserviceaccount.com', // no @
    'someone@gmail.com',
    'x@pombo-demo.iam.gserviceaccount.com.evil.com',
    'x@pombo-demo.gserviceaccount.com',
    undefined,
    3,
  ]) {
    refused(
      t,
      () => parseServiceAccount(sa({ client_email: v })),
      /client_email must contain @ and end with \.iam\.gserviceaccount\.com/,
    )
  }
})

t.test('service account: private_key is a PEM with the BEGIN PRIVATE KEY block and its line breaks', async (t) => {
  const pem = rsaPem()
  const body = pem.split('\n').slice(1, -2).join('')
  refused(t, () => parseServiceAccount(sa({ private_key: undefined })), /BEGIN PRIVATE KEY/)
  refused(t, () => parseServiceAccount(sa({ private_key: body })), /BEGIN PRIVATE KEY/, body)
  const pkcs1 = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()
  refused(t, () => parseServiceAccount(sa({ private_key: pkcs1 })), /BEGIN PRIVATE KEY/, 'MII')
  // The line breaks lost: one line, or the escapes doubled so that parsing leaves a literal backslash-n.
  const flat = pem.replace(/\n/g, '')
  refused(t, () => parseServiceAccount(sa({ private_key: flat })), /lost its line breaks/, body.slice(0, 40))
  const doubled = JSON.stringify(serviceAccount()).replace(/\\n/g, '\\\\n')
  refused(t, () => parseServiceAccount(doubled), /lost its line breaks \(\\n escaped twice\)/, body.slice(0, 40))
  // The block is there but the key inside is not an RSA key FCM can sign with.
  const broken = pem.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!!!!!!!!!!!!!!!!!')
  refused(t, () => parseServiceAccount(sa({ private_key: broken })), /not a readable RSA private key/)
  refused(t, () => parseServiceAccount(sa({ private_key: p8Pem() })), /RSA/)
})

t.test('service account: the legacy single-line server key is refused by name, without quoting it', async (t) => {
  const legacy = 'AAAAq1w2e3r:APA91bHPRgkFLJu6b4Zk3xRzCzT8sMgEvQ8d7hJk3HcJQe8Yc7dPq2sJvKxM0n1oTzWuYb4Rk5Lm6Nn7Pp8Qq9Rr0Ss'
  refused(t, () => parseServiceAccount(legacy), /legacy FCM server key.*not accepted/, 'APA91b')
  refused(t, () => parseServiceAccount(`${legacy}\n`), /legacy FCM server key/, 'APA91b')
  refused(t, () => parseServiceAccount('AIzaSyA-1234567890abcdefghijklmnopqrstu'), /legacy FCM server key/, 'AIzaSy')
  refused(t, () => parseServiceAccount(JSON.stringify(legacy)), /legacy FCM server key/, 'APA91b')
})

t.test('service account: other wrong files', async (t) => {
  refused(t, () => parseServiceAccount(''), /empty/)
  refused(t, () => parseServiceAccount(' \n '), /empty/)
  refused(t, () => parseServiceAccount('{\n"project_id": "x",\n'), /not valid JSON/)
  refused(t, () => parseServiceAccount(p8Pem()), /not valid JSON/, 'PRIVATE')
  refused(t, () => parseServiceAccount('[1, 2]'), /expected a JSON object/)
  refused(t, () => parseServiceAccount(JSON.stringify(googleServices())), /google-services\.json.*--config/)
})

const gs = (packages?: string[], projectId = 'pombo-demo') => JSON.stringify(googleServices(projectId, packages))

t.test('google-services.json: one Android app yields the five public parameters', async (t) => {
  t.same(parseGoogleServices(gs()), {
    project_id: 'pombo-demo',
    sender_id: '123456789012',
    app_id: '1:123456789012:android:aaaaaaaaaaaaaaaaaaaaa1',
    api_key: 'AIzaSyD-public-key-0',
    package_name: 'com.example.loja',
  })
  t.equal(parseGoogleServices(gs(), 'com.example.loja').package_name, 'com.example.loja', '--package may name the only one')
})

t.test('google-services.json: several Android apps need --package', async (t) => {
  const text = gs(['com.example.loja', 'com.example.entregador'])
  refused(t, () => parseGoogleServices(text), /several Android apps \(com\.example\.loja, com\.example\.entregador\).*--package/)
  const chosen = parseGoogleServices(text, 'com.example.entregador')
  t.equal(chosen.package_name, 'com.example.entregador')
  t.equal(chosen.app_id, '1:123456789012:android:aaaaaaaaaaaaaaaaaaaaa2')
  t.equal(chosen.api_key, 'AIzaSyD-public-key-1')
  refused(t, () => parseGoogleServices(text, 'com.example.outro'), /--package: com\.example\.outro is not in/)
})

t.test('google-services.json: wrong files', async (t) => {
  const base = googleServices()
  // biome-ignore lint/suspicious/noExplicitAny: the test edits an arbitrary JSON shape
  const edit = (fn: (d: any) => void) => {
    const d = structuredClone(base)
    fn(d)
    return JSON.stringify(d)
  }
  refused(t, () => parseGoogleServices('nope'), /not valid JSON/)
  refused(t, () => parseGoogleServices(JSON.stringify(serviceAccount())), /expected project_info and client/)
  refused(t, () => parseGoogleServices(gs([])), /no Android app/)
  refused(
    t,
    () =>
      parseGoogleServices(
        edit((d) => {
          d.project_info.project_id = ''
        }),
      ),
    /project_id/,
  )
  refused(
    t,
    () =>
      parseGoogleServices(
        edit((d) => {
          d.project_info.project_number = 'abc'
        }),
      ),
    /project_number/,
  )
  refused(
    t,
    () =>
      parseGoogleServices(
        edit((d) => {
          d.project_info.project_number = 123
        }),
      ),
    /project_number/,
  )
  for (const id of ['1:123:ios:abc', '123:android:abc', '1:x:android:abc', '', undefined]) {
    refused(
      t,
      () =>
        parseGoogleServices(
          edit((d) => {
            d.client[0].client_info.mobilesdk_app_id = id
          }),
        ),
      /1:<number>:android:<hash>/,
    )
  }
  refused(
    t,
    () =>
      parseGoogleServices(
        edit((d) => {
          d.client[0].api_key = []
        }),
      ),
    /api_key\[0\]\.current_key/,
  )
  refused(
    t,
    () =>
      parseGoogleServices(
        edit((d) => {
          d.client[0].api_key = [{ current_key: '' }]
        }),
      ),
    /current_key/,
  )
})

const apns = (over: Partial<Record<'p8' | 'keyId' | 'teamId' | 'bundleId' | 'env', string | undefined>> = {}) =>
  parseApns({ p8: p8Pem(), keyId: 'ABC123DEFG', teamId: 'TEAM123456', bundleId: 'com.example.loja', env: 'sandbox', ...over })

t.test('apns: a valid key, ids, bundle and environment', async (t) => {
  const p8 = p8Pem()
  const { credential, meta } = apns({ p8, env: 'production' })
  t.same(credential, { p8, keyId: 'ABC123DEFG', teamId: 'TEAM123456', bundleId: 'com.example.loja', env: 'production' })
  t.same(meta, { key_id: 'ABC123DEFG', team_id: 'TEAM123456', bundle_id: 'com.example.loja', env: 'production' })
  t.ok(apns({ p8: p8.replace(/\n/g, '\r\n') }), 'CRLF line ends (a file saved on Windows) are fine')
})

t.test('apns: .p8 contents with the BEGIN PRIVATE KEY block, a P-256 key', async (t) => {
  const p8 = p8Pem()
  const body = p8.split('\n').slice(1, -2).join('\n')
  refused(t, () => apns({ p8: '' }), /--p8: expected the \.p8 file contents with the -----BEGIN PRIVATE KEY----- block/)
  refused(t, () => apns({ p8: body }), /BEGIN PRIVATE KEY/, body.slice(0, 30))
  refused(t, () => apns({ p8: p8.replace(/\n[A-Za-z0-9+/]{16}/, '\n################') }), /not a readable P-256/)
  refused(t, () => apns({ p8: rsaPem() }), /P-256/)
  const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString()
  refused(t, () => apns({ p8: p384 }), /P-256/)
})

t.test('apns: Key ID and Team ID are exactly 10 alphanumeric characters', async (t) => {
  for (const v of ['ABC123DEF', 'ABC123DEFGH', 'ABC-23DEFG', 'ABC 23DEFG', '', undefined]) {
    refused(t, () => apns({ keyId: v }), /--key-id: expected exactly 10 letters or digits/)
    refused(t, () => apns({ teamId: v }), /--team-id: expected exactly 10 letters or digits/)
  }
  t.ok(apns({ keyId: 'abc123defg', teamId: '0123456789' }))
})

t.test('apns: Bundle ID in reverse-DNS form', async (t) => {
  for (const ok of ['com.example.app', 'com.example-co.Loja2', 'br.com.pombo.app.dev', 'io.x']) t.ok(apns({ bundleId: ok }), ok)
  for (const bad of [
    'app',
    'com..app',
    '.com.app',
    'com.app.',
    'com.ex ample',
    'com/example/app',
    'com.exemplo_app',
    '',
    undefined,
  ]) {
    refused(t, () => apns({ bundleId: bad }), /--bundle-id: expected reverse-DNS form/)
  }
})

t.test('apns: environment sandbox or production', async (t) => {
  for (const bad of ['prod', 'development', 'Sandbox', '', undefined])
    refused(t, () => apns({ env: bad }), /--env: expected sandbox or production/)
  t.equal(parseApnsEnv('production'), 'production')
  refused(t, () => parseApnsEnv('dev'), /sandbox or production/)
})

t.test('platform names', async (t) => {
  t.equal(parsePlatform('fcm'), 'fcm')
  t.equal(parsePlatform('apns'), 'apns')
  refused(t, () => parsePlatform('ios'), /fcm or apns/)
})
