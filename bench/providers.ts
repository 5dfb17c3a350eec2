// `npx tsx bench/providers.ts [seconds] [concurrency] [rounds]`: FcmProvider against a raw node:http2 client, both posting to
// the fake FCM (in its own process, so the client's core is the one measured) in the same run, alternated twice.
// BENCH_PROVIDER_SENDS=each gives every provider request a send of its own (its own id and message object), as a
// stream of single-device sends reaches the provider; by default every request is a device of one send (fan-out).
// The raw client posts a prebuilt-per-request body with one access token over one session: the floor measured on this kind of
// machine (~8,300 requests/s per process). The provider pays for the message build, the pool and classification.
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import http2 from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FcmCredential } from '../src/providers/credentials'
import { FcmProvider } from '../src/providers/fcm'
import { H2Pool } from '../src/h2/pool'
import { startFakeFcm } from '../test/fakes/fcm'
import { testCa } from '../test/fakes/tls'
import { pushFor } from '../test/helpers/push'
import { childEntry } from './lib/pombo'
import { medianOf } from './lib/report'

interface Ready {
  url: string
  sa: FcmCredential
}

async function child(): Promise<void> {
  const fcm = await startFakeFcm({ record: false, maxConcurrentStreams: 1000 })
  process.send?.({ url: fcm.url, sa: fcm.serviceAccount('pombo-bench') })
}

async function forever(seconds: number, concurrency: number, one: (i: number) => Promise<boolean>): Promise<number> {
  const end = Date.now() + seconds * 1000
  let ok = 0
  let seq = 0
  const worker = async () => {
    while (Date.now() < end) if (await one(seq++)) ok++
  }
  const started = Date.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  return ok / ((Date.now() - started) / 1000)
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 4)
  const concurrency = Number(process.argv[3] ?? 256)
  const roundsN = Number(process.argv[4] ?? 3)
  process.env.PM_TEST_TLS_DIR ??= mkdtempSync(join(tmpdir(), 'pombo-bench-tls-'))
  const ca = testCa() // written to PM_TEST_TLS_DIR before the fake starts, so both sides share it
  const entry = childEntry(__filename)
  const proc: ChildProcess = fork(entry.file, ['--child'], { execArgv: entry.execArgv, env: process.env })
  const { url, sa } = await new Promise<Ready>((resolve) => proc.once('message', (m) => resolve(m as Ready)))
  try {
    const pool = new H2Pool({ ca, sessionsPerOrigin: 2 })
    const provider = new FcmProvider(sa, { baseUrl: url, pool })
    const push = pushFor({
      contents: { en: 'Hello', pt: 'Olá' },
      headings: { en: 'Bench' },
      data: { order: 42, tag: 'x' },
      url: 'https://example.com/o/42',
    })
    const t = await provider.auth.token()
    if (!('token' in t)) throw new Error(`no access token: ${JSON.stringify(t.outcome)}`)
    const raw = http2.connect(url, { ca: [ca] })
    const path = `/v1/projects/${sa.project_id}/messages:send`
    const rawOne = (i: number) =>
      new Promise<boolean>((resolve) => {
        const body = JSON.stringify({
          message: {
            token: `raw-${i}`,
            data: { order: '42', tag: 'x', pm_msg_id: push.sendId, pm_rcpt: push.proof },
            android: { priority: 'HIGH', ttl: '259200s', notification: { title: 'Bench', body: 'Hello' } },
          },
        })
        const s = raw.request({
          ':method': 'POST',
          ':path': path,
          authorization: `Bearer ${t.token}`,
          'content-type': 'application/json',
        })
        let status = 0
        s.on('response', (h) => {
          status = Number(h[':status'])
        })
        s.on('data', () => {})
        s.on('error', () => resolve(false))
        s.on('end', () => resolve(status === 200))
        s.end(body)
      })
    const each = process.env.BENCH_PROVIDER_SENDS === 'each'
    // A send of its own: a new id and a new message object (as each decoded send has), the same content.
    const pushOf = (i: number) =>
      each ? { ...push, sendId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, message: { ...push.message } } : push
    const providerOne = async (i: number) =>
      (await provider.send({ deviceId: `d${i}`, token: `prov-${i}`, deviceType: 1 }, pushOf(i))).kind === 'accepted'
    await forever(1, concurrency, rawOne) // warm-up
    await forever(1, concurrency, providerOne)
    const rows: string[] = []
    const raws: number[] = []
    const provs: number[] = []
    for (let round = 1; round <= roundsN; round++) {
      const r = await forever(seconds, concurrency, rawOne)
      const p = await forever(seconds, concurrency, providerOne)
      raws.push(r)
      provs.push(p)
      rows.push(`round ${round}: raw ${r.toFixed(0)}/s  provider ${p.toFixed(0)}/s  ratio ${(p / r).toFixed(2)}`)
    }
    console.log(
      `fake FCM in its own process; ${seconds} s per run; ${concurrency} in flight; ${each ? 'a send per request' : 'one send'}; client rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`,
    )
    for (const row of rows) console.log(row)
    console.log(
      `median: raw ${medianOf(raws).toFixed(0)}/s  provider ${medianOf(provs).toFixed(0)}/s  ratio ${(medianOf(provs) / medianOf(raws)).toFixed(2)}`,
    )
    raw.close()
    await pool.close()
  } finally {
    proc.kill()
  }
}

if (process.argv.includes('--child')) void child()
else
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err)
      process.exit(1)
    },
  )
