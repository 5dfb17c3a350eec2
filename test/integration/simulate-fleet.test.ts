// `pombo simulate` after `npm start` with no other step (issue 33, point 4): a fleet of 1,000 devices registers from
// one address with the per-IP limit on (the fleet pass of an instance that allows simulators), the run sends
// without --key (a key of its own, revoked at the end) and reads back the receipts the service counted, on the free
// plan too. The pass lifts nothing where simulators are not allowed, nor when another vault key made it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { mintSimulatorPass, SIMULATOR_PASS_HEADER } from '../../src/core/simulator-pass'
import { pombo } from '../helpers/cli'
import { FakeClock, startService, VAULT_KEY } from '../helpers/service'

/** The per-IP limit counts in minute windows: a test that fills it runs on a clock stopped early in a minute. */
const earlyInAMinute = () => new FakeClock(Math.floor(Date.now() / 60_000) * 60_000 + 500)

t.test('1,000 devices register with the per-IP limit on, the run sends without --key, receipts are counted', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-simulate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // npm start's settings: simulators allowed, the per-IP limit and the plan left at their defaults
  const env = { PM_ALLOW_SIMULATORS: '1', PM_PARTITIONS: '4' }
  const s = await startService(t, { roles: ['api', 'worker'], env })
  t.ok(s.cfg.limits.ipPerMin > 0 && s.cfg.limits.ipPerMin < 1000, `the per-IP limit is on: ${s.cfg.limits.ipPerMin}/min`)
  const app = await s.createApp()
  const r = await pombo(
    s,
    ['simulate', '--app', app.id, '--devices', '1000', '--sends', '1', '--base-url', s.url, '--tls-dir', dir, '--json'],
    { ...env, PM_OPS_PORT: '0' },
  )
  t.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.equal(out.registered, 1000, 'every device registered')
  t.equal(out.register_failed, 0)
  t.same(out.register_errors, {}, 'no 429')
  t.equal(out.fleet_pass, true)
  const [devices] = await s.sql<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE app_id = $1', [app.id])
  t.equal(devices?.n, 1000)

  t.equal(out.sends.length, 1, 'a send made without --key')
  // At least once: a provider request that timed out on a loaded machine is delivered again, and counted apart.
  t.equal(out.pushes_received - out.pushes_duplicate, 1000, `every device got the push (${out.pushes_duplicate} twice)`)
  t.ok(out.receipts_counted > 0, `receipts counted by the service: ${out.receipts_counted}`)
  t.equal(out.receipts_counted, out.receipts_sent_for_sends, 'exactly the receipts the devices sent')
  const [row] = await s.sql<{ recebidos: number }>('SELECT sum(recebidos)::int AS recebidos FROM sends WHERE app_id = $1', [
    app.id,
  ])
  t.equal(row?.recebidos, out.receipts_counted)
  t.ok(out.latency_ms.send_to_receipt.count > 0 && out.latency_ms.send_to_receipt.p50 > 0, 'send-to-receipt latency')
  t.match(r.stderr, /made a key for this run \(kid \w+\)/, 'the run says it made a key')

  t.equal(out.run_key?.revoked, true, 'the key the run made is revoked at its end')
  const keys = await s.sql<{ kid: string; revoked: boolean; expires: boolean }>(
    'SELECT kid, revoked_at IS NOT NULL AS revoked, expires_at IS NOT NULL AS expires FROM app_keys WHERE app_id = $1 ORDER BY created_at',
    [app.id],
  )
  t.same(
    keys.map((k) => [k.kid === out.run_key.kid, k.revoked, k.expires]),
    [
      [false, false, false],
      [true, true, true],
    ],
    "the app's own key untouched; the run's key expiring and revoked",
  )
  const read = await s.call('GET', `/api/v1/notifications/${out.sends[0].id}?app_id=${app.id}`, {
    headers: { authorization: `Basic ${app.api_key}` },
  })
  t.equal(read.status, 200, "the app's own key still works")
})

t.test(
  'the fleet pass lifts the per-IP limit only where simulators are allowed, and only when the instance made it',
  async (t) => {
    const register = (s: Awaited<ReturnType<typeof startService>>, appId: string, i: number, pass?: string) =>
      s.call('POST', '/api/v1/players', {
        body: { app_id: appId, device_type: 1, identifier: `pass-test-${i}` },
        headers: pass ? { [SIMULATOR_PASS_HEADER]: pass } : {},
      })
    const valid = (appId: string) => mintSimulatorPass(Buffer.from(VAULT_KEY, 'hex'), appId, 600_000)
    const statuses = async (s: Awaited<ReturnType<typeof startService>>, appId: string, pass?: string) => {
      const out: number[] = []
      for (let i = 0; i < 6; i++) out.push((await register(s, appId, i, pass)).status)
      return out
    }

    const allowed = await startService(t, {
      roles: ['api'],
      env: { PM_ALLOW_SIMULATORS: '1', PM_LIMIT_IP_PER_MIN: '4' },
      clock: earlyInAMinute(),
    })
    const a = await allowed.createApp()
    t.same(await statuses(allowed, a.id, valid(a.id)), [200, 200, 200, 200, 200, 200], 'a valid pass: past the limit')
    const forged = mintSimulatorPass(Buffer.from('cd'.repeat(32), 'hex'), a.id, 600_000)
    const expired = mintSimulatorPass(Buffer.from(VAULT_KEY, 'hex'), a.id, 600_000, Date.now() - 3_600_000)
    for (const [name, pass] of [
      ['another vault key', forged],
      ['expired', expired],
      ['malformed', 'x'.repeat(300)],
    ] as const) {
      const s = await startService(t, {
        roles: ['api'],
        env: { PM_ALLOW_SIMULATORS: '1', PM_LIMIT_IP_PER_MIN: '4' },
        clock: earlyInAMinute(),
      })
      const app = await s.createApp()
      t.same(await statuses(s, app.id, pass), [200, 200, 200, 200, 429, 429], `${name}: held to the limit`)
    }

    const production = await startService(t, { roles: ['api'], env: { PM_LIMIT_IP_PER_MIN: '4' }, clock: earlyInAMinute() })
    t.equal(production.cfg.allowSimulators, false)
    const p = await production.createApp()
    t.same(
      await statuses(production, p.id, valid(p.id)),
      [200, 200, 200, 200, 429, 429],
      'simulators not allowed: a valid pass changes nothing',
    )
  },
)
