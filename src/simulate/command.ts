// `pombo simulate` (CONTRACT.md "Device SDK and fleet"): flags checked, the run made, what it saw printed on stdout
// (text, or JSON with --json); the progress line goes to stderr. The first Ctrl-C ends the run early and still
// reports; a second one exits at once.
import type { Config } from '../config'
import { parseSimulateArgs } from './args'
import { formatSummary, simulate } from './run'

export async function simulateCommand(cfg: Config, argv: string[]): Promise<void> {
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
    process.stdout.write(args.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary))
    if (args.report) process.stderr.write(`report written to ${args.report.file}\n`)
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  // The SDK instances and HTTP agents may keep sockets alive for a while; the run is over.
  process.exit(0)
}
