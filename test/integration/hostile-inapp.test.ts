// Hostile input on the in-app routes: a forged list cursor must be the 400 naming `cursor` (the spec, Errors In-app: "malformed
// identifier"), never a 500. Found by the fuzzer (`npm run fuzz -- --runs 600 --seed 5`, cases 17 and 57).
//
// GET /api/v1/in_app_messages?cursor= is opaque base64url of `<criado_em ISO>|<id>`; `decodeCursor`
// (src/inapp/service.ts) only checks the id against /^[0-9a-f-]{36}$/ and the date with Date.parse, so an "id" that
// is not a UUID (36 dashes, 36 hex digits) reaches Postgres as `$4::uuid` (22P02), and a date before 4713 BC (which
// JavaScript holds and Postgres' timestamptz does not) reaches it as `$3::timestamptz` (22008): both answer 500.
import t from 'tap'
import { inappWorld } from '../helpers/inapp'

const b64 = (s: string): string => Buffer.from(s).toString('base64url')

t.test('a forged list cursor is a 400 naming cursor, never a 500', async (t) => {
  const w = await inappWorld(t)
  const ids = [await w.campaign({}, false), await w.campaign({}, false), await w.campaign({}, false)]

  // The cursors the service gives out keep working (the fix must not refuse them).
  const first = await w.get('?limit=2')
  t.equal(first.status, 200)
  t.type(first.json.proximo, 'string', 'a first page of 2 out of 3 has a next cursor')
  const second = await w.get(`?limit=2&cursor=${first.json.proximo}`)
  t.equal(second.status, 200)
  t.same(
    [...first.json.campanhas, ...second.json.campanhas].map((c: { id: string }) => c.id).sort(),
    [...ids].sort(),
    'two pages list the three campaigns',
  )

  const forged: Array<[string, string]> = [
    ['an id of 36 dashes', `2026-01-01T00:00:00.000Z|${'-'.repeat(36)}`],
    ['an id of 36 hex digits', `2026-01-01T00:00:00.000Z|${'a'.repeat(36)}`],
    ['an id with dashes misplaced', `2026-01-01T00:00:00.000Z|--d6c9-80ded-1---e5ec--7290d38-23c--`],
    ['the earliest date JavaScript holds (-271821)', `-271821-04-20T00:00:00.000Z|${ids[0]}`],
    ['a date in 4714 BC (before timestamptz)', `-004713-01-01T00:00:00.000Z|${ids[0]}`],
  ]
  for (const [what, raw] of forged) {
    const r = await w.get(`?cursor=${b64(raw)}`)
    t.equal(r.status, 400, `cursor with ${what}: 400 (got ${r.status})`)
    t.equal(r.json?.explain?.campo, 'cursor', `cursor with ${what}: names the field`)
  }
  const logged = w.s.logs.filter((l) => l.status === 500 || l.level === 50).length
  t.equal(logged, 0, 'no 500 logged')
})

t.test('open_url refuses schemes that run or embed content; dates that do not exist are refused', async (t) => {
  const w = await inappWorld(t)
  for (const url of [
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'data:text/html,<b>x</b>',
    'vbscript:x',
    'file:///etc/passwd',
  ]) {
    const r = await w.create({ conteudo: { pt: { titulo: 'x', botao: { texto: 'ok', acao: { tipo: 'open_url', url } } } } })
    t.equal(r.status, 422, url)
  }
  t.equal(
    (
      await w.create({
        conteudo: { pt: { titulo: 'x', botao: { texto: 'ok', acao: { tipo: 'open_url', url: 'meuapp://promo' } } } },
      })
    ).status,
    201,
    'a custom app scheme is still accepted',
  )
  for (const inicia_em of ['2026-02-30T00:00:00Z', '2026-04-31T10:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T10:00:00+23:60']) {
    const r = await w.create({ inicia_em })
    t.equal(r.status, 400, `${inicia_em}: not an RFC 3339 date (inapp-dates.test.ts has the rest)`)
  }
  const long = 'k'.repeat(8_000)
  const r = await w.create({ gatilho: { tipo: 'ao_abrir', [long]: 1 } })
  t.equal(r.status, 422)
  t.ok(r.text.length < 4_000, `the answer quotes the caller's key cut short (${r.text.length} bytes)`)
})
