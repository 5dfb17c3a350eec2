// Polls a condition until it holds: for what a test can only observe from outside (another process, a stream).

/** Polls `f` every 50 ms until it answers a truthy value, and answers that value; throws after `timeoutMs`. */
export async function until<T>(what: string, f: () => T | Promise<T>, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await f()
    if (v) return v as NonNullable<T>
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
