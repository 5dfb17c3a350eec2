// The dashboard's static files, served by Pombo itself (no CDN: the dashboard works offline): its stylesheet and
// script, and chart.js's UMD build from node_modules. Read once at start, served from memory with an ETag.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Router } from '../http/router'

interface Asset {
  body: Buffer
  type: string
  etag: string
}

function load(path: string, type: string): Asset {
  const body = readFileSync(path)
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` }
}

export function assetRoutes(r: Router): void {
  const dir = join(__dirname, 'assets')
  const files: Record<string, Asset> = {
    '/assets/painel.css': load(join(dir, 'painel.css'), 'text/css; charset=utf-8'),
    '/assets/painel.js': load(join(dir, 'painel.js'), 'text/javascript; charset=utf-8'),
    // chart.js's package exports do not list its UMD file; it sits beside the main entry.
    '/assets/chart.umd.js': load(join(dirname(require.resolve('chart.js')), 'chart.umd.js'), 'text/javascript; charset=utf-8'),
  }
  for (const [path, a] of Object.entries(files)) {
    r.get(path, { headers: ['if-none-match'] }, (req) => {
      const headers = { ETag: a.etag, 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' }
      if (req.header('if-none-match') === a.etag) return { status: 304, headers }
      return { status: 200, body: a.body, contentType: a.type, headers }
    })
  }
}
