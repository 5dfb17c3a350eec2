// Logs for a person at a terminal (PM_LOG_FORMAT=pretty, or auto at a TTY): one short line per record, the same
// records pino writes as JSON, the configuration in a few lines with no secret.
import { Writable } from 'node:stream'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/core/config'
import { configSummary } from '../../src/core/config-summary'
import { createLogger } from '../../src/core/log'
import { prettyDestination, prettyLine } from '../../src/core/log-pretty'

const ENV = { PM_PLATFORM_KEY: 'k'.repeat(32) }

function capture(color: boolean) {
  let out = ''
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out += chunk
      cb()
    },
  })
  return { log: createLogger('debug', prettyDestination(sink, color)), text: () => out }
}

t.test('a record is one line: time, level, message, fields; quiet fields left out', async (t) => {
  const c = capture(false)
  c.log.info({ app_id: 'a1', n: 3, note: 'two words', roles: ['api', 'worker'] }, 'send closed')
  const [line, rest] = c.text().split('\n')
  t.match(line, /^\d\d:\d\d:\d\d INFO {2}send closed {2}app_id=a1 n=3 note="two words" roles=api,worker$/)
  t.equal(rest, '', 'exactly one line')
  t.notMatch(c.text(), /pid=|hostname=|svc=/, 'the fields every record carries are not repeated')
})

t.test('the same redaction as the JSON format', async (t) => {
  const c = capture(false)
  c.log.warn({ api_key: 'pm_live_secret', req: { authorization: 'Basic zzz' } }, 'x')
  t.notMatch(c.text(), /pm_live_secret|zzz/)
  t.match(c.text(), /WARN {2}x {2}api_key=\[redigido\]/)
})

t.test('colour by level only when asked; errors show their message, not the stack', async (t) => {
  const c = capture(true)
  c.log.error({ err: new Error('boom') }, 'failed')
  t.ok(c.text().includes('\x1b[31mERROR\x1b[0m failed'), 'ERROR in red')
  t.match(c.text(), /err=boom/)
  t.notMatch(c.text(), /at .*log-pretty\.test/, 'no stack trace in the line')
  const plain = capture(false)
  plain.log.error({ err: new Error('boom') }, 'failed')
  t.notOk(plain.text().includes('\x1b['), 'no escape codes without colour')
})

t.test('long nested values are cut; lines given as `lines` print under the record', async (t) => {
  const line = prettyLine(JSON.stringify({ level: 30, time: 0, msg: 'm', big: { a: 'x'.repeat(500) } }), false)
  t.ok(line.length < 220, `cut (${line.length} characters)`)
  t.match(line, /…\n$/)
  const many = prettyLine(JSON.stringify({ level: 30, time: 0, msg: 'starting', lines: ['one', 'two'] }), false)
  t.equal(many, '00:00:00 INFO  starting\n           one\n           two\n')
  t.equal(prettyLine('not json', false), 'not json\n', 'text that is not a record passes through')
})

t.test('configSummary: a few lines naming where each role answers, never a password', async (t) => {
  const cfg = loadConfig({
    ...ENV,
    DATABASE_URL: 'postgres://pombo:s3cret-pw@db.internal:6543/pombo?password=again',
    REDIS_URL: 'redis://:r3dis-pw@cache:6380/0',
  })
  const lines = configSummary(cfg, ['api', 'dashboard', 'worker'])
  t.ok(lines.length <= 5, `${lines.length} lines`)
  const text = lines.join('\n')
  t.notMatch(text, /s3cret|again|r3dis/, 'no password, whatever the URL form')
  t.match(text, /Postgres db\.internal:6543\/pombo/)
  t.match(text, /Redis cache:6380/)
  t.match(text, /API http:\/\/127\.0\.0\.1:8080/)
  t.match(text, /dashboard http:\/\/127\.0\.0\.1:8081/)
})

t.test('PM_LOG_FORMAT: json, pretty or auto (the default); anything else is refused by name', async (t) => {
  t.equal(loadConfig(ENV).logFormat, 'auto')
  t.equal(loadConfig({ ...ENV, PM_LOG_FORMAT: 'json' }).logFormat, 'json')
  t.equal(loadConfig({ ...ENV, PM_LOG_FORMAT: 'pretty' }).logFormat, 'pretty')
  t.throws(() => loadConfig({ ...ENV, PM_LOG_FORMAT: 'xml' }), ConfigError)
  t.throws(() => loadConfig({ ...ENV, PM_LOG_FORMAT: 'xml' }), /PM_LOG_FORMAT/)
})
