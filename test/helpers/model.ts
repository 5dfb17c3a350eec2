// Model-based tests (fast-check's `fc.commands` + `fc.asyncModelRun`) against a real service: random sequences of
// commands, each checked against a small model after every step. The size and seed of a pass come from the
// environment, so `npm test` runs a short fixed-seed pass and `npm run fuzz -- --receipts-model` (or
// `--webhooks-model`) a long one (test/fuzz/README.md):
//   PM_MODEL_SEED      seed (default: the file's fixed one)
//   PM_MODEL_RUNS      sequences to run (default: the file's short pass)
//   PM_MODEL_MINUTES   stop starting new sequences after this long (runs then defaults to unbounded)
//   PM_MODEL_COMMANDS  at most this many commands per sequence
//   PM_MODEL_PATH      replay one failing sequence (with its seed), as printed on failure
//   PM_MODEL_REPLAY    with PM_MODEL_PATH, the commands of a shrunk failure (fast-check's replayPath), as printed
//   PM_MODEL_SHRINK=1  shrink a failure to a shortest sequence (slow: every try is a new sequence on the service)
import fc from 'fast-check'
import { parseServiceAccount } from '../../src/credentials/validate'
import type { App, startDelivery } from './delivery'
import { FakeClock } from './service'

/** A clock that runs with real time, ahead of it by what the test moved it: the delivery engine keeps running
 *  (its pacing and polling need time to pass) while the test jumps hours or days at once. `ms` is the lead. */
export class SkewedClock extends FakeClock {
  constructor() {
    super(0)
  }
  override now = (): number => Date.now() + this.ms
}

export interface ModelPass {
  seed: number
  numRuns: number
  timeLimitMs?: number
  maxCommands: number
  path?: string
  /** fast-check's `replayPath` of `fc.commands`: the shrunk commands of a failure (with `path`). */
  replayPath?: string
  shrink: boolean
  /** The file's own fixed pass (no PM_MODEL_* variable set): the one `npm test` runs. */
  fixed: boolean
}

function num(name: string): number | undefined {
  const v = process.env[name]
  if (v === undefined || v === '') return undefined
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}: expected a non-negative number, got "${v}"`)
  return n
}

/** The pass asked for by the environment, over the file's short fixed-seed defaults. */
export function modelPass(defaults: { seed: number; runs: number; commands: number }): ModelPass {
  const minutes = num('PM_MODEL_MINUTES')
  const runs = num('PM_MODEL_RUNS')
  return {
    seed: num('PM_MODEL_SEED') ?? defaults.seed,
    numRuns: runs ?? (minutes !== undefined ? Number.MAX_SAFE_INTEGER : defaults.runs),
    timeLimitMs: minutes !== undefined ? minutes * 60_000 : undefined,
    maxCommands: num('PM_MODEL_COMMANDS') ?? defaults.commands,
    path: process.env.PM_MODEL_PATH || undefined,
    replayPath: process.env.PM_MODEL_REPLAY || undefined,
    shrink: process.env.PM_MODEL_SHRINK === '1',
    fixed: Object.keys(process.env).every((k) => !k.startsWith('PM_MODEL_') || process.env[k] === ''),
  }
}

interface Tap {
  ok(value: unknown, msg: string): unknown
  fail(msg: string): unknown
}

/**
 * Runs the property for the pass; a failure fails the test with the seed, the path and the command line that
 * replays it (printed to stderr as well, so a long fuzz run shows it at once). Answers whether every sequence held.
 */
export async function checkModel<T>(t: Tap, file: string, pass: ModelPass, prop: fc.IAsyncProperty<T>): Promise<boolean> {
  const started = Date.now()
  const details = await fc.check(prop, {
    seed: pass.seed,
    numRuns: pass.numRuns,
    path: pass.path,
    endOnFailure: !pass.shrink,
    ...(pass.timeLimitMs !== undefined ? { interruptAfterTimeLimit: pass.timeLimitMs, markInterruptAsFailure: false } : {}),
  })
  const secs = ((Date.now() - started) / 1000).toFixed(1)
  if (details.failed) {
    // A shrunk failure's commands are fast-check's replayPath ("" or ":" when nothing was shrunk).
    const commands = /replayPath="([^"]*)"/.exec(fc.stringify(details.counterexample))?.[1]?.replace(/^:$/, '')
    const replay =
      `PM_MODEL_SEED=${details.seed} PM_MODEL_COMMANDS=${pass.maxCommands} PM_MODEL_PATH=${details.counterexamplePath}` +
      `${commands ? ` PM_MODEL_REPLAY='${commands}'` : ''} npm test -- --timeout=0 ${file}`
    const err = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
    const msg = `model failed (seed ${details.seed}, path ${details.counterexamplePath}): ${err}\nreplay: ${replay}\n${fc.defaultReportMessage(details)}`
    console.error(msg)
    t.fail(msg)
    return false
  }
  t.ok(details.numRuns > 0, `seed ${pass.seed}: ${details.numRuns} sequences of up to ${pass.maxCommands} commands in ${secs} s`)
  return true
}

/**
 * What a pass exercised (outcomes by name, counted by the file) against what its fixed pass must keep reaching: a
 * change to the commands or their weights can silently stop a seed from reaching `tardio` or an abandon. Longer
 * passes only print what they reached.
 */
export function checkReached(
  t: Tap & { comment(m: string): unknown },
  pass: ModelPass,
  seen: Map<string, number>,
  required: string[],
): void {
  t.comment(
    [...seen]
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join('; '),
  )
  if (!pass.fixed) return
  for (const want of required) {
    if (![...seen.keys()].some((k) => k.startsWith(want)))
      t.fail(`the fixed pass no longer reaches "${want}": choose another seed`)
  }
}

type Delivery = Awaited<ReturnType<typeof startDelivery>>
type Fcm = ReturnType<typeof parseServiceAccount>

/** One FCM service account for every app of a pass: making an RSA key per app costs about a second on a busy
 *  machine, and blocks the event loop meanwhile. */
export function fcmAccount(d: Delivery): Fcm {
  return parseServiceAccount(JSON.stringify(d.fcm.serviceAccount('pombo-model')))
}

/** An app of one model sequence with its devices on the fake FCM: sends really delivered, and the proofs the
 *  devices got (read from what the fake FCM accepted, as a device would). */
export async function modelApp(d: Delivery, app: App, fcm: Fcm, devices: number, tag: string) {
  await d.creds.save(app.id, 'fcm', fcm.credential, fcm.meta)
  const tokens = Array.from({ length: devices }, (_, i) => `${tag}-${i}`)
  const players = await Promise.all(tokens.map((token) => d.device(app, token)))
  return {
    app,
    players,
    /** Sends to these devices and waits for the send to close; answers its id and when it was due (epoch ms). */
    async send(ids: string[]): Promise<{ id: string; dueMs: number }> {
      const id = await d.send(app, { include_player_ids: ids })
      const row = await d.closed(id)
      return { id, dueMs: new Date(row.queued_at as Date).getTime() }
    },
    /** The pm_rcpt the device got with the send, or undefined when the fake FCM delivered it none. */
    proof(sendId: string, player: string): string | undefined {
      const token = tokens[players.indexOf(player)]
      const m = d.fcm.delivered.find((r) => r.target === token && r.body.message.data.pm_msg_id === sendId)
      return m?.body.message.data.pm_rcpt
    },
  }
}

export type ModelApp = Awaited<ReturnType<typeof modelApp>>
