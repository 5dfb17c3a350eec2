// Pombo behind PgBouncer in transaction mode (PM_PGBOUNCER=transaction), as the operations guide sets it up: the
// schema and statement timeout on the role, migrations and LISTEN on PM_DATABASE_DIRECT_URL. A send is delivered,
// its receipts counted and every event reaches the webhook in order (the dispatcher's per-transaction lock) through
// the pooler. Without the setting PgBouncer refuses the startup options; a role without the schema is refused; hot
// statements go unnamed, where named ones collide on a shared server connection.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { testCa } from '../fakes/tls'
import { WebhookReceiver } from '../fakes/webhook-receiver'
import { startDelivery } from '../helpers/delivery'
import { hasPgBouncer, PGBOUNCER, startPgBouncer } from '../helpers/pgbouncer'
import { createPool, queryPrepared } from '../../src/db/pool'
import { basic, DATABASE_URL, startService } from '../helpers/service'

async function admin(text: string): Promise<void> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  try {
    await c.query(text)
  } finally {
    await c.end()
  }
}

const upstream = new URL(DATABASE_URL)
const database = upstream.pathname.slice(1) || 'postgres'
/** The direct connection string of `user` (trusted on loopback, like the tests' own). */
const direct = (user: string) => `postgres://${user}@${upstream.hostname}:${upstream.port || 5432}/${database}`

if (!hasPgBouncer()) {
  t.fail(`${PGBOUNCER} is not installed (npm test installs it: scripts/test-tools.mjs)`)
} else {
  const id = randomBytes(4).toString('hex')
  const role = `pgb_${id}`
  const schema = `pgb_${id}`
  t.before(async () => {
    // What an operator runs once: the role's own schema and statement timeout (PgBouncer carries no startup options).
    await admin(`CREATE ROLE ${role} LOGIN`)
    await admin(`GRANT CREATE ON DATABASE ${database} TO ${role}`)
    await admin(`ALTER ROLE ${role} SET search_path = ${schema}`)
    await admin(`ALTER ROLE ${role} SET statement_timeout = '30s'`)
  })
  t.teardown(async () => {
    await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin(`DROP OWNED BY ${role}`)
    await admin(`DROP ROLE IF EXISTS ${role}`)
  })

  t.test('transaction mode: a send, its receipts and its webhook events end to end through PgBouncer', async (t) => {
    const bouncer = await startPgBouncer(t, {
      mode: 'transaction',
      users: [role, 'postgres'],
      upstream: { host: upstream.hostname, port: Number(upstream.port || 5432) },
    })
    const rx = await WebhookReceiver.start(t)
    const d = await startDelivery(t, {
      env: {
        DATABASE_URL: bouncer.url(role, database),
        PM_DATABASE_DIRECT_URL: direct(role),
        PM_PGBOUNCER: 'transaction',
        PM_LIMIT_IP_PER_MIN: '0',
        PM_WEBHOOK_ALLOW_PRIVATE: '1',
        PM_DEFAULT_PLAN: 'pro', // delivery.received: a plan that shows proof of arrival
      },
      service: { schema, webhookCa: testCa(), webhook: { pollMs: 20, retryDelaysMs: [50], timeoutMs: 2_000 } },
    })
    const through = await d.s.sql<{ port: number; user: string; schema: string }>(
      "SELECT current_setting('port')::int AS port, current_user AS user, current_schema() AS schema",
    )
    t.same(
      through,
      [{ port: Number(upstream.port || 5432), user: role, schema }],
      "the pool's sessions are the role's, on its schema",
    )

    const app = await d.s.createApp()
    await d.fcmFor(app)
    const a = await d.device(app, `pgb-a-${id}`)
    const b = await d.device(app, `pgb-b-${id}`)
    const put = await d.s.call('PUT', '/api/v1/confirmacoes', {
      body: { app_id: app.id, url: rx.url('/pgb'), modo: 'webhook' },
      headers: basic(app.api_key),
    })
    t.equal(put.status, 200, put.text)
    rx.secret('/pgb', put.json.segredo)
    rx.script('/pgb', [{ status: 502 }]) // a failed attempt is recorded and retried in order

    const sendId = await d.send(app, { include_player_ids: [a, b] })
    const row = await d.closed(sendId, 20_000)
    t.equal(row.successful, 2)
    const rcpt = (token: string) => d.fcm.delivered.find((r) => r.target === token)?.body.message.data.pm_rcpt
    const receipt = (player: string, token: string) =>
      d.s.call('POST', '/api/v1/receipts', {
        body: { app_id: app.id, notification_id: sendId, player_id: player, rcpt: rcpt(token), evento: 'recebido' },
      })
    t.equal((await receipt(a, `pgb-a-${id}`)).status, 200)
    t.equal((await receipt(b, `pgb-b-${id}`)).status, 200)
    const counted = await d.s.sql<{ recebidos: number }>('SELECT recebidos FROM sends WHERE id = $1', [sendId])
    t.equal(counted[0]?.recebidos, 2, 'receipts counted')

    const got = (await rx.waitFor(4, '/pgb', 20_000)).filter((r) => r.status === 200)
    t.same(
      got.map((r) => r.json.evento),
      ['notification.completed', 'delivery.received', 'delivery.received'],
      'every event once, in order, after the failed attempt',
    )
    const attempts = await d.s.sql<{ n: number }>("SELECT count(*)::int AS n FROM webhook_attempts WHERE result = 'http'")
    t.equal(attempts[0]?.n, 1, 'the failed attempt recorded')
    // A session lock taken through the pooler would stay on its server connection for good; a transaction's ends
    // with it. Once the queue is drained no transaction runs, so none may remain.
    let held = -1
    for (let i = 0; i < 60 && held !== 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50))
      const locks = await d.s.sql<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND a.usename = $1",
        [role],
      )
      held = locks[0]?.n ?? -1
    }
    t.equal(held, 0, 'no advisory lock outlives its transaction on a server connection')
  })

  t.test('without PM_PGBOUNCER PgBouncer refuses the startup options; a role without the schema is refused', async (t) => {
    const bouncer = await startPgBouncer(t, {
      mode: 'transaction',
      users: [role, 'postgres'],
      upstream: { host: upstream.hostname, port: Number(upstream.port || 5432) },
    })
    await t.rejects(
      startService(t, { schema, env: { DATABASE_URL: bouncer.url(role, database), PM_DATABASE_DIRECT_URL: direct(role) } }),
      /unsupported startup parameter: options/,
    )
    const other = `pgb_other_${id}`
    t.teardown(() => admin(`DROP SCHEMA IF EXISTS ${other} CASCADE`))
    await t.rejects(
      startService(t, {
        schema: other,
        env: { DATABASE_URL: bouncer.url(role, database), PM_DATABASE_DIRECT_URL: direct(role), PM_PGBOUNCER: 'transaction' },
      }),
      new RegExp(`schema is "${schema}", not PM_DB_SCHEMA "${other}": set it on the role`),
    )
  })

  t.test('hot statements go unnamed: two clients sharing one server connection never collide', async (t) => {
    // One server connection: every client's transaction lands on it. A statement prepared by name by one client
    // would exist there for the other, which does not know it ("prepared statement … already exists").
    const bouncer = await startPgBouncer(t, {
      mode: 'transaction',
      users: [role, 'postgres'],
      upstream: { host: upstream.hostname, port: Number(upstream.port || 5432) },
      poolSize: 1,
    })
    const settings = { databaseUrl: bouncer.url(role, database), dbSchema: schema, pgBouncer: true }
    const db = createPool(settings, 2)
    t.teardown(() => db.end())
    const a = await db.connect()
    const b = await db.connect()
    try {
      const text = 'SELECT $1::int + 1 AS n'
      t.same((await queryPrepared(a, text, [1])).rows, [{ n: 2 }])
      t.same((await queryPrepared(b, text, [2])).rows, [{ n: 3 }], 'the second client runs the same statement')
      t.same((await queryPrepared(a, text, [3])).rows, [{ n: 4 }])
      // What a named statement does there (why PM_PGBOUNCER=transaction turns them off):
      await a.query({ name: 'pm_named_probe', text, values: [1] })
      await t.rejects(
        b.query({ name: 'pm_named_probe', text, values: [1] }),
        /prepared statement "pm_named_probe" already exists/,
      )
    } finally {
      a.release(true)
      b.release(true)
    }
  })
}
