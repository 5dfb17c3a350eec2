// The database (and Redis) password never reaches a log, whatever the form of the URL: the service's redaction
// (src/core/redact.ts, used by the start-up log's configuration and its summary) and the scripts' copy
// (scripts/redact-url.mjs: npm start's banner, the test runner) agree on one table of forms.
import t from 'tap'
import { redactUrl as forScripts } from '../../scripts/redact-url.mjs'
import { loadConfig, redacted } from '../../src/core/config'
import { configSummary } from '../../src/core/config-summary'
import { redactUrl } from '../../src/core/redact'

/** [input, the secret that must not survive, what must survive] */
const FORMS: Array<[string, string, string]> = [
  ['postgres://pombo:s3cret-one@db:5432/pombo', 's3cret-one', 'postgres://pombo:***@db:5432/pombo'],
  ['postgresql://pombo:s3cret-two@db/pombo?sslmode=require', 's3cret-two', 'postgresql://pombo:***@db/pombo?sslmode=require'],
  ['POSTGRES://pombo:s3cret-upper@db/pombo', 's3cret-upper', 'POSTGRES://pombo:***@db/pombo'],
  ['postgres://pombo:p%40ss%2Fw%23rd-three@db/pombo', 'p%40ss', 'postgres://pombo:***@db/pombo'],
  ['postgres://pombo:raw@at/slash#hash?q-four@db:5432/pombo', 'raw@at', 'postgres://pombo:***@db:5432/pombo'],
  ['postgres://pombo:1234#five@db/pombo', '1234', 'postgres://pombo:***@db/pombo'],
  ['postgres://pombo@db/pombo?password=s3cret-six&sslmode=disable', 's3cret-six', '?password=***&sslmode=disable'],
  ['postgres://db/pombo?user=pombo&pass%77ord=s3cret-seven', 's3cret-seven', 'pass%77ord=***'],
  ['postgres://db/pombo?sslpassword=s3cret-eight', 's3cret-eight', 'sslpassword=***'],
  ['postgres://db/pombo?application_name=a@b&password=s3cret-nine', 's3cret-nine', 'password=***'],
  ['host=db user=pombo password=s3cret-ten dbname=pombo', 's3cret-ten', 'host=db user=pombo password=*** dbname=pombo'],
  ["host=db password = 's3cret eleven \\' quoted' dbname=pombo", 's3cret eleven', 'dbname=pombo'],
  ['pombo:s3cret-twelve@db:5432/pombo', 's3cret-twelve', 'pombo:***@db:5432/pombo'],
  ['redis://:s3cret-thirteen@redis:6379', 's3cret-thirteen', 'redis://:***@redis:6379'],
  ['rediss://default:s3cret-fourteen@redis:6380/0', 's3cret-fourteen', 'rediss://default:***@redis:6380/0'],
  ['postgres://pombo@db:5432/pombo', '', 'postgres://pombo@db:5432/pombo'],
]

t.test('every form loses its password and keeps the rest', async (t) => {
  for (const [input, secret, kept] of FORMS) {
    for (const [name, f] of [
      ['service', redactUrl],
      ['scripts', forScripts],
    ] as const) {
      const out = f(input)
      if (secret) t.notOk(out.includes(secret), `${name}: ${input} → ${out}`)
      t.ok(out.includes(kept), `${name}: ${out} keeps ${kept}`)
    }
  }
})

t.test("the start-up log's configuration and its summary carry no password, whatever the form", async (t) => {
  for (const [input, secret] of FORMS.filter(([i, s]) => s && /^postgres/i.test(i))) {
    const cfg = loadConfig({ DATABASE_URL: input, PM_DATABASE_DIRECT_URL: input, REDIS_URL: 'redis://:r3dis-pw@redis:6379' })
    const logged = JSON.stringify(redacted(cfg)) + configSummary(cfg, ['api']).join('\n')
    t.notOk(logged.includes(secret), `${input}: not in the log`)
    t.notOk(logged.includes('r3dis-pw'), 'nor the Redis password')
  }
})

t.test('a key=value connection string is refused without being echoed (the driver would take it for a name)', async (t) => {
  for (const v of ['host=db user=pombo password=s3cret-kv dbname=pombo', 'pombo:s3cret-kv@db/pombo']) {
    t.throws(() => loadConfig({ DATABASE_URL: v }), { message: /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL/ })
    try {
      loadConfig({ DATABASE_URL: v })
    } catch (err) {
      t.notOk(String((err as Error).message).includes('s3cret-kv'), 'the message does not show the value')
    }
    t.throws(() => loadConfig({ PM_DATABASE_DIRECT_URL: v }), /^PM_DATABASE_DIRECT_URL: expected/)
  }
})
