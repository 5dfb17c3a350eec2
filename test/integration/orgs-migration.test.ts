// 0016_orgs_people.sql on a database that already has apps: every existing app keeps its own organisation, which
// takes the app's name; nothing else changes.
import { randomBytes } from 'node:crypto'
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { migrate } from '../../src/db/migrate'
import { DATABASE_URL } from '../helpers/service'

const DIR = join(__dirname, '..', '..', 'src', 'db', 'migrations')

t.test('existing apps: one organisation each, named after the app', async (t) => {
  const schema = `t_mig_${randomBytes(4).toString('hex')}`
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  t.teardown(async () => {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.end()
  })
  // The database as it stood before 0016: the earlier migrations, applied by the real runner.
  const before = mkdtempSync(join(tmpdir(), 'pombo-mig-'))
  t.teardown(() => rmSync(before, { recursive: true, force: true }))
  for (const f of readdirSync(DIR).filter((x) => x.endsWith('.sql') && x < '0016')) copyFileSync(join(DIR, f), join(before, f))
  await migrate(DATABASE_URL, schema, { dir: before })
  await c.query(`SET search_path TO ${schema}`)
  const apps = [
    ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000a0', 'Loja Azul', 'free'],
    ['00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-0000000000b0', 'Loja Verde', 'pro'],
  ]
  for (const [app, org, nome, plan] of apps) {
    await c.query('INSERT INTO orgs (id, plan, created_at) VALUES ($1, $2, now())', [org, plan])
    await c.query(
      `INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em) VALUES ($1, $2, $3, 60000, '\\x00', now())`,
      [app, org, nome],
    )
  }
  await c.query("INSERT INTO orgs (id, plan, created_at) VALUES ('00000000-0000-4000-8000-0000000000c0', 'free', now())")
  const r = await migrate(DATABASE_URL, schema)
  t.ok(r.applied.includes('0016_orgs_people.sql'))
  const rows = await c.query('SELECT a.id, a.org_id, o.nome, o.plan FROM apps a JOIN orgs o ON o.id = a.org_id ORDER BY a.id')
  t.same(
    rows.rows.map((x) => [x.id, x.org_id, x.nome, x.plan]),
    apps.map(([app, org, nome, plan]) => [app, org, nome, plan]),
  )
  const lone = await c.query("SELECT nome FROM orgs WHERE id = '00000000-0000-4000-8000-0000000000c0'")
  t.equal(lone.rows[0]?.nome, 'Organização', 'an organisation without apps gets a placeholder name')
})
