// `npm run bench -- <scenario>`: runs one named load scenario (or `all`) and prints figures beside same-run baselines.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { deliver } from './deliver'
import { grpcBench } from './grpc'
import { runChildrenCompiled } from './lib/pombo'
import { http } from './http'
import { inapp } from './inapp'
import { receipts } from './receipts'
import { register } from './register'
import { send } from './send'
import { sendE2e } from './send-e2e'
import { slices } from './slices'
import { webhooks } from './webhooks'

const SCENARIOS: Record<string, () => Promise<void>> = {
  http,
  register,
  send,
  'send-e2e': sendE2e,
  deliver,
  slices,
  receipts,
  webhooks,
  inapp,
  grpc: grpcBench,
}

async function main(): Promise<void> {
  // The service under load is the compiled one (dist/), as the image runs it: built fresh, so it is this checkout.
  execFileSync(process.execPath, [join(__dirname, '..', 'scripts', 'build.mjs')], { stdio: 'inherit' })
  runChildrenCompiled()
  const name = process.argv[2] ?? 'all'
  const names = name === 'all' ? Object.keys(SCENARIOS) : [name]
  for (const n of names) {
    const run = SCENARIOS[n]
    if (!run) {
      console.error(`unknown scenario "${n}"; known: ${Object.keys(SCENARIOS).join(', ')}, all`)
      process.exit(2)
    }
    await run()
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
