import t from 'tap'
import { ConfigError, DEFAULT_LIMITS, loadConfig, redacted } from '../../src/core/config'

t.test('defaults are the contract values', async (t) => {
  const c = loadConfig({})
  t.equal(c.port, 8080)
  t.equal(c.dashboardPort, 8081)
  t.equal(c.host, '127.0.0.1')
  t.equal(c.redisUrl, 'redis://127.0.0.1:6379')
  t.equal(c.publicBaseUrl, 'http://127.0.0.1:8080')
  t.equal(c.fcmBaseUrl, 'https://fcm.googleapis.com')
  t.equal(c.apnsBaseUrl, null)
  t.equal(c.exportDir, './.data/exports')
  t.equal(c.platformKey, null)
  t.equal(c.vaultKey, null)
  t.equal(c.limits.ipPerMin, 120)
  t.equal(c.limits.registrationsPerHour, 50_000)
  t.equal(c.limits.sendsPerSec, 6_000)
  t.equal(c.limits.freeMau, 1_000)
  t.equal(c.limits.keyCacheTtlMs, 60_000)
  t.equal(c.limits.rotationOverlapMs, 24 * 3600_000)
  t.same(c.limits, DEFAULT_LIMITS)
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.limits))
})

t.test('environment overrides, with one-line reasons for bad values', async (t) => {
  const c = loadConfig({
    PORT: '9000',
    PM_LIMIT_IP_PER_MIN: '0',
    PM_PUBLIC_BASE_URL: 'https://push.example.com/',
    PM_WEBHOOK_ALLOW_PRIVATE: '1',
  })
  t.equal(c.port, 9000)
  t.equal(c.limits.ipPerMin, 0)
  t.equal(c.publicBaseUrl, 'https://push.example.com')
  t.equal(c.webhookAllowPrivate, true)
  t.throws(() => loadConfig({ PM_VAULT_KEY: 'abc' }), new ConfigError('PM_VAULT_KEY: expected 64 hex characters'))
  t.throws(() => loadConfig({ PORT: 'x' }), { name: 'ConfigError' })
  t.throws(() => loadConfig({ PM_TRUST_PROXY: '10.0.0.0/8,nope' }), { name: 'ConfigError' })
  t.throws(() => loadConfig({ PM_DB_SCHEMA: 'x; drop' }), { name: 'ConfigError' })
  t.equal(loadConfig({ PM_VAULT_KEY: 'A'.repeat(64) }).vaultKey?.length, 32)
})

t.test('redacted() hides secrets and passwords', async (t) => {
  const c = loadConfig({
    PM_PLATFORM_KEY: 'sekret',
    PM_VAULT_KEY: 'a'.repeat(64),
    DATABASE_URL: 'postgres://u:pw@h/db',
    REDIS_URL: 'redis://:rpw@h:1',
  })
  const s = JSON.stringify(redacted(c))
  for (const secret of ['sekret', 'a'.repeat(64), ':pw@', 'rpw']) t.notOk(s.includes(secret), secret)
  t.match(s, /postgres:\/\/u:\*\*\*@h\/db/)
})

t.test('PM_GRPC_PORT: 8082 by default, 0 turns the confirmation stream off', async (t) => {
  t.equal(loadConfig({}).grpcPort, 8082)
  t.equal(loadConfig({ PM_GRPC_PORT: '9082' }).grpcPort, 9082)
  t.equal(loadConfig({ PM_GRPC_PORT: '0' }).grpcPort, null)
  t.throws(() => loadConfig({ PM_GRPC_PORT: 'x' }), ConfigError)
})

t.test('PM_OPS_PORT: 9464 by default, 0 turns the operations port off', async (t) => {
  t.equal(loadConfig({}).opsPort, 9464)
  t.equal(loadConfig({ PM_OPS_PORT: '9500' }).opsPort, 9500)
  t.equal(loadConfig({ PM_OPS_PORT: '0' }).opsPort, null)
  t.throws(() => loadConfig({ PM_OPS_PORT: '-1' }), ConfigError)
  t.throws(() => loadConfig({ PM_OPS_PORT: 'x' }), ConfigError)
})

t.test('PM_ACCESS_LOG: all by default, errors, off; anything else refused', async (t) => {
  t.equal(loadConfig({}).accessLog, 'all')
  t.equal(loadConfig({ PM_ACCESS_LOG: 'errors' }).accessLog, 'errors')
  t.equal(loadConfig({ PM_ACCESS_LOG: 'off' }).accessLog, 'off')
  t.throws(() => loadConfig({ PM_ACCESS_LOG: 'some' }), new ConfigError('PM_ACCESS_LOG: expected all, errors or off, got "some"'))
})

t.test('PM_SERVE_WORKERS: one worker process by default, 0 for one process, at most 64', async (t) => {
  t.equal(loadConfig({}).serveWorkers, 1)
  t.equal(loadConfig({ PM_SERVE_WORKERS: '0' }).serveWorkers, 0)
  t.equal(loadConfig({ PM_SERVE_WORKERS: '4' }).serveWorkers, 4)
  t.throws(() => loadConfig({ PM_SERVE_WORKERS: '65' }), new ConfigError('PM_SERVE_WORKERS: expected at most 64, got 65'))
  t.throws(() => loadConfig({ PM_SERVE_WORKERS: '-1' }), ConfigError)
  t.throws(() => loadConfig({ PM_SERVE_WORKERS: 'two' }), ConfigError)
})

t.test('PM_DRAIN_TIMEOUT_MS: 30 s by default, at least 1', async (t) => {
  t.equal(loadConfig({}).drainTimeoutMs, 30_000)
  t.equal(loadConfig({ PM_DRAIN_TIMEOUT_MS: '5000' }).drainTimeoutMs, 5_000)
  t.throws(() => loadConfig({ PM_DRAIN_TIMEOUT_MS: '0' }), ConfigError)
})
