// A bare node:http2 client trusting the test CA: what the fakes' own tests use, and the bench's raw baseline
// (the same payloads posted without the engine, to measure the engine against).
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import { testCa } from './tls'

export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  json: any
}

export class RawH2Client {
  readonly session: ClientHttp2Session
  readonly #settings: Promise<http2.Settings>
  constructor(url: string) {
    this.session = http2.connect(url, { ca: testCa() })
    this.session.on('error', () => {}) // surfaced through the requests that fail
    this.#settings = new Promise((resolve) => this.session.once('remoteSettings', resolve))
  }

  /** Resolves with the server's first SETTINGS frame. */
  ready(): Promise<http2.Settings> {
    return this.#settings
  }

  request(method: string, path: string, headers: OutgoingHttpHeaders = {}, body?: string | Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const stream = this.session.request({ ':method': method, ':path': path, ...headers })
      stream.on('error', reject)
      let head: IncomingHttpHeaders = {}
      stream.on('response', (h) => {
        head = h
      })
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('close', () => reject(new Error(`stream closed without an answer (rstCode ${stream.rstCode})`)))
      stream.on('end', () => {
        if (head[':status'] === undefined) return reject(new Error('stream ended without response headers'))
        const text = Buffer.concat(chunks).toString('utf8')
        let json: unknown = null
        try {
          json = text ? JSON.parse(text) : null
        } catch {}
        resolve({ status: Number(head[':status']), headers: head, text, json })
      })
      stream.end(body)
    })
  }

  post(path: string, headers: OutgoingHttpHeaders, body: unknown): Promise<Answer> {
    return this.request(
      'POST',
      path,
      { 'content-type': 'application/json', ...headers },
      typeof body === 'string' ? body : JSON.stringify(body),
    )
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.session.closed || this.session.destroyed) return resolve()
      this.session.close(() => resolve())
    })
  }
}
