// Simulators cannot touch production (issue #31, point 4). Simulated deliveries happen only on an instance that allows
// them (PM_ALLOW_SIMULATORS, off by default) and only for the app holding simulator credentials: `pombo simulate`
// refuses elsewhere by name, a worker that does not allow them refuses those credentials, and a worker that does
// (the `--worker` of a run) delivers every other app's pushes to that app's own provider.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { CredentialService } from '../../src/credentials/service'
import { parseServiceAccount } from '../../src/credentials/validate'
import { startFakeProviders } from '../fakes'
import { pombo } from '../helpers/cli'
import { basic, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

const BASE_ENV = { PM_LIMIT_IP_PER_MIN: '0', PM_DEFAULT_PLAN: 'pro', PM_PARTITIONS: '4' }

function tlsDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-simulate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function simulate(s: TestService, t: Test, appId: string, args: string[], env: Record<string, string>) {
  return pombo(s, ['simulate', '--app', appId, '--base-url', s.url, '--tls-dir', tlsDir(t), '--json', ...args], {
    PM_OPS_PORT: '0',
    ...env,
  })
}

const count = async (s: TestService, table: string, appId: string) =>
  (await s.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE app_id = $1`, [appId]))[0]?.n

t.test('pombo simulate refuses, by name, where the instance does not allow simulators; nothing is written', async (t) => {
  const s = await startService(t, { roles: ['api'], env: BASE_ENV })
  const app = await s.createApp()
  for (const allow of ['', '0']) {
    const r = await simulate(s, t, app.id, ['--devices', '3', '--worker'], { ...BASE_ENV, PM_ALLOW_SIMULATORS: allow })
    t.equal(r.code, 2, r.stderr)
    t.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr.trim()}`)
    t.match(r.stderr, /simulators are not allowed on this instance: PM_ALLOW_SIMULATORS is off/)
    t.equal(r.stdout, '')
  }
  t.equal(await count(s, 'credentials', app.id), 0, 'no simulator credential stored')
  t.equal(await count(s, 'devices', app.id), 0, 'no device registered')
})

t.test('a worker that does not allow simulators refuses simulator credentials: nothing reaches a simulator', async (t) => {
  // The service (API and worker) keeps the default; only the operator's shell allows simulators.
  const s = await startService(t, { roles: ['api', 'worker'], env: BASE_ENV })
  const app = await s.createApp()
  const r = await simulate(
    s,
    t,
    app.id,
    ['--devices', '4', '--key', app.api_key, '--sends', '1', '--duration-s', '20', '--fcm-latency-ms', '1'],
    { ...BASE_ENV, PM_ALLOW_SIMULATORS: '1' },
  )
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 4)
  t.equal(out.pushes_received, 0, 'no push reached the simulators')
  t.equal(out.provider.fcm.delivered, 0)
  const [send] = await s.sql<{ errored: number; successful: number; problem: string }>(
    'SELECT errored, successful, problem FROM sends WHERE app_id = $1',
    [app.id],
  )
  t.equal(send?.successful, 0)
  t.equal(send?.errored, 4)
  t.match(
    send?.problem,
    /^credencial_recusada:fcm:simulator credential refused: this instance does not allow simulators \(PM_ALLOW_SIMULATORS is off\)$/,
  )
})

t.test("--worker delivers the simulated app to the simulators and every other app's pushes to its own provider", async (t) => {
  // Another tenant's provider: the fakes, named by PM_FCM_BASE_URL as a production FCM would be.
  const fakes = await startFakeProviders(t)
  const env = { ...BASE_ENV, PM_ALLOW_SIMULATORS: '1', PM_FCM_BASE_URL: fakes.fcm.url, PM_APNS_BASE_URL: fakes.apns.url }
  const s = await startService(t, { roles: ['api'], env })
  const app = await s.createApp()
  const other = await s.createApp()
  const { credential, meta } = parseServiceAccount(JSON.stringify(fakes.fcm.serviceAccount('pombo-outro')))
  await new CredentialService({ ...s.svc.deps, now: s.svc.deps.clock }).save(other.id, 'fcm', credential, meta)
  const reg = await s.call('POST', '/api/v1/players', {
    body: { app_id: other.id, device_type: 1, identifier: 'outro-device-token' },
  })
  t.equal(reg.status, 200, reg.text)
  // Queued before the run: the only worker that will ever see it is the run's own.
  const sent = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: other.id, contents: { en: 'not for a simulator' }, include_player_ids: [reg.json.id] },
    headers: basic(other.api_key),
  })
  t.equal(sent.status, 200, sent.text)

  const run = simulate(
    s,
    t,
    app.id,
    [
      '--devices',
      '3',
      '--key',
      app.api_key,
      '--sends',
      '1',
      '--worker',
      '--receipt-rate',
      '1',
      '--click-rate',
      '0',
      '--fcm-latency-ms',
      '1',
    ],
    { ...env, ...fakes.env },
  )
  const closed = await until(
    "the other app's send closed by the run's worker",
    async () =>
      (
        await s.sql<{ successful: number; problem: string | null }>(
          'SELECT successful, problem FROM sends WHERE id = $1 AND completed_at IS NOT NULL',
          [sent.json.id],
        )
      )[0],
    60_000,
  )
  const r = await run
  t.equal(r.code, 0, r.stderr)
  t.same(closed, { successful: 1, problem: null }, 'delivered by its own provider')
  t.ok(
    fakes.fcm.delivered.some((d) => d.target === 'outro-device-token'),
    "the other app's push went to its provider (PM_FCM_BASE_URL)",
  )
  const out = JSON.parse(r.stdout)
  t.equal(out.unknown_tokens, 0, 'the simulators never saw a token that is not theirs')
  t.equal(out.pushes_received, 3, "the simulated app's pushes reached the simulated devices")
  t.equal(out.receipts_counted, 3)
  t.notOk(
    fakes.fcm.delivered.some((d) => d.target !== 'outro-device-token'),
    'and none of them went to the real provider',
  )
})
