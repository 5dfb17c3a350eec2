// What a parsed body may hold (src/core/json-guard.ts): only values stored and echoed back exactly, named by path.
import t from 'tap'
import { findUnstorable, guardBody, pathText } from '../../src/core/json-guard'

t.test('lone surrogates, U+0000, non-finite numbers and deep nesting are found, with their path', async (t) => {
  t.same(guardBody({ contents: { en: 'ok', pt: 'x\ud800' } }, 32), {
    campo: 'contents.pt',
    motivo: 'contém texto que não é Unicode válido (surrogate isolado ou bytes que não são UTF-8)',
  })
  t.same(guardBody({ ids: ['a', 'b', 'c\udfff'] }, 32)?.campo, 'ids[2]')
  t.match(guardBody({ data: { k: 'a\u0000b' } }, 32), { campo: 'data.k', motivo: /U\+0000/ })
  t.match(guardBody({ n: Number.POSITIVE_INFINITY }, 32), { campo: 'n', motivo: /número/ })
  t.match(guardBody({ data: { 'k\ud800': 1 } }, 32), { campo: 'data', motivo: /chave/ })
  t.match(guardBody({ '\udc00': 1 }, 32), { campo: '(corpo)', motivo: /chave/ })
  t.equal(
    guardBody({ a: 'emoji 😀 ok', b: [1, -0, 1e308], c: null, d: true }, 32),
    null,
    'well-formed pairs and finite numbers pass',
  )
})

t.test('nesting: the body is level 1; past the limit the value is refused without being walked', async (t) => {
  let v: unknown = 'leaf'
  for (let i = 0; i < 31; i++) v = { a: v }
  t.equal(guardBody({ data: v }, 32), null, '32 levels counting the body')
  t.match(guardBody({ data: { a: v } }, 32), { motivo: /aninha mais de 32/ })
  let deep: unknown = null
  for (let i = 0; i < 100_000; i++) deep = [deep]
  t.match(findUnstorable(deep, 32), { motivo: /aninha/ }, '100,000 levels: no stack overflow')
})

t.test('lenient fields are dropped, as if absent; the others still refuse', async (t) => {
  const body: Record<string, unknown> = { fabricante: 'x\ud800', device_model: 'ok' }
  t.equal(guardBody(body, 32, new Set(['fabricante'])), null)
  t.same(body, { device_model: 'ok' })
  t.equal(guardBody({ fabricante: 'ok', device_model: 'x\ud800' }, 32, new Set(['fabricante']))?.campo, 'device_model')
})

t.test('a quoted path is cut: the keys are the caller’s', async (t) => {
  t.equal(pathText(['a', 3, 'b']), 'a[3].b')
  const long = pathText(['k'.repeat(5_000), 'x'])
  t.ok(long.length <= 201 && long.endsWith('…'))
})
