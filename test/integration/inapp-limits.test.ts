// The bound on a campaign's list of targets (docs/design/inapp.md: at most 10,000 in `alvo`; the spec names no
// figure for in-app) and what the 256 KB campaign body leaves of it for player ids.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { inappWorld } from '../helpers/inapp'

t.test('alvo holds up to 10,000 targets; the 10,001st is a 422 naming alvo', async (t) => {
  const w = await inappWorld(t)
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`)
  const ok = await w.create({ alvo_tipo: 'external_ids', alvo: ids(10_000) })
  t.equal(ok.status, 201)
  t.equal(ok.json.alvo.length, 10_000)
  const over = await w.create({ alvo_tipo: 'external_ids', alvo: ids(10_001) })
  t.equal(over.status, 422)
  t.same(over.json.explain.problemas, [{ campo: 'alvo', motivo: 'tem 10001 itens; máximo 10000' }])
  const players = Array.from({ length: 6_500 }, () => randomUUID())
  t.equal((await w.create({ alvo_tipo: 'player_ids', alvo: players })).status, 201, '6,500 player ids fit in 256 KB')
  const tooBig = await w.create({ alvo_tipo: 'player_ids', alvo: Array.from({ length: 7_000 }, () => randomUUID()) })
  t.equal(tooBig.status, 413, '7,000 player ids do not: the body cap answers first')
  t.equal((await w.s.sql('SELECT count(*)::int AS n FROM inapp_campaigns'))[0]?.n, 2)
})
