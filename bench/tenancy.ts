// The re-key of issue 32.5 (migrations 0025-0027) on filled tables, in one run: two schemas filled alike at 0024, one
// then taken through 0025, 0026 and 0027 (each timed), and the hot statements timed on both in alternating rounds,
// as the previous release runs them on the first and as this one does on the second, and planned. docs/scaling.md
// quotes its output.
//
//   npx tsx bench/tenancy.ts [deliveries=2000000] [rounds=5]
import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { migrate, migrations } from '../src/db/migrate'

const URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
const DELIVERIES = Number(process.argv[2] ?? 2_000_000)
const ROUNDS = Number(process.argv[3] ?? 5)
const APPS = 50
const SENDS_PER_APP = 20
const ATTEMPTS = 200_000
const RECEIPTS = 1_000_000
const PROBES = 2_000
const BATCH = 500

interface Statement {
  name: string
  /** The statement as 0024's schema is read and written, and as this release does it. */
  before: string
  after: string
  /** Parameters for one execution, from the sampled keys ($1 the app; a statement of 0024's that has no use for it
   *  only checks it, so both forms take the same parameters). */
  params: (k: Keys, i: number) => unknown[]
  /** Executions per round. */
  n: number
}

interface Keys {
  apps: string[]
  sends: Array<{ app: string; send: string }>
  devices: string[]
  kids: string[]
  dests: Array<{ app: string; id: string }>
}

const ids = (n: number, f: (i: number) => string) => `{${Array.from({ length: n }, (_, i) => f(i)).join(',')}}`

const STATEMENTS: Statement[] = [
  {
    name: 'delivery row probe (the list page skips final devices)',
    before: 'SELECT status FROM deliveries WHERE send_id = $2 AND device_id = $3 AND $1::uuid IS NOT NULL',
    after: 'SELECT status FROM deliveries WHERE app_id = $1 AND send_id = $2 AND device_id = $3',
    params: (k, i) => {
      const s = k.sends[i % k.sends.length] as Keys['sends'][0]
      return [s.app, s.send, k.devices[(i * 7919) % k.devices.length]]
    },
    n: PROBES,
  },
  {
    name: 'segment page: 500 pending rows after a cursor',
    before:
      'SELECT device_id FROM deliveries WHERE send_id = $2 AND status = 0 AND device_id > $3 AND $1::uuid IS NOT NULL ORDER BY device_id LIMIT 500',
    after:
      'SELECT device_id FROM deliveries WHERE app_id = $1 AND send_id = $2 AND status = 0 AND device_id > $3 ORDER BY device_id LIMIT 500',
    params: (k, i) => {
      const s = k.sends[i % k.sends.length] as Keys['sends'][0]
      return [s.app, s.send, k.devices[(i * 104729) % k.devices.length]]
    },
    n: 200,
  },
  {
    name: 'outcome batch: 500 rows upserted (ON CONFLICT on the key)',
    before: `INSERT INTO deliveries AS d (send_id, device_id, app_id, device_type, status, attempts, updated_at)
             SELECT $2, x, $1, 1, 0, 1, now() FROM unnest($3::uuid[]) AS x
             ON CONFLICT (send_id, device_id) DO UPDATE SET attempts = excluded.attempts, updated_at = excluded.updated_at
              WHERE d.status = 0`,
    after: `INSERT INTO deliveries AS d (send_id, device_id, app_id, device_type, status, attempts, updated_at)
            SELECT $2, x, $1, 1, 0, 1, now() FROM unnest($3::uuid[]) AS x
            ON CONFLICT (app_id, send_id, device_id) DO UPDATE SET attempts = excluded.attempts, updated_at = excluded.updated_at
             WHERE d.status = 0`,
    params: (k, i) => {
      const s = k.sends[i % k.sends.length] as Keys['sends'][0]
      const from = (i * BATCH) % (k.devices.length - BATCH)
      return [s.app, s.send, `{${k.devices.slice(from, from + BATCH).join(',')}}`]
    },
    n: 40,
  },
  {
    name: 'API key by kid',
    before: 'SELECT kid, app_id, key_hash FROM app_keys WHERE kid = $1',
    after: `SELECT kid, app_id, key_hash FROM app_keys WHERE kid = $1
              AND app_id = (SELECT app_id FROM app_key_kids WHERE kid = $1)`,
    params: (k, i) => [k.kids[i % k.kids.length]],
    n: PROBES,
  },
  {
    name: 'webhook lease renewal (destination by key)',
    before: 'UPDATE webhook_destinations SET leased_until = now() WHERE id = $2 AND $1::uuid IS NOT NULL RETURNING 1',
    after: 'UPDATE webhook_destinations SET leased_until = now() WHERE app_id = $1 AND id = $2 RETURNING 1',
    params: (k, i) => {
      const d = k.dests[i % k.dests.length] as Keys['dests'][0]
      return [d.app, d.id]
    },
    n: PROBES,
  },
  {
    name: 'receipt batch: 500 inserted (ON CONFLICT DO NOTHING)',
    before: `INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
             SELECT current_date, $2, x, 1, $1, now() FROM unnest($3::uuid[]) AS x ON CONFLICT DO NOTHING`,
    after: `INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
            SELECT current_date, $2, x, 1, $1, now() FROM unnest($3::uuid[]) AS x ON CONFLICT DO NOTHING`,
    params: (k, i) => {
      const s = k.sends[(i * 13) % k.sends.length] as Keys['sends'][0]
      return [s.app, s.send, ids(BATCH, () => crypto.randomUUID())]
    },
    n: 40,
  },
]

async function time<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now()
  const r = await f()
  return [r, performance.now() - t0]
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

async function main(): Promise<void> {
  const tag = randomBytes(3).toString('hex')
  // Two schemas filled alike: `before` stays as 0024 left it, `after` takes 0025-0027. Their rounds alternate, so
  // whatever else the machine does weighs on both alike.
  const before = await schemaAt0024(`bench_ten_b_${tag}`)
  const after = await schemaAt0024(`bench_ten_a_${tag}`)
  try {
    const [, fill] = await time(() => Promise.all([fillSchema(before.c), fillSchema(after.c)]))
    console.log(
      `filled two schemas in ${(fill / 1000).toFixed(1)} s, each: ${DELIVERIES.toLocaleString('en')} deliveries, ${RECEIPTS.toLocaleString('en')} receipts, ${ATTEMPTS.toLocaleString('en')} webhook attempts, ${APPS} apps`,
    )
    const sizes0 = await sizes(after.c)
    const steps: Array<[string, number]> = []
    for (const v of ['0025', '0026', '0027']) {
      const dir = mkdtempSync(join(tmpdir(), 'pombo-bench-ten-'))
      for (const x of migrations().filter((x) => x.version.slice(0, 4) <= v)) writeFileSync(join(dir, x.version), x.sql)
      const [, ms] = await time(() => migrate(URL, after.schema, { dir }))
      steps.push([v, ms])
    }
    for (const x of [before, after]) await x.c.query('VACUUM ANALYZE')
    const sizes1 = await sizes(after.c)
    const kb = await sample(before.c)
    const ka = await sample(after.c)
    console.log('\nmigrations on the filled schema:')
    for (const [v, ms] of steps) console.log(`  ${v}: ${(ms / 1000).toFixed(2)} s`)
    console.log('\nprimary key sizes (MB), before -> after:')
    for (const [k, v] of Object.entries(sizes0)) console.log(`  ${k}: ${v} -> ${sizes1[k]}`)
    console.log(`\nmedian of ${ROUNDS} alternating rounds, ms per execution (before -> after, ratio):`)
    for (const s of STATEMENTS) {
      const rb: number[] = []
      const ra: number[] = []
      for (let r = 0; r < ROUNDS; r++) {
        rb.push(await round(before.c, s, 'before', kb, r))
        ra.push(await round(after.c, s, 'after', ka, r))
      }
      const b = median(rb)
      const a = median(ra)
      console.log(`  ${s.name}: ${b.toFixed(3)} -> ${a.toFixed(3)} (${(a / b).toFixed(2)})`)
      console.log(`    before: ${await plan(before.c, s.before, s.params(kb, 0))}`)
      console.log(`    after:  ${await plan(after.c, s.after, s.params(ka, 0))}`)
    }
  } finally {
    for (const x of [before, after]) {
      await x.c.query(`DROP SCHEMA IF EXISTS ${x.schema} CASCADE`)
      await x.c.end()
    }
  }
}

async function schemaAt0024(schema: string): Promise<{ schema: string; c: pg.Client }> {
  const upTo24 = mkdtempSync(join(tmpdir(), 'pombo-bench-ten-'))
  for (const x of migrations().filter((x) => x.version < '0025')) writeFileSync(join(upTo24, x.version), x.sql)
  await migrate(URL, schema, { dir: upTo24 })
  const c = new pg.Client({ connectionString: URL })
  await c.connect()
  await c.query(`SET search_path TO ${schema}`)
  return { schema, c }
}

/** One round of a statement: ms per execution. Its writes are rolled back, so each round starts from the same rows. */
async function round(c: pg.Client, s: Statement, which: 'before' | 'after', k: Keys, r: number): Promise<number> {
  const text = which === 'before' ? s.before : s.after
  const name = `${which}_${STATEMENTS.indexOf(s)}`
  await c.query('BEGIN')
  try {
    const [, ms] = await time(async () => {
      for (let i = 0; i < s.n; i++) await c.query({ name, text, values: s.params(k, i + r * s.n) })
    })
    return ms / s.n
  } finally {
    await c.query('ROLLBACK')
  }
}

async function plan(c: pg.Client, text: string, values: unknown[]): Promise<string> {
  const r = await c.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN (COSTS OFF) ${text}`, values })
  return r.rows
    .map((x) => x['QUERY PLAN'].trim())
    .filter((l) => /Scan|Cond|Arbiter/.test(l))
    .join(' | ')
}

async function fillSchema(c: pg.Client): Promise<void> {
  await c.query(`INSERT INTO orgs (id, plan, nome) VALUES ('00000000-0000-4000-8000-000000000000', 'pro', 'Org')`)
  await c.query(
    `INSERT INTO apps (id, org_id, nome, rate_por_min, receipt_key_enc, criado_em)
     SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000000', 'App ' || i, 60000, '\\x00', now() FROM generate_series(1, $1) i`,
    [APPS],
  )
  await c.query(
    `INSERT INTO app_keys (kid, app_id, key_hash, sandbox, created_at)
     SELECT substr(md5(a.id::text || k), 1, 8), a.id, '\\x00', false, now() FROM apps a, generate_series(1, 4) k`,
  )
  await c.query(
    `INSERT INTO sends (app_id, id, lane, target_kind, platforms, message, contents, recipients, recipients_exact, remaining,
                        ttl_s, queued_at, expansion_done)
     SELECT a.id, gen_random_uuid(), 1, 'segments', '{}', '{}', '{}', 0, false, 0, 3600, now(), false
       FROM apps a, generate_series(1, $1)`,
    [SENDS_PER_APP],
  )
  // A fixed pool of device ids, each send's rows a slice of it: probes and pages hit existing rows.
  const perSend = Math.ceil(DELIVERIES / (APPS * SENDS_PER_APP))
  await c.query(`CREATE TEMP TABLE pool AS SELECT gen_random_uuid() AS id, i FROM generate_series(1, $1) i`, [perSend])
  await c.query(
    `INSERT INTO deliveries (send_id, device_id, app_id, device_type, status, attempts, updated_at)
     SELECT s.id, p.id, s.app_id, 1, (p.i % 3)::smallint, 1, now() FROM sends s, pool p`,
  )
  await c.query(
    `INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
     SELECT current_date, s.id, p.id, 0, s.app_id, now() FROM sends s, pool p WHERE p.i <= $1`,
    [Math.ceil(RECEIPTS / (APPS * SENDS_PER_APP))],
  )
  await c.query(
    `INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, next_at, created_at)
     SELECT gen_random_uuid(), id, 'https://example.com/h', '\\x00', 0, now(), now() FROM apps`,
  )
  await c.query(
    `INSERT INTO webhook_attempts (destination_id, event_seq, n, attempt_id, result, at)
     SELECT d.id, i, 1, gen_random_uuid(), 'http', now() FROM webhook_destinations d, generate_series(1, $1) i`,
    [Math.ceil(ATTEMPTS / APPS)],
  )
  await c.query('ANALYZE')
}

async function sample(c: pg.Client): Promise<Keys> {
  const apps = (await c.query<{ id: string }>('SELECT id FROM apps')).rows.map((x) => x.id)
  const sends = (await c.query<{ app: string; send: string }>('SELECT app_id AS app, id AS send FROM sends')).rows
  const devices = (await c.query<{ id: string }>('SELECT id FROM pool ORDER BY id')).rows.map((x) => x.id)
  const kids = (await c.query<{ kid: string }>('SELECT kid FROM app_keys')).rows.map((x) => x.kid)
  const dests = (await c.query<{ app: string; id: string }>('SELECT app_id AS app, id FROM webhook_destinations')).rows
  return { apps, sends, devices, kids, dests }
}

async function sizes(c: pg.Client): Promise<Record<string, string>> {
  const r = await c.query<{ t: string; mb: string }>(
    `SELECT c.relname AS t, round(pg_total_relation_size(i.indexrelid) / 1048576.0, 1)::text AS mb
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
      WHERE i.indisprimary AND c.relnamespace = current_schema()::regnamespace
        AND c.relname IN ('deliveries', 'webhook_attempts', 'receipts_default', 'app_keys') ORDER BY 1`,
  )
  return Object.fromEntries(r.rows.map((x) => [x.t, x.mb]))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
