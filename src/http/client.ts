// An HTTP/1.1 client for many small calls to one service: node:http(s) over a keep-alive agent. `pombo simulate`'s
// fleet answers its pushes through it (thousands of devices' registrations, receipts and clicks), and the tests call
// the services they start through it. fetch (undici) spent about three times its CPU a call on the client side (its
// web streams, abort signals and transferables): in a 1,000-device simulate run, a third of the process's CPU.
import http from 'node:http'
import https from 'node:https'

export interface Reply {
  status: number
  headers: Headers
  text: string
}

export interface Ask {
  method?: string
  headers?: Record<string, string>
  body?: string | Buffer
  /** Aborts the call: it fails with the signal's reason. */
  signal?: AbortSignal
}

export interface HttpClient {
  request(url: string, ask?: Ask): Promise<Reply>
  /** The same calls behind fetch's signature, for code that takes a fetch (the device SDK): status, headers, text(). */
  fetch(url: string, init?: RequestInit): Promise<Response>
  /** Closes the idle kept-alive connections (and every connection as its call ends). */
  close(): void
}

/** `ca`: certificates trusted for https instead of the system's (and NODE_EXTRA_CA_CERTS'). */
export function httpClient(o: { ca?: string } = {}): HttpClient {
  const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true, ca: o.ca }) }
  /** A kept-alive connection the server closed as it was reused is tried once more on a new one (the request never
   *  reached the server: node's documented retry for `reusedSocket`). */
  const request = (url: string, ask: Ask = {}): Promise<Reply> =>
    once(agents, url, ask).catch((err: Error & { reused?: boolean; code?: string }) => {
      if (err.reused && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && !ask.signal?.aborted) return once(agents, url, ask)
      throw err
    })
  return {
    request,
    fetch: async (url, init = {}) => {
      const r = await request(url, {
        method: init.method,
        headers: init.headers as Record<string, string> | undefined,
        body: init.body as string | undefined,
        signal: init.signal ?? undefined,
      })
      const answer = {
        status: r.status,
        ok: r.status >= 200 && r.status < 300,
        headers: r.headers,
        text: async () => r.text,
        json: async () => JSON.parse(r.text),
      }
      return answer as unknown as Response
    },
    close: () => {
      agents['http:'].destroy()
      agents['https:'].destroy()
    },
  }
}

function once(agents: Record<'http:' | 'https:', http.Agent>, url: string, ask: Ask): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const signal = ask.signal
    if (signal?.aborted) return reject(signal.reason)
    const target = new URL(url)
    const lib = target.protocol === 'https:' ? https : http
    const agent = target.protocol === 'https:' ? agents['https:'] : agents['http:']
    const headers: Record<string, string | number> = { accept: '*/*', ...ask.headers }
    const named = (k: string) => Object.keys(headers).some((h) => h.toLowerCase() === k)
    if (ask.body !== undefined && !named('content-length')) headers['content-length'] = Buffer.byteLength(ask.body)
    const onAbort = () => req.destroy(signal?.reason)
    const req = lib.request(target, { method: ask.method ?? 'GET', headers, agent }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        signal?.removeEventListener('abort', onAbort)
        const h = new Headers()
        const raw = res.rawHeaders
        for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i] as string, raw[i + 1] as string)
        resolve({ status: res.statusCode ?? 0, headers: h, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    signal?.addEventListener('abort', onAbort, { once: true })
    req.on('error', (err: Error & { reused?: boolean }) => {
      signal?.removeEventListener('abort', onAbort)
      err.reused = req.reusedSocket
      reject(err)
    })
    req.end(ask.body)
  })
}
