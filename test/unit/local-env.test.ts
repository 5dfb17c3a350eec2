// .data/local-env.json (written by npm start) is read for its known keys only, as strings: whatever else the file
// holds never reaches a command's settings, and `serve` leaves simulators to its own environment.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { localDefaults } from '../../src/core/local-env'
import { loadConfig } from '../../src/core/config'

function file(content: string): string {
  const f = join(mkdtempSync(join(tmpdir(), 'pombo-local-env-')), 'local-env.json')
  writeFileSync(f, content)
  return f
}

const KNOWN = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5499/postgres',
  REDIS_URL: 'redis://127.0.0.1:6399',
  PM_PLATFORM_KEY: 'k'.repeat(32),
  PM_VAULT_KEY: 'a'.repeat(64),
  PM_ALLOW_SIMULATORS: '1',
}
const HOSTILE = {
  PM_TRUST_PROXY: '0.0.0.0/0',
  PM_WEBHOOK_ALLOW_PRIVATE: '1',
  PM_FCM_BASE_URL: 'https://attacker.example',
  PM_LIMIT_IP_PER_MIN: '0',
  NODE_OPTIONS: '--require /tmp/x.js',
}

t.test('only the keys npm start writes are read; anything else in the file is ignored', async (t) => {
  const f = file(JSON.stringify({ ...KNOWN, ...HOSTILE }))
  t.same(localDefaults('app', f), KNOWN, 'a CLI command: the five keys')
  const serve = localDefaults('serve', f)
  t.same(Object.keys(serve).sort(), ['DATABASE_URL', 'PM_PLATFORM_KEY', 'PM_VAULT_KEY', 'REDIS_URL'], 'serve: not the simulators')
  const cfg = loadConfig({ ...serve })
  t.same(cfg.trustProxy, [], 'PM_TRUST_PROXY not taken from the file')
  t.equal(cfg.webhookAllowPrivate, false)
  t.equal(cfg.fcmBaseUrl, 'https://fcm.googleapis.com')
  t.equal(cfg.limits.ipPerMin, 120)
  t.equal(cfg.allowSimulators, false, 'serve keeps simulators off unless its environment turns them on')
  t.equal(cfg.databaseUrl, KNOWN.DATABASE_URL, 'the known keys are used')
})

t.test('a value that is not a string, or a file that is not an object, gives nothing', async (t) => {
  t.same(localDefaults('app', file(JSON.stringify({ DATABASE_URL: { x: 1 }, REDIS_URL: 7, PM_VAULT_KEY: null }))), {})
  t.same(localDefaults('app', file('[1,2]')), {})
  t.same(localDefaults('app', file('not json')), {})
  t.same(localDefaults('app', join(tmpdir(), 'no-such-dir-pombo', 'local-env.json')), {})
})
