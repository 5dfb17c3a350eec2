// `npm run bench -- h2client`: our HTTP/2 client (src/h2/, the providers' default) against node:http2 behind the same
// interface (what PM_PROVIDER_HTTP2=node selects), both posting the same FCM-sized request to one local fake HTTP/2
// server in its own process (so only the clients share this one), in the same run, alternating rounds. Figures:
// requests/s with BENCH_H2_CONCURRENCY (256) in flight on one session, and this process's CPU time per request.
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createSecureServer } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { H2Pool } from '../src/h2/pool'
import { testCa, testTls } from '../test/fakes/tls'
import { record } from './lib/figures'
import { childEntry } from './lib/pombo'
import { medianOf } from './lib/report'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 3)
const CONCURRENCY = Number(process.env.BENCH_H2_CONCURRENCY ?? 256)

/** What FCM answers an accepted message with. */
const ANSWER = JSON.stringify({ name: 'projects/pombo-bench/messages/0:1700000000000000%31bd1c9bf9fd7ecd' })

/** The fake server: every POST answered 200 with FCM's answer once its body has arrived. */
async function child(): Promise<void> {
  const { key, cert } = testTls()
  const srv = createSecureServer({ key, cert, settings: { maxConcurrentStreams: 1000 } })
  srv.on('stream', (stream) => {
    stream.on('data', () => {})
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/json; charset=UTF-8' })
      stream.end(ANSWER)
    })
    stream.on('error', () => {})
  })
  srv.on('session', (s) => s.on('error', () => {}))
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  process.send?.({ url: `https://localhost:${(srv.address() as AddressInfo).port}` })
}

interface Run {
  rps: number
  cpuUsPerRequest: number
}

/** `concurrency` loops posting for `seconds`: answered requests per second, and this process's CPU per request. */
async function drive(pool: H2Pool, url: string, seconds: number): Promise<Run> {
  // As the FCM provider sends: one headers object per access token, a body of its own per device.
  const headers = {
    ':method': 'POST',
    ':path': '/v1/projects/pombo-bench/messages:send',
    authorization: `Bearer ya29.${'x'.repeat(180)}`,
    'content-type': 'application/json',
  }
  const end = performance.now() + seconds * 1000
  let ok = 0
  let seq = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const loop = async () => {
    while (performance.now() < end) {
      const body = `{"message":{"token":"bench-${seq++}","data":{"pm_msg_id":"00000000-0000-4000-8000-000000000001","pm_rcpt":"p${'q'.repeat(31)}"},"android":{"priority":"HIGH","ttl":"259200s","notification":{"title":"Bench","body":"Olá"}}}}`
      const r = await pool.request(url, headers, body)
      if (r.status === 200) ok++
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, loop))
  const elapsed = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { rps: ok / elapsed, cpuUsPerRequest: (cpu.user + cpu.system) / Math.max(1, ok) }
}

export async function h2client(): Promise<void> {
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa() // written to PM_TEST_TLS_DIR before the server starts, so both sides share it
  const entry = childEntry(__filename)
  const proc: ChildProcess = fork(entry.file, ['--h2client-child'], { execArgv: entry.execArgv, env: process.env })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      proc.once('message', (m) => resolve((m as { url: string }).url))
      proc.once('exit', (code) => reject(new Error(`the fake HTTP/2 server exited (${code})`)))
    })
    // One session each, as a worker's pool carries one provider's traffic until it is ¾ full.
    const ours = new H2Pool({ ca, client: 'pombo', sessionsPerOrigin: 1 })
    const node = new H2Pool({ ca, client: 'node', sessionsPerOrigin: 1 })
    try {
      await drive(node, url, 1) // warm-up: connections, JIT
      await drive(ours, url, 1)
      const n: Run[] = []
      const o: Run[] = []
      console.log(`h2client: ${CONCURRENCY} in flight, ${DURATION_S} s per run, ${ROUNDS} alternating rounds, medians`)
      for (let i = 0; i < ROUNDS; i++) {
        n.push(await drive(node, url, DURATION_S))
        o.push(await drive(ours, url, DURATION_S))
        const [a, b] = [n.at(-1) as Run, o.at(-1) as Run]
        console.log(
          `round ${i + 1}: node:http2 ${a.rps.toFixed(0)}/s ${a.cpuUsPerRequest.toFixed(1)} µs CPU/request | ours ${b.rps.toFixed(0)}/s ${b.cpuUsPerRequest.toFixed(1)} µs CPU/request`,
        )
      }
      const rps = { node: medianOf(n.map((r) => r.rps)), ours: medianOf(o.map((r) => r.rps)) }
      const cpu = { node: medianOf(n.map((r) => r.cpuUsPerRequest)), ours: medianOf(o.map((r) => r.cpuUsPerRequest)) }
      console.log(
        `median: node:http2 ${rps.node.toFixed(0)}/s ${cpu.node.toFixed(1)} µs | ours ${rps.ours.toFixed(0)}/s ${cpu.ours.toFixed(1)} µs | ratio ${(rps.ours / rps.node).toFixed(2)} (rate), ${(cpu.ours / cpu.node).toFixed(2)} (CPU)`,
      )
      const baseline = 'node:http2 behind the same interface (PM_PROVIDER_HTTP2=node)'
      record({
        name: `requests/s, ${CONCURRENCY} in flight on one session`,
        pombo: rps.ours,
        unit: 'req/s',
        baseline,
        base: rps.node,
      })
      record({ name: 'client CPU per request', pombo: cpu.ours, unit: 'µs', baseline, base: cpu.node })
    } finally {
      await ours.close()
      await node.close()
    }
  } finally {
    proc.kill()
  }
}

if (process.argv.includes('--h2client-child')) void child()
