// node:http2 binds every client request to an AsyncResource (ClientHttp2Session#request calls
// `reqAsync.bind(...)`), and Node 20's AsyncResource#bind gives each bound function a deprecated `asyncResource`
// accessor built from two fresh `util.deprecate` wrappers (DEP0172): about 11 µs a call on this machine against 0.5 µs
// without it, ~6% of a delivering worker's CPU. This replaces the method with the same binding (the function runs in
// the resource's async scope, with its receiver or the given one, and keeps its length) without the deprecated
// accessor, which nothing in this process reads. Installed by the HTTP/2 pool, so only processes that deliver carry it.
import { AsyncResource } from 'node:async_hooks'

let installed = false

export function installLeanAsyncBind(): void {
  if (installed) return
  installed = true
  function leanBind(this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown) {
    if (typeof fn !== 'function') throw new TypeError('The "fn" argument must be of type function')
    const resource = this
    const bound =
      thisArg === undefined
        ? function (this: unknown, ...args: unknown[]) {
            return resource.runInAsyncScope(fn, this, ...args)
          }
        : (...args: unknown[]) => resource.runInAsyncScope(fn, thisArg, ...args)
    Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, writable: false, value: fn.length })
    return bound
  }
  AsyncResource.prototype.bind = leanBind as typeof AsyncResource.prototype.bind
}
