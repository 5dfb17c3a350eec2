// `npm run fuzz -- --model-test NAME`: one of the model-based test files (test/helpers/model.ts) for as long as
// asked. The file runs as `npm test` runs it (scripts/test.mjs: the same Postgres and Redis, its own schema and Redis
// prefix), with tap's timeout off and the pass given as PM_MODEL_* variables.
import { spawn } from 'node:child_process'
import { join } from 'node:path'

export const MODEL_TESTS: Readonly<Record<string, string>> = {
  receipts: 'test/integration/receipts-model.test.ts',
  webhooks: 'test/integration/webhooks-model.test.ts',
}

export interface ModelTestOptions {
  seed: number
  runs?: string
  minutes?: string
  commands?: string
  path?: string
  shrink?: boolean
}

/** Runs the file; answers its exit code (2: no such model). */
export function runModelTest(name: string, o: ModelTestOptions): Promise<number> {
  const file = MODEL_TESTS[name]
  if (!file) {
    console.error(`--model-test: expected one of ${Object.keys(MODEL_TESTS).join(', ')}, got "${name}"`)
    return Promise.resolve(2)
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PM_MODEL_SEED: String(o.seed),
    // Without --runs or --minutes, a pass long enough to mean something (a few minutes on a laptop).
    PM_MODEL_RUNS: o.runs ?? (o.minutes === undefined ? '100' : ''),
    PM_MODEL_MINUTES: o.minutes ?? '',
    PM_MODEL_COMMANDS: o.commands ?? process.env.PM_MODEL_COMMANDS ?? '',
    PM_MODEL_PATH: o.path ?? '',
    PM_MODEL_SHRINK: o.shrink ? '1' : '',
  }
  console.log(`model test ${name}: seed ${o.seed} (${file})`)
  const root = join(__dirname, '..', '..')
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'scripts', 'test.mjs'), '--timeout=0', file], {
      cwd: root,
      stdio: 'inherit',
      env,
    })
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}
