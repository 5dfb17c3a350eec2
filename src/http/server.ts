// A uWS server: listen, route, and close gracefully (stop accepting, let in-flight requests finish, then drop sockets).
import type { Logger } from 'pino'
import uWS from 'uWebSockets.js'
import type { ProxyTrust } from './client-ip'
import { Router, type RouterOptions } from './router'

/** On an unsupported Node major the package silently falls back to a slow pure-JS server (this build ships native bindings for Node 16, 18 and 20 only). */
export function assertNativeUws(): void {
  if (!String(uWS.App).includes('[native code]')) {
    throw new Error(`uWebSockets.js native binding did not load on Node ${process.version}; refusing to start on the fallback`)
  }
}

export class HttpServer {
  readonly app = uWS.App()
  readonly router: Router
  #listen: uWS.us_listen_socket | null = null
  port = 0

  constructor(
    readonly name: string,
    private readonly log: Logger,
    proxies: ProxyTrust,
    o: RouterOptions,
  ) {
    assertNativeUws()
    this.router = new Router(this.app, log, proxies, { ...o, server: name })
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (sock) => {
        if (!sock) return reject(new Error(`${this.name}: cannot listen on ${host}:${port}`))
        this.#listen = sock
        this.port = uWS.us_socket_local_port(sock as unknown as uWS.us_socket)
        resolve(this.port)
      })
    })
  }

  /** Stops accepting, waits up to `graceMs` for in-flight requests, then closes every connection. */
  async close(graceMs = 10_000): Promise<void> {
    if (this.#listen) {
      uWS.us_listen_socket_close(this.#listen)
      this.#listen = null
    }
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.log.warn({ server: this.name, inflight: this.router.inflight }, 'grace period over; closing connections')
        resolve()
      }, graceMs)
    })
    await Promise.race([this.router.drained(), timeout])
    clearTimeout(timer)
    const app = this.app as unknown as { close?: () => void }
    app.close?.()
  }
}
