// Log lines for a person at a terminal: `12:04:05 INFO  message  key=value …`, coloured by level, one line each.
// pino still builds every record as JSON (the same redaction, the same fields); this destination only reprints
// it, so a pipe or a file gets the JSON lines unchanged (PM_LOG_FORMAT, docs/configuration.md).
import type { DestinationStream } from 'pino'

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '\x1b[90m'],
  20: ['DEBUG', '\x1b[36m'],
  30: ['INFO ', '\x1b[32m'],
  40: ['WARN ', '\x1b[33m'],
  50: ['ERROR', '\x1b[31m'],
  60: ['FATAL', '\x1b[35m'],
}
const RESET = '\x1b[0m'
const DIM = '\x1b[2m'
/** Fields every record carries that say nothing to a person reading one process's terminal. */
const QUIET = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'svc'])
/** A nested value longer than this is cut: the terminal is for reading, the JSON format keeps everything. */
const VALUE_MAX = 160

function value(v: unknown): string {
  if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')) v = v.join(',')
  const s = typeof v === 'string' ? (/[\s="]/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)
  if (s === undefined) return String(v)
  return s.length > VALUE_MAX ? `${s.slice(0, VALUE_MAX - 1)}…` : s
}

/** One JSON record as a short line; text that is not a JSON object passes through as it came. */
export function prettyLine(json: string, color: boolean): string {
  let rec: Record<string, unknown>
  try {
    rec = JSON.parse(json)
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`
  }
  if (rec === null || typeof rec !== 'object') return `${json}\n`
  const [name, tint] = LEVELS[Number(rec.level)] ?? ['LOG  ', '']
  const time = typeof rec.time === 'number' ? new Date(rec.time).toISOString().slice(11, 19) : '--:--:--'
  const err = rec.err as { message?: string; stack?: string } | undefined
  const fields: string[] = []
  const lines: string[] = []
  for (const [k, v] of Object.entries(rec)) {
    if (QUIET.has(k) || v === undefined) continue
    // `lines` is a list the writer meant as lines of their own (the configuration summary of `pombo serve`).
    if (k === 'lines' && Array.isArray(v)) lines.push(...v.map((l) => `           ${String(l)}`))
    else if (k === 'err' && err) fields.push(`err=${value(err.message ?? '')}`)
    else fields.push(`${k}=${value(v)}`)
  }
  const paint = (c: string, s: string) => (color && c ? `${c}${s}${RESET}` : s)
  const head = `${paint(DIM, time)} ${paint(tint, name)} ${String(rec.msg ?? '')}`
  const tail = fields.length ? `  ${paint(DIM, fields.join(' '))}` : ''
  return `${[`${head}${tail}`, ...lines].join('\n')}\n`
}

/** A pino destination that writes each record as prettyLine to `out` (a TTY, usually). */
export function prettyDestination(out: NodeJS.WritableStream, color: boolean): DestinationStream {
  return {
    write(msg: string) {
      out.write(prettyLine(msg, color))
    },
  }
}
