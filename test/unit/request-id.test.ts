import t from 'tap'
import { correlationIdOf, traceIdOf } from '../../src/http/request-id'

t.test('X-Request-Id: visible ASCII, 1-128 characters, else ignored', async (t) => {
  t.equal(correlationIdOf('abc-123/x:y', ''), 'abc-123/x:y')
  t.equal(correlationIdOf('a'.repeat(128), ''), 'a'.repeat(128))
  for (const bad of ['a'.repeat(129), 'a b', 'a\tb', 'a\nb', 'é', '\u0000', 'a\ufffdb'])
    t.equal(correlationIdOf(bad, ''), null, JSON.stringify(bad))
})

t.test('traceparent (W3C Trace Context §3.2): its trace id, or nothing', async (t) => {
  const id = '4bf92f3577b34da6a3ce929d0e0e4736'
  t.equal(traceIdOf(`00-${id}-00f067aa0ba902b7-01`), id)
  t.equal(traceIdOf(`cc-${id}-00f067aa0ba902b7-01-later`), id, 'a later version may append fields')
  for (const bad of [
    `00-${id}-00f067aa0ba902b7-01-x`,
    `ff-${id}-00f067aa0ba902b7-01`,
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    `00-${id}-${'0'.repeat(16)}-01`,
    `00-${id.toUpperCase()}-00f067aa0ba902b7-01`,
    `00-${id}-00f067aa0ba902b7`,
    `0-${id}-00f067aa0ba902b7-01`,
    `00-${id}-00f067aa0ba902b7-01${'-'.repeat(600)}`,
    '',
  ]) {
    t.equal(traceIdOf(bad), null, bad.slice(0, 80))
  }
  t.equal(correlationIdOf('', `00-${id}-00f067aa0ba902b7-01`), id)
  t.equal(correlationIdOf('mine', `00-${id}-00f067aa0ba902b7-01`), 'mine', 'X-Request-Id wins')
  t.equal(correlationIdOf('bad id', `00-${id}-00f067aa0ba902b7-01`), id, 'an invalid X-Request-Id falls back to the trace id')
})
