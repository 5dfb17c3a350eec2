// streamFile against a scripted uWS response: the socket takes only part of each chunk, then asks for more through
// onWritable with its write offset; every byte must arrive once, in order, and the file must be closed.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { HttpResponse } from 'uWebSockets.js'
import type { Request } from '../../src/http/request'
import { streamFile } from '../../src/http/stream-file'

class FakeSocket {
  out: Buffer[] = []
  offset = 0
  capacity: number
  writable: ((offset: number) => boolean) | null = null
  headWritten = 0
  ended = false
  constructor(
    readonly perDrain: number,
    readonly total: number,
  ) {
    this.capacity = perDrain
  }
  res(): HttpResponse {
    return {
      getWriteOffset: () => this.offset,
      cork: (f: () => void) => f(),
      tryEnd: (chunk: Buffer, total: number) => {
        const take = Math.min(chunk.length, this.capacity)
        this.out.push(Buffer.from(chunk.subarray(0, take)))
        this.offset += take
        this.capacity -= take
        const done = this.offset === total
        if (done) this.ended = true
        return [take === chunk.length, done]
      },
      onWritable: (f: (offset: number) => boolean) => {
        this.writable = f
      },
      end: () => {
        this.ended = true
      },
      close: () => {},
    } as unknown as HttpResponse
  }
  /** The kernel drained: room for `perDrain` more bytes. */
  drain(): void {
    this.capacity = this.perDrain
    const f = this.writable
    if (f?.(this.offset)) this.writable = null
  }
}

const fakeReq = () => ({ aborted: false, onAbort: (_f: () => void) => {} }) as unknown as Request

t.test('a file larger than the socket arrives whole through onWritable', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pm-stream-'))
  const data = randomBytes(300_000)
  const path = join(dir, 'f.bin')
  writeFileSync(path, data)
  const handle = await open(path, 'r')
  const sock = new FakeSocket(10_007, data.length)
  let heads = 0
  const p = streamFile(sock.res(), fakeReq(), { handle, size: data.length }, () => heads++)
  let drains = 0
  while (!sock.ended) {
    await new Promise((r) => setImmediate(r))
    if (sock.writable) {
      sock.drain()
      drains++
    }
  }
  await p
  t.ok(drains > 20, `waited for the socket ${drains} times`)
  t.equal(heads, 1, 'status and headers written once')
  t.ok(Buffer.concat(sock.out).equals(data), 'every byte once, in order')
  await t.rejects(handle.stat(), 'file closed')
})

t.test('a client that goes away stops the stream and closes the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pm-stream-'))
  const path = join(dir, 'f.bin')
  writeFileSync(path, randomBytes(200_000))
  const handle = await open(path, 'r')
  const sock = new FakeSocket(1_000, 200_000)
  const listeners: Array<() => void> = []
  const req = { aborted: false, onAbort: (f: () => void) => listeners.push(f) } as unknown as Request & { aborted: boolean }
  const p = streamFile(sock.res(), req, { handle, size: 200_000 }, () => {})
  while (!sock.writable) await new Promise((r) => setImmediate(r))
  req.aborted = true
  for (const f of listeners) f()
  await p
  t.ok(sock.offset < 200_000)
  await t.rejects(handle.stat(), 'file closed')
})
