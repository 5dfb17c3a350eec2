// A uWS server: listen, route, and close gracefully (stop accepting, let in-flight requests finish, then drop sockets).

import type uWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import type { ProxyTrust } from './client-ip'
import { Router, type RouterOptions } from './router'
import { loadUws } from './uws'

/** How long answers written while stopping may take to reach their clients before the last connections are reset. */
const ANSWER_LINGER_MS = 500

export class HttpServer {
  readonly #uws = loadUws().uws
  readonly app = this.#uws.App()
  readonly router: Router
  #listen: uWS.us_listen_socket | null = null
  port = 0

  constructor(
    readonly name: string,
    private readonly log: Logger,
    proxies: ProxyTrust,
    o: RouterOptions,
  ) {
    this.router = new Router(this.app, log, proxies, { ...o, server: name })
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (sock) => {
        if (!sock) return reject(new Error(`${this.name}: cannot listen on ${host}:${port}`))
        this.#listen = sock
        this.port = this.#uws.us_socket_local_port(sock as unknown as uWS.us_socket)
        resolve(this.port)
      })
    })
  }

  /** Stops accepting, waits up to `graceMs` for in-flight requests, then closes every connection. */
  async close(graceMs = 10_000): Promise<void> {
    this.router.closing = true
    if (this.#listen) {
      this.#uws.us_listen_socket_close(this.#listen)
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
    // The final close resets every connection still open (the current uWebSockets.js build does), and a reset
    // discards an answer the client has not read yet: answers written during the stop get a moment to be read and
    // their connections to finish their graceful shutdown first.
    if (this.router.answeredWhileClosing > 0) await new Promise((r) => setTimeout(r, ANSWER_LINGER_MS))
    const app = this.app as unknown as { close?: () => void }
    app.close?.()
  }
}
