// The lean AsyncResource#bind installed by the HTTP/2 pool (src/delivery/providers/h2-bind.ts) binds exactly as
// Node's does: the function runs in the resource's async scope, with the caller's receiver (or the one given), its
// arguments and its answer, and keeps its length; and node:http2 still works with it.
import { AsyncResource, executionAsyncId, executionAsyncResource } from 'node:async_hooks'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { installLeanAsyncBind } from '../../src/delivery/providers/h2-bind'

installLeanAsyncBind()

t.test('a bound function runs in the resource scope with its receiver, arguments and answer', async (t) => {
  const r = new AsyncResource('Probe')
  let seen: { id: number; resource: object; self: unknown; args: unknown[] } | undefined
  const fn = function (this: unknown, a: number, b: number) {
    seen = { id: executionAsyncId(), resource: executionAsyncResource(), self: this, args: [a, b] }
    return a + b
  }
  const bound = r.bind(fn)
  t.equal(bound.length, 2, 'the length of the function')
  const self = { name: 'receiver' }
  t.equal(bound.call(self, 2, 3), 5, 'its answer')
  t.equal(seen?.id, r.asyncId(), 'inside the resource')
  t.equal(seen?.resource, r)
  t.equal(seen?.self, self, "the caller's receiver")
  t.same(seen?.args, [2, 3])

  // Node accepts a receiver as bind's second argument (its typings name only the first).
  const withThis = (r.bind as (f: typeof fn, thisArg: unknown) => typeof fn)(fn, self)
  withThis.call({ other: true }, 1, 1)
  t.equal(seen?.self, self, 'a given receiver wins')
  t.equal(withThis.length, 2)

  const staticBound = AsyncResource.bind(function named(this: unknown) {
    return executionAsyncId()
  })
  t.not(staticBound(), executionAsyncId(), 'AsyncResource.bind makes its own resource')
  t.throws(() => r.bind(42 as unknown as () => void), TypeError, 'a non-function is refused')
})

t.test('node:http2 requests still answer with it', async (t) => {
  const server = http2.createServer((req, res) => res.end(`ok ${req.url}`))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const session = http2.connect(`http://127.0.0.1:${port}`)
  try {
    const bodies = await Promise.all(
      [1, 2, 3].map(
        (i) =>
          new Promise<string>((resolve, reject) => {
            const s = session.request({ ':path': `/${i}` })
            let body = ''
            s.setEncoding('utf8')
            s.on('data', (c: string) => {
              body += c
            })
            s.on('end', () => resolve(body))
            s.on('error', reject)
          }),
      ),
    )
    t.same(bodies, ['ok /1', 'ok /2', 'ok /3'])
  } finally {
    session.close()
    await new Promise((resolve) => server.close(resolve))
  }
})
