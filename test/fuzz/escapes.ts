// Records exceptions that escape a uWS callback and promise rejections nobody handles. Today the service installs
// no handler for either, so in production each one ends the process (every role with it); a test that wants to
// go on after one, and say which request caused it, listens here instead of letting it kill the test process.
export interface Escape {
  kind: 'uncaughtException' | 'unhandledRejection'
  error: string
}

export class EscapeRecorder {
  readonly seen: Escape[] = []
  readonly #onException = (err: unknown): void => {
    this.seen.push({ kind: 'uncaughtException', error: describe(err) })
  }
  readonly #onRejection = (err: unknown): void => {
    this.seen.push({ kind: 'unhandledRejection', error: describe(err) })
  }

  constructor() {
    process.on('uncaughtException', this.#onException)
    process.on('unhandledRejection', this.#onRejection)
  }

  /** What was recorded since the last call, and forget it. */
  take(): Escape[] {
    return this.seen.splice(0)
  }

  stop(): void {
    process.off('uncaughtException', this.#onException)
    process.off('unhandledRejection', this.#onRejection)
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`
  return String(err)
}
