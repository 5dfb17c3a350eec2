// The behaviour DSL shared by the provider simulators: what one answers to each request for one device token.
//   'ok'                      every request accepted
//   'unavailable*2, ok'       two 503s, then accepted (the last step repeats forever)
//   'quota:30'                429 with Retry-After: 30 (FCM); the number is the step's argument
//   'slow:800'                accepted after 800 ms (same as 'ok~800'); '~ms' delays any step: 'internal~200'
//   'drop' | 'drop-session'   the stream is reset / the whole connection destroyed, no answer
//   'hang'                    never answered (until close): for client timeouts
// A behaviour may also be an array of steps, as strings or { name, arg?, delayMs? }.
export interface Step {
  name: string
  arg?: number
  delayMs?: number
}
export type Behaviour = string | Step | ReadonlyArray<string | Step>

/** Steps every simulator understands; each adds its own error names. */
export const COMMON_STEPS = ['ok', 'slow', 'drop', 'drop-session', 'hang'] as const

const STEP = /^([a-z][a-z-]*)(?::(\d+))?(?:~(\d+))?(?:\*(\d+))?$/
const MAX_REPEAT = 100_000

/** Expands a behaviour into its list of steps; throws on a name the simulator does not know (a typo). */
export function parseBehaviour(b: Behaviour, known: ReadonlySet<string>): Step[] {
  const parts: Array<string | Step> = typeof b === 'string' ? b.split(',') : Array.isArray(b) ? [...b] : [b as Step]
  const steps: Step[] = []
  for (const part of parts) {
    if (typeof part !== 'string') {
      if (!known.has(part.name)) throw new Error(`unknown behaviour step '${part.name}' (known: ${[...known].join(', ')})`)
      steps.push(normalise(part))
      continue
    }
    const m = STEP.exec(part.trim())
    if (!m) throw new Error(`unreadable behaviour step '${part.trim()}' (form: name[:n][~delayMs][*count])`)
    const [, name, arg, delay, count] = m as unknown as [string, string, string?, string?, string?]
    if (!known.has(name)) throw new Error(`unknown behaviour step '${name}' (known: ${[...known].join(', ')})`)
    const step = normalise({
      name,
      arg: arg === undefined ? undefined : Number(arg),
      delayMs: delay === undefined ? undefined : Number(delay),
    })
    const n = count === undefined ? 1 : Number(count)
    if (n < 1 || n > MAX_REPEAT) throw new Error(`repeat count ${n} out of range 1..${MAX_REPEAT}`)
    for (let i = 0; i < n; i++) steps.push(step)
  }
  if (steps.length === 0) throw new Error('empty behaviour')
  return steps
}

/** 'slow:ms' is 'ok' answered after ms. */
function normalise(s: Step): Step {
  if (s.name === 'slow') return { name: 'ok', delayMs: s.arg ?? s.delayMs ?? 1_000 }
  return s
}

interface Cursor {
  steps: Step[]
  next: number
}

/** Per-token sequences: exact tokens first, then patterns (each matching token runs its own copy), then the default. */
export class Script {
  #exact = new Map<string, Cursor>()
  #patterns: Array<{ re: RegExp; steps: Step[] }> = []
  #default: Step[]
  #known: ReadonlySet<string>

  constructor(known: Iterable<string>, fallback: Behaviour = 'ok') {
    this.#known = new Set(known)
    this.#default = parseBehaviour(fallback, this.#known)
  }

  /** Replaces the behaviour of one token (its sequence starts again) or of every token matching a pattern. */
  set(token: string | RegExp, b: Behaviour): void {
    const steps = parseBehaviour(b, this.#known)
    if (typeof token === 'string') {
      this.#exact.set(token, { steps, next: 0 })
      return
    }
    this.#patterns.unshift({ re: token, steps }) // the latest pattern wins
    for (const [t] of this.#exact) if (token.test(t)) this.#exact.delete(t)
  }

  setDefault(b: Behaviour): void {
    this.#default = parseBehaviour(b, this.#known)
  }

  /** The step for this request; consumes it. */
  next(token: string): Step {
    let c = this.#exact.get(token)
    if (!c) {
      const steps = this.#patterns.find((x) => x.re.test(token))?.steps ?? this.#default
      if (steps.length === 1) return steps[0] as Step // no cursor needed: keeps a 200,000-token bench small
      c = { steps, next: 0 }
      this.#exact.set(token, c)
    }
    const step = c.steps[Math.min(c.next, c.steps.length - 1)] as Step
    c.next++
    return step
  }

  reset(): void {
    this.#exact.clear()
    this.#patterns = []
  }
}
