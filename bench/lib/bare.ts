// Starts the bare uWebSockets.js baseline server (bench/bare-uws.ts) as a child process.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { childEntry, ROOT, waitFor } from './pombo'

export interface Bare {
  url: string
  stop(): Promise<void>
}

export async function startBare(port: number, env: Record<string, string> = {}): Promise<Bare> {
  const entry = childEntry(join(ROOT, 'bench', 'bare-uws.ts'))
  const child = spawn(process.execPath, [...entry.execArgv, entry.file, String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ...env },
  })
  const url = `http://127.0.0.1:${port}`
  await waitFor(`${url}/`)
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    },
  }
}
