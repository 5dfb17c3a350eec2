// arrayOf (src/db/arrays.ts) writes the array literals of the send write itself: every value must reach Postgres as
// it was, whatever its characters, and come back equal through the element type's own parser.
import pg from 'pg'
import t from 'tap'
import { arrayOf } from '../../src/db/arrays'
import { DATABASE_URL } from '../helpers/service'

const HOSTILE_TEXTS = [
  '',
  'NULL',
  'null',
  'plain',
  ' leading and trailing ',
  'a,b',
  '{braces}',
  'quote " inside',
  'back\\slash',
  '\\"both\\"',
  'new\nline\ttab\rreturn',
  'bell\u0007 and \u001f',
  'é ção 🐦 日本',
  'a lone \ud800 surrogate',
  '"',
  '\\',
]

t.test('text elements come back exactly as written, nulls as nulls', async (t) => {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  t.teardown(() => c.end())
  const values = [...HOSTILE_TEXTS, null]
  const r = await c.query<{ v: string | null }>('SELECT v FROM unnest($1::text[]) WITH ORDINALITY AS x(v, n) ORDER BY n', [
    arrayOf('text', values),
  ])
  // A lone surrogate is not UTF-8: Node writes it as U+FFFD, as it would any string it sends to Postgres.
  t.same(
    r.rows.map((x) => x.v),
    values.map((v) => (v === null ? null : v.replace(/[\ud800-\udbff](?![\udc00-\udfff])/g, '\ufffd'))),
  )
})

t.test('JSON text travels as jsonb, equal to what JSON.stringify wrote', async (t) => {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  t.teardown(() => c.end())
  const docs = [{ contents: { en: 'quote " back\\ new\nline 🐦' } }, ['a', 1, true, null], 'just a string', 42, {}, null]
  const r = await c.query<{ v: unknown }>('SELECT v FROM unnest($1::jsonb[]) WITH ORDINALITY AS x(v, n) ORDER BY n', [
    arrayOf(
      'jsonb',
      docs.map((d) => (d === null ? null : JSON.stringify(d))),
    ),
  ])
  t.same(
    r.rows.map((x) => x.v),
    docs,
  )
})

t.test('uuids, integers, booleans and instants', async (t) => {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  t.teardown(() => c.end())
  const at = [new Date('2026-11-27T04:52:00.123Z'), new Date(0), null]
  const r = await c.query(
    `SELECT (SELECT array_agg(x ORDER BY n) FROM unnest($1::uuid[]) WITH ORDINALITY AS u(x, n)) AS u,
            $2::int[] AS i, $3::smallint[] AS s, $4::bool[] AS b, $5::timestamptz[] AS t`,
    [
      arrayOf('uuid', ['00000000-0000-4000-8000-000000000001', null]),
      arrayOf('int', [0, -7, 2_147_483_647]),
      arrayOf('smallint', [1, null]),
      arrayOf('bool', [true, false, null]),
      arrayOf('timestamptz', at),
    ],
  )
  const row = r.rows[0]
  t.same(row.u, ['00000000-0000-4000-8000-000000000001', null])
  t.same(row.i, [0, -7, 2_147_483_647])
  t.same(row.s, [1, null])
  t.same(row.b, [true, false, null])
  t.same(
    (row.t as Array<Date | null>).map((d) => d?.getTime() ?? null),
    at.map((d) => d?.getTime() ?? null),
    'to the millisecond',
  )
})

t.test('an empty column is an empty array', async (t) => {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  t.teardown(() => c.end())
  const r = await c.query('SELECT cardinality($1::text[]) AS n', [arrayOf('text', [])])
  t.equal(r.rows[0].n, 0)
})
