// The database password never appears in what `pombo serve` writes, whatever the form of DATABASE_URL: a real
// process started with each form (a password in the URL, percent-encoded, as a query parameter; JSON and pretty
// logs), and a key=value string refused by name without being echoed.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { serveChild } from '../helpers/serve-child'
import { DATABASE_URL } from '../helpers/service'

const base = new URL(DATABASE_URL)
const where = `${base.hostname}:${base.port || 5432}${base.pathname}`
const user = decodeURIComponent(base.username || 'postgres')

/** [DATABASE_URL, the texts that must not appear] — this Postgres may ignore the password (trust) or refuse it:
 *  either way the process logs its configuration first. */
function forms(): Array<[string, string, string[]]> {
  const r = () => randomBytes(4).toString('hex')
  const one = `pw-one-${r()}`
  const two = `p@ss/two-${r()}`
  const three = `pw-three-${r()}`
  return [
    ['URL', `postgres://${user}:${one}@${where}`, [one]],
    ['percent-encoded', `postgresql://${user}:${encodeURIComponent(two)}@${where}`, [two, encodeURIComponent(two)]],
    ['query', `postgres://${user}@${where}?password=${three}`, [three]],
  ]
}

// Every form in JSON (what a deployment collects); the pretty format's summary with the trickiest one.
for (const format of ['json', 'pretty']) {
  for (const [name, url, secrets] of forms().filter(([n]) => format === 'json' || n === 'percent-encoded')) {
    t.test(`${name} (${format} log): the password is not written`, async (t) => {
      const p = await serveChild(t, { env: { DATABASE_URL: url, PM_LOG_FORMAT: format } })
      const out = p.logs()
      t.match(out, /starting/, 'the configuration was logged')
      t.match(out, new RegExp(base.hostname.replace(/\./g, '\\.')), 'where the database is, is said')
      for (const s of secrets) t.notOk(out.includes(s), `${s} not in the output`)
      p.child.kill('SIGTERM')
      await p.exited
      for (const s of secrets) t.notOk(p.logs().includes(s), `${s} not in the output after the stop`)
    })
  }
}

t.test('a key=value string is refused by name, and not echoed', async (t) => {
  const secret = `pw-kv-${randomBytes(4).toString('hex')}`
  const p = await serveChild(t, {
    env: { DATABASE_URL: `host=${base.hostname} user=${user} password=${secret} dbname=${base.pathname.slice(1)}` },
  })
  t.not(await p.exited, 0, 'the process stops')
  t.match(p.logs(), /DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL/)
  t.notOk(p.logs().includes(secret), 'the password is not shown')
})
