// Runs wrk (Debian package; autocannon saturates its own core below what uWS serves) and parses its report.
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface WrkResult {
  rps: number
  p50Ms: number
  p99Ms: number
  errors: number
  non2xx: number
}

export function ensureWrk(): void {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
  } catch (err) {
    // wrk --version exits 1 but prints; a missing binary throws ENOENT.
    if ((err as { code?: string }).code !== 'ENOENT') return
    if (process.getuid?.() !== 0) throw new Error('wrk is not installed: apt-get install -y wrk')
    console.log('installing wrk (apt-get install -y wrk)…')
    execFileSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq wrk'], { stdio: 'inherit' })
  }
}

function ms(v: string, unit: string): number {
  const n = Number(v)
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n
}

export interface WrkOptions {
  url: string
  durationS?: number
  connections?: number
  threads?: number
  /** A Lua script body (request shaping: method, headers, unique bodies). */
  lua?: string
  /** wrk2-style fixed rate is not in Debian's wrk: a script can pace instead; see register bench. */
}

export function wrk(o: WrkOptions): Promise<WrkResult> {
  const args = ['-t', String(o.threads ?? 1), '-c', String(o.connections ?? 64), '-d', `${o.durationS ?? 5}s`, '--latency']
  if (o.lua) {
    const file = join(tmpdir(), `pombo-wrk-${process.pid}-${Math.random().toString(36).slice(2)}.lua`)
    writeFileSync(file, o.lua)
    args.push('-s', file)
  }
  args.push(o.url)
  return new Promise((resolve, reject) => {
    const p = spawn('wrk', args)
    let out = ''
    p.stdout.on('data', (d) => {
      out += d
    })
    p.stderr.on('data', (d) => {
      out += d
    })
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${out}`))
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN)
      const lat = (p: string) => {
        const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m)`).exec(out)
        return m ? ms(m[1] as string, m[2] as string) : Number.NaN
      }
      const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
      const errors = errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
      resolve({ rps, p50Ms: lat('50'), p99Ms: lat('99'), errors, non2xx })
    })
  })
}

/** wrk script: POST the file's lines as bodies, in order, to `path` (wrapping around if the run outruns the file). */
export function postLinesScript(file: string, path: string): string {
  return `
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {}
for line in io.lines("${file}") do bodies[#bodies + 1] = line end
local n = 0
request = function()
  n = n + 1
  if n > #bodies then n = 1 end
  return wrk.format(nil, "${path}", nil, bodies[n])
end
`
}
