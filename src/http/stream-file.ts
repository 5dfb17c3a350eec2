// Streams an open file as a response body with uWS backpressure (uNetworking/uWebSockets.js examples/VideoStreamer):
// read a bounded chunk, tryEnd it; when the socket is full, wait for onWritable and resend what was not taken.
// Memory per download is one chunk, whatever the file size.
import type { FileHandle } from 'node:fs/promises'
import type { HttpResponse } from 'uWebSockets.js'
import type { Request } from './request'

const CHUNK_BYTES = 64 * 1024

export interface FileBody {
  handle: FileHandle
  size: number
}

/** Sends `head` (status and headers, under cork) with the first chunk; always closes the file. */
export async function streamFile(res: HttpResponse, req: Request, file: FileBody, head: () => void): Promise<void> {
  const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(1, file.size)))
  let pos = 0
  let first = true
  try {
    if (file.size === 0) {
      res.cork(() => {
        head()
        res.end()
      })
      return
    }
    while (pos < file.size && !req.aborted) {
      const { bytesRead } = await file.handle.read(buf, 0, Math.min(buf.length, file.size - pos), pos)
      if (req.aborted) return
      if (bytesRead === 0) {
        // The file shrank under us: the declared length can no longer be honoured.
        res.close()
        return
      }
      await sendChunk(res, req, buf.subarray(0, bytesRead), file.size, first ? head : null)
      first = false
      pos += bytesRead
    }
  } finally {
    await file.handle.close().catch(() => {})
  }
}

function sendChunk(res: HttpResponse, req: Request, chunk: Buffer, total: number, head: (() => void) | null): Promise<void> {
  const start = res.getWriteOffset()
  let ok = false
  let done = false
  res.cork(() => {
    head?.()
    ;[ok, done] = res.tryEnd(chunk, total)
  })
  if (ok || done) return Promise.resolve()
  return new Promise((resolve) => {
    req.onAbort(resolve)
    res.onWritable((offset) => {
      if (req.aborted) {
        resolve()
        return true
      }
      // The socket took `offset - start` bytes of this chunk so far: resend the rest.
      const [ok2, done2] = res.tryEnd(chunk.subarray(offset - start), total)
      if (ok2 || done2) resolve()
      return ok2
    })
  })
}
