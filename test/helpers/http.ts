// The tests' HTTP/1.1 client for the services they start: node:http with a keep-alive agent. fetch (undici) took
// about 0.3 ms more CPU a request on the client side, and the suite makes tens of thousands of calls; what the tests
// read of an answer is the same: the status, the headers as a Headers object, the body as text.
import http from 'node:http'

const agent = new http.Agent({ keepAlive: true })

export interface Reply {
  status: number
  headers: Headers
  text: string
}

export interface Ask {
  method?: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/** One request. A kept-alive connection the server closed as it was reused is tried once more on a new one (the
 *  request never reached the server: node's documented retry for `reusedSocket`). */
export function request(url: string, o: Ask = {}): Promise<Reply> {
  return once(url, o).catch((err: Error & { reused?: boolean; code?: string }) => {
    if (err.reused && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return once(url, o)
    throw err
  })
}

function once(url: string, o: Ask): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { accept: '*/*', ...o.headers }
    const named = (k: string) => Object.keys(headers).some((h) => h.toLowerCase() === k)
    if (o.body !== undefined && !named('content-length')) headers['content-length'] = Buffer.byteLength(o.body)
    const req = http.request(url, { method: o.method ?? 'GET', headers, agent }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const h = new Headers()
        const raw = res.rawHeaders
        for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i] as string, raw[i + 1] as string)
        resolve({ status: res.statusCode ?? 0, headers: h, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    req.on('error', (err: Error & { reused?: boolean }) => {
      err.reused = req.reusedSocket
      reject(err)
    })
    req.end(o.body)
  })
}
