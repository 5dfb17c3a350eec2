// A pooled connection lives PM_PG_CONN_LIFETIME_S at most, so a prepared statement's generic plan (made once per
// connection, kept until something invalidates it) is made again with the tables as they are now.
import t from 'tap'
import { loadConfig } from '../../src/core/config'
import { PG_CONN_LIFETIME_S } from '../../src/core/config'
import { createPool, type Db } from '../../src/db/pool'
import { until } from '../helpers/until'

async function backend(db: Db): Promise<number> {
  return (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid as number
}

t.test('a connection older than its lifetime is replaced; by default one lives 600 s', async (t) => {
  t.equal(loadConfig({}).pgConnLifetimeS, PG_CONN_LIFETIME_S)
  t.equal(PG_CONN_LIFETIME_S, 600)
  t.equal(loadConfig({ PM_PG_CONN_LIFETIME_S: '0' }).pgConnLifetimeS, 0, '0: never')
  const cfg = loadConfig(process.env)
  const short = createPool({ ...cfg, dbSchema: 'public', pgConnLifetimeS: 1 }, 1)
  const lasting = createPool({ ...cfg, dbSchema: 'public' }, 1)
  t.teardown(() => Promise.all([short.end(), lasting.end()]))
  const [s1, l1] = [await backend(short), await backend(lasting)]
  t.equal(await backend(short), s1, 'within its lifetime the same connection serves')
  await until('a new connection serves once the lifetime has passed', async () => (await backend(short)) !== s1)
  t.not(await backend(short), s1, 'after it, a new connection (a new backend) serves')
  t.equal(await backend(lasting), l1, 'the default lifetime kept the other one')
  // A connection busy when its lifetime ends finishes its work, then goes.
  const c = await short.connect()
  const busy = await backend(c as unknown as Db)
  // A fixed pause on purpose, past the 1 s lifetime: the assertion is that the held connection is not cut during it.
  await new Promise((r) => setTimeout(r, 1_200))
  t.equal((await c.query('SELECT 1 AS one')).rows[0]?.one, 1, 'a checked-out connection is not cut under its holder')
  c.release()
  t.not(await backend(short), busy, 'and is replaced once given back')
})
