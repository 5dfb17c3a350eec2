// The progress line of a run, on stderr: rewritten in place on a terminal, one line every few seconds otherwise
// (a log file or CI output keeps a readable history instead of a wall of carriage returns).
import type { Writable } from 'node:stream'

export class Progress {
  #timer: NodeJS.Timeout | null = null
  #last = ''
  readonly #tty: boolean

  constructor(
    readonly out: Writable & { isTTY?: boolean },
    readonly render: () => string,
  ) {
    this.#tty = out.isTTY === true
  }

  start(): void {
    if (this.#timer) return
    this.#timer = setInterval(() => this.draw(), this.#tty ? 250 : 5_000)
    this.#timer.unref()
  }

  draw(): void {
    const line = this.render()
    if (this.#tty) this.out.write(`\r\x1b[2K${line}`)
    else if (line !== this.#last) this.out.write(`${line}\n`)
    this.#last = line
  }

  /** A message on its own line, the progress line drawn again under it. */
  note(msg: string): void {
    if (this.#tty) this.out.write(`\r\x1b[2K${msg}\n`)
    else this.out.write(`${msg}\n`)
    if (this.#timer && this.#tty) this.draw()
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    this.draw()
    if (this.#tty) this.out.write('\n')
  }
}
