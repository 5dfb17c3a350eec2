// `pombo simulate` (the operator contract, "Device SDK and fleet"): flags checked, the run made, what it saw printed on stdout
// (text, or JSON with --json); the progress line goes to stderr. The first Ctrl-C ends the run early and still
// reports; a second one exits at once.
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { ROOT } from '../core/root'
import { simulatorTls } from '../simulators/tls'
import { parseSimulateArgs } from './args'
import { SimulateError } from './errors'
import { formatSummary, simulate } from './run'

export async function simulateCommand(cfg: Config, argv: string[]): Promise<void> {
  if (argv[0] === 'ca') return caCommand(argv.slice(1))
  const args = parseSimulateArgs(cfg, argv)
  const ctl = new AbortController()
  const onSignal = () => {
    if (ctl.signal.aborted) process.exit(130)
    process.stderr.write('\nstopping: answering what is owed, then the report (Ctrl-C again to quit now)\n')
    ctl.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    const summary = await simulate(cfg, args, { stdout: process.stdout, stderr: process.stderr, signal: ctl.signal })
    if (args.report) process.stderr.write(`report written to ${args.report.file}\n`)
    // The SDK instances and HTTP agents may keep sockets alive for a while; the run is over once stdout has it all
    process.stdout.write(args.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary), () => process.exit(0))
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** `pombo simulate ca [--tls-dir DIR]`: makes the simulators' certificate now and prints the CA's path, so a worker
 *  can be started with NODE_EXTRA_CA_CERTS before the first run (Node reads that variable only at start-up). */
function caCommand(argv: string[]): void {
  let dir: string
  try {
    const { values } = parseArgs({ args: argv, options: { 'tls-dir': { type: 'string' } } })
    dir = values['tls-dir'] ?? join(ROOT, '.data', 'simulators')
  } catch (err) {
    throw new SimulateError((err as Error).message.split('\n')[0] as string)
  }
  try {
    console.log(simulatorTls(dir).caFile)
  } catch (err) {
    throw new SimulateError(`simulators: ${(err as Error).message}`)
  }
}
