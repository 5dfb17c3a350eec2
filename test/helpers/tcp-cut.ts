// A TCP proxy a test can cut: the service reaches Postgres or Redis through it, and the test makes them vanish.
import { connect, createServer, type Server, type Socket } from 'node:net'

/** A TCP proxy that can refuse connections and drop the open ones. */
export class Cut {
  #server: Server | null = null
  #sockets = new Set<Socket>()
  port = 0
  constructor(
    readonly host: string,
    readonly target: number,
  ) {}
  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target, this.host)
      for (const s of [client, upstream]) {
        this.#sockets.add(s)
        s.on('close', () => this.#sockets.delete(s))
        s.on('error', () => {})
      }
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve))
    this.port = (server.address() as { port: number }).port
    this.#server = server
  }
  async cut(): Promise<void> {
    const s = this.#server
    this.#server = null
    for (const sock of this.#sockets) sock.destroy()
    await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()))
  }
}

/** A Postgres URL that reaches the test database through a proxy the test can cut (closed with the test). */
export async function postgresBehindCut(
  t: { teardown(fn: () => unknown): void },
  databaseUrl: string,
): Promise<{ proxy: Cut; url: string }> {
  const pg = new URL(databaseUrl)
  const proxy = new Cut(pg.hostname, Number(pg.port || 5432))
  await proxy.open()
  t.teardown(() => proxy.cut())
  const url = new URL(databaseUrl)
  url.port = String(proxy.port)
  return { proxy, url: url.toString() }
}
