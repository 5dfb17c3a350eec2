// Runs the model of a send's life (sends-model.ts) with fast-check's model-based commands: each run starts a fresh
// deployment (world.ts), runs a random sequence of commands checking the invariants after each, waits for the due
// sends to close, checks again, and tears the deployment down. Used by the seeded run of `npm test`
// (test/integration/sends-model.test.ts) and by `npm run fuzz -- --sends-model` (test/fuzz/run.ts).
//
// A failure names its seed and path: `npm run fuzz -- --sends-model --seed S --path P --commands C` runs the same
// commands again. Real time passes in a run (stream ids are Redis' clock), so a replay repeats the sequence, not
// every interleaving.
import fc from 'fast-check'
import { settle } from './invariants'
import { commandArbitrary, initialModel } from './sends-model'
import { World } from './world'

export interface ModelRunOptions {
  seed: number
  numRuns: number
  /** Most commands in one run (fast-check draws each run's length up to this). */
  maxCommands: number
  /** Replay one run (fast-check's counterexample path). */
  path?: string
  /** After a failure, let fast-check shrink the sequence (every try is a real run: slow). */
  shrink?: boolean
  timeLimitMs?: number
  /** Told after each run. */
  onRun?: (r: RunInfo) => void
}

export interface RunInfo {
  run: number
  ms: number
  error: unknown
  /** Every command with its time, and what it made. */
  timeline: readonly string[]
  commands: number
  sends: number
  crashes: number
  scheduledAfterRead: number
}

export interface ModelReport {
  seed: number
  runs: number
  ms: number
  /** What broke, the commands, the replay line and the run's timeline; null when every run held. */
  failure: string | null
}

export function replayLine(seed: number, path: string | undefined, maxCommands: number): string {
  return `npm run fuzz -- --sends-model --seed ${seed}${path ? ` --path ${path}` : ''} --commands ${maxCommands}`
}

export async function runSendsModel(o: ModelRunOptions): Promise<ModelReport> {
  const started = Date.now()
  let runs = 0
  let timeline: readonly string[] = []
  let logs: readonly string[] = []
  const property = fc.asyncProperty(
    fc.commands([commandArbitrary], { maxCommands: o.maxCommands, size: 'max' }),
    async (cmds) => {
      const runStarted = Date.now()
      const teardowns: Array<() => unknown> = []
      const model = initialModel()
      let world: World | undefined
      let error: unknown = null
      try {
        world = await World.start({ teardown: (f) => teardowns.push(f) })
        const real = world
        await fc.asyncModelRun(() => ({ model, real }), cmds)
        world.note(`${model.sends.length} sends made; settling`)
        await settle(model, world)
      } catch (err) {
        error = err
        throw err
      } finally {
        timeline = world ? [...world.timeline] : []
        if (error && world) logs = world.logs()
        for (const f of teardowns.reverse()) await f()
        o.onRun?.({
          run: runs++,
          ms: Date.now() - runStarted,
          error,
          timeline,
          commands: model.commands,
          sends: model.sends.length,
          crashes: model.crashes,
          scheduledAfterRead: model.scheduledAfterRead,
        })
      }
    },
  )
  const details = await fc.check(property, {
    seed: o.seed,
    numRuns: o.path ? 1 : o.numRuns, // a path replays one run
    path: o.path,
    endOnFailure: !o.shrink,
    interruptAfterTimeLimit: o.timeLimitMs,
    markInterruptAsFailure: false,
  })
  let failure: string | null = null
  if (details.failed) {
    const path = details.counterexamplePath ?? undefined
    failure = [
      `seed ${o.seed}, path ${path}: ${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
      `replay: ${replayLine(o.seed, path, o.maxCommands)}`,
      `commands: ${details.counterexample ? String(details.counterexample[0]) : '(none)'}`,
      'timeline:',
      ...timeline.map((l) => `  ${l}`),
      'logs (warnings, errors, sweeps, partitions):',
      ...logs.map((l) => `  ${l}`),
    ].join('\n')
  }
  return { seed: o.seed, runs, ms: Date.now() - started, failure }
}
