// Serves the example on http://localhost:5173 (a secure context, so service workers and notifications work):
// the page and its worker from this folder, the built SDK under /sdk/ (packages/sdk/dist: the ES modules and
// pombo.min.js), and /api/* forwarded to Pombo, so the example needs one address only (the device routes also
// answer other origins).
//   POMBO_URL  where Pombo's API is (default http://127.0.0.1:8080)
//   PORT       this server's port (default 5173)
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(new URL('.', import.meta.url))
const sdkDist = join(here, '..', '..', 'packages', 'sdk', 'dist')
const pombo = (process.env.POMBO_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
const port = Number(process.env.PORT ?? 5173)
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
}

async function proxy(req, res) {
  const chunks = []
  for await (const c of req) chunks.push(c)
  const headers = {}
  for (const h of ['content-type', 'if-none-match', 'accept']) if (req.headers[h]) headers[h] = req.headers[h]
  try {
    const r = await fetch(pombo + req.url, {
      method: req.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    })
    const out = {}
    for (const h of ['content-type', 'etag', 'retry-after', 'x-pm-request-id']) if (r.headers.get(h)) out[h] = r.headers.get(h)
    res.writeHead(r.status, out).end(Buffer.from(await r.arrayBuffer()))
  } catch (err) {
    res
      .writeHead(502, { 'content-type': 'application/json' })
      .end(JSON.stringify({ errors: [`Pombo inacessível: ${err.message}`] }))
  }
}

async function file(req, res) {
  const path = new URL(req.url, 'http://x').pathname
  const [root, rel] = path.startsWith('/sdk/') ? [sdkDist, path.slice(5)] : [here, path === '/' ? 'index.html' : path.slice(1)]
  const full = normalize(join(root, rel))
  if (!full.startsWith(root)) return res.writeHead(404).end()
  try {
    const body = await readFile(full)
    // Service-Worker-Allowed is not needed: sw.js is served from the root.
    res
      .writeHead(200, { 'content-type': TYPES[extname(full)] ?? 'application/octet-stream', 'cache-control': 'no-store' })
      .end(body)
  } catch {
    res.writeHead(404).end()
  }
}

createServer((req, res) => (req.url.startsWith('/api/') ? proxy(req, res) : file(req, res))).listen(port, '127.0.0.1', () => {
  console.log(`exemplo: http://localhost:${port}/?app=<app_id>   (API: ${pombo})`)
})
