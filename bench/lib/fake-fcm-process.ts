// The fake FCM in its own process (counters only, `record: false`), so neither the engine nor a raw client shares a
// core with it. Both sides trust the same CA through PM_TEST_TLS_DIR, set before the fork. Stats over IPC.
import { type ChildProcess, fork } from 'node:child_process'
import { type ServiceAccount, startFakeFcm } from '../../test/fakes/fcm'
import { childEntry } from './pombo'

export interface FcmStats {
  requests: number
  delivered: number
  byStatus: Record<string, number>
  tokensIssued: number
  sessionsOpened: number
}

export interface FakeFcmProcess {
  url: string
  pid: number
  serviceAccount: ServiceAccount
  stats(): Promise<FcmStats>
  stop(): Promise<void>
}

type Msg = { kind: 'ready'; url: string; sa: ServiceAccount } | { kind: 'stats'; id: number; stats: FcmStats }

/** `delayMs`: every message is answered after this fixed delay (a provider's round trip), 0 at once. */
export async function startFakeFcmProcess(
  o: { maxConcurrentStreams?: number; project?: string; delayMs?: number } = {},
): Promise<FakeFcmProcess> {
  if (!process.env.PM_TEST_TLS_DIR) throw new Error('set PM_TEST_TLS_DIR first: the fake and its clients must share the CA')
  const entry = childEntry(__filename)
  const proc: ChildProcess = fork(
    entry.file,
    ['--fake-fcm-child', String(o.maxConcurrentStreams ?? 1000), o.project ?? 'pombo-bench', String(o.delayMs ?? 0)],
    {
      execArgv: entry.execArgv,
      env: process.env,
    },
  )
  const waiting = new Map<number, (s: FcmStats) => void>()
  let seq = 0
  const ready = new Promise<{ url: string; sa: ServiceAccount }>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`fake FCM process exited (${code})`)))
    proc.on('message', (m: Msg) => {
      if (m.kind === 'ready') resolve({ url: m.url, sa: m.sa })
      else waiting.get(m.id)?.(m.stats)
    })
  })
  const { url, sa } = await ready
  return {
    url,
    pid: proc.pid as number,
    serviceAccount: sa,
    stats() {
      const id = ++seq
      return new Promise((resolve) => {
        waiting.set(id, (s) => {
          waiting.delete(id)
          resolve(s)
        })
        proc.send({ kind: 'stats', id })
      })
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill()
      await exited
    },
  }
}

async function child(maxConcurrentStreams: number, project: string, delayMs: number): Promise<void> {
  const fcm = await startFakeFcm({
    record: false,
    maxConcurrentStreams,
    defaultBehaviour: delayMs > 0 ? `slow:${delayMs}` : 'ok',
  })
  process.on('message', (m: { kind: string; id: number }) => {
    if (m.kind === 'stats') process.send?.({ kind: 'stats', id: m.id, stats: fcm.stats() })
  })
  process.on('disconnect', () => process.exit(0))
  process.send?.({ kind: 'ready', url: fcm.url, sa: fcm.serviceAccount(project) })
}

const at = process.argv.indexOf('--fake-fcm-child')
if (at >= 0) void child(Number(process.argv[at + 1]), process.argv[at + 2] as string, Number(process.argv[at + 3] ?? 0))
